"""A jail's root as data (sandbox/root.py): which host directories a jail empties, which it
shows whole, which hold only named paths, on a host tree made for the test."""

from __future__ import annotations

from pathlib import Path

import pytest

from sandbox.root import ABSENT, JailRoot, expected_names, interpreter_paths, root_arguments, root_layout
from toolserver.errors import ConfigError
from toolserver.jails import jail_root
from toolserver.settings import load_settings


@pytest.fixture
def host(tmp_path: Path) -> Path:
    """A host tree: system directories, a runtime in /opt beside another checkout, a home,
    /etc with a secret beside what calls need, a file and a link in /."""
    for directory in ("usr/bin", "usr/lib", "usr/local/bin", "usr/src", "etc/ssl", "opt/runtime/bin", "opt/other",
                      "home/alice", "var/tmp", "var/lib/db", "srv", "proc", "sys", "dev", "tmp"):
        (tmp_path / directory).mkdir(parents=True)
    for file in ("etc/passwd", "etc/shadow", "etc/java-17-openjdk", "home/alice/notes"):
        (tmp_path / file).write_text("x")
    (tmp_path / ".dockerenv").write_text("")
    (tmp_path / "bin").symlink_to("usr/bin")
    return tmp_path


def test_every_top_directory_is_shown_whole_emptied_or_holds_only_the_named_paths(host):
    root = JailRoot(("/usr/bin", "/usr/lib", "/etc/passwd", "/etc/java-*", "/etc/ssl", "/opt/runtime", "/var/tmp",
                     "/missing"))
    layout = root_layout(root, host)
    assert layout["/usr/bin"] is None and layout["/usr/lib"] is None  # whole
    assert layout["/usr/local"] == () and layout["/usr/src"] == () and layout["/home"] == ()  # emptied
    assert layout["/etc"] == ("/etc/passwd", "/etc/java-17-openjdk", "/etc/ssl")  # a glob, expanded
    assert layout["/opt"] == ("/opt/runtime",) and layout["/var"] == ("/var/tmp",)
    assert "/missing" not in str(layout)
    assert "/proc" not in layout and "/tmp" not in layout and "/bin" not in layout and "/usr" not in layout


def test_the_firejail_arguments_whitelist_the_named_paths_empty_the_rest_and_blacklist_files(host):
    root = JailRoot(("/usr/bin", "/etc/passwd", "/opt/runtime"))
    arguments = root_arguments(root, host)
    assert "--whitelist=/etc/passwd" in arguments and "--whitelist=/opt/runtime" in arguments
    assert f"--whitelist=/home/{ABSENT}" in arguments and f"--whitelist=/usr/local/{ABSENT}" in arguments
    assert "--blacklist=/.dockerenv" in arguments
    assert not [argument for argument in arguments if "shadow" in argument or "/opt/other" in argument]


def test_what_a_jail_may_list_counts_its_home_and_firejails_own(host):
    root = JailRoot(("/var/tmp", "/etc/passwd"))
    expected = expected_names(root, "/var/lib/toolserver/scratch/tsbox3", host)
    assert expected["/etc"] == ["passwd"] and expected["/srv"] == [] and expected["/var"] == ["lib", "tmp"]


def test_a_virtual_environment_is_shown_whole_with_its_base(tmp_path):
    venv = tmp_path / "runtime"
    (venv / "bin").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text("home = /usr/local/python3.12/bin\ninclude-system-site-packages = false\n")
    assert interpreter_paths(str(venv / "bin" / "python")) == (str(venv), "/usr/local/python3.12/bin",
                                                               "/usr/local/python3.12/lib")
    assert interpreter_paths("/usr/bin/python3") == ("/usr/bin", "/usr/lib")  # never /usr whole


def test_the_servers_root_holds_what_its_tools_declare():
    settings = load_settings(None, **{"sandbox.jail_paths": ["/opt/go-1.23"]})
    shown = jail_root(settings).paths
    assert "/opt/go-1.23" in shown and "/opt/toolserver/runtime" in shown  # the operator's; the calls' runtime
    assert "/var/lib/toolserver/program" in shown and "/opt/toolserver/typescript" in shown  # the program tool's
    with pytest.raises(ConfigError, match="absolute"):
        load_settings(None, **{"sandbox.jail_paths": ["opt/go"]})
