"""The program tool's languages as data: reading and checking a language file, the
programs a compile's and a run's process run made from it, what installs the toolchains,
and the [program] settings that choose among them."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from sandbox.calls import PROGRAM_FILE
from sandbox.inside.zygote import STARTED_AHEAD
from toolserver.errors import ConfigError
from toolserver.program.ahead import build_ahead
from toolserver.program.languages import BUILT_IN, Language, language_from, load_languages, toolchain_version
from toolserver.program.launchers import ARTIFACT, compile_program, compile_step, run_program, start_ahead
from toolserver.program.launchers import STARTED_AHEAD as LAUNCHERS_STARTED_AHEAD
from toolserver.program.toolchains import install_commands, installed, missing
from toolserver.settings import load_settings

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "data" / "languages"
GO = {"name": "go", "source_file": "main.go", "version": ["/usr/bin/go", "version"],
      "compile": ["/usr/bin/go", "build", "-o", "out/main", "main.go"], "run": ["out/main"],
      "memory": "cgroup", "address_space_mb": 16384}


def test_the_tools_own_languages_are_read_and_name_their_toolchains():
    languages = load_languages()
    assert sorted(languages) == ["go", "java", "javascript", "rust", "typescript"]
    assert "nodejs" in languages["javascript"].aliases and not languages["javascript"].compiles
    assert languages["java"].memory == "cgroup" and languages["rust"].memory == "address-space"
    assert languages["typescript"].npm and languages["typescript"].npm_prefix == "/opt/toolserver/typescript"
    assert all(language.path.startswith(str(BUILT_IN)) for language in languages.values())


def test_a_directory_of_more_languages_adds_and_replaces():
    languages = load_languages(str(FIXTURES))
    assert {"c", "kotlin"} <= set(languages) and languages["c"].path == str(FIXTURES / "c.toml")


@pytest.mark.parametrize("change, message", [
    ({"colour": "blue"}, "unknown key"),
    ({"run": None}, "missing run"),
    ({"compile": ["go", "build"]}, "compile\\[0\\] must be an absolute path"),
    ({"run": ["main"]}, "run\\[0\\] must be an absolute path or a file under out/"),
    ({"compile": [], "run": ["out/main"]}, "only a compile writes"),
    ({"memory": "ulimit"}, "memory must be one of"),
    ({"address_space_mb": 0}, "needs address_space_mb"),
    ({"source_file": "../main.go"}, "plain file name"),
    ({"name": "Go Lang"}, "lower-case"),
    ({"aliases": [3]}, "must hold strings"),
    ({"compile_timeout_ms": True}, "must be a int"),
    ({"npm": ["typescript"], "npm_prefix": "/root/ts"}, "npm_prefix"),
    ({"source_file": "{main}.go"}, "needs a compile, a main_pattern"),
    ({"main_pattern": "package \\w+", "main_default": "main"}, "main_pattern with a group"),
    ({"main_pattern": "(unclosed", "main_default": "main"}, "main_pattern is not a regular expression"),
    ({"main_pattern": ["package (\\w+)", "package"], "main_default": "main"}, "main_pattern with a group"),
    ({"main_pattern": ["package (\\w+)", 3], "main_default": "main"}, "main_pattern must hold strings"),
    ({"main_pattern": "package (\\w+)", "main_default": "../x"}, "main_default of letters"),
])
def test_a_bad_language_file_is_refused_naming_the_file(change, message):
    values = {key: value for key, value in {**GO, **change}.items() if value is not None}
    with pytest.raises(ConfigError, match=f"language file x.toml: .*{message}"):
        language_from(values, "x.toml")


AHEAD = {"source": "c.toml", "build": ["/bin/sh", "-c", "cp \"$1\" \"$0\"/built", "{dir}", "{source}"],
         "run": ["/bin/sh", "{dir}/built"]}


@pytest.mark.parametrize("ahead, message", [
    ("java", "ahead must be a table"),
    ({"source": "c.toml"}, "\\[ahead\\] needs exactly source, build, run"),
    ({**AHEAD, "colour": "blue"}, "\\[ahead\\] needs exactly"),
    ({**AHEAD, "source": "Nope.java"}, "ahead.source must name a file beside the language file"),
    ({**AHEAD, "source": "../languages/c.toml"}, "ahead.source must name a file beside"),
    ({**AHEAD, "run": ["sh", "x"]}, "ahead.run\\[0\\] must be an absolute path"),
    ({**AHEAD, "build": ["/bin/true"]}, "ahead.build must write into {dir}"),
    ({**AHEAD, "run": ["/bin/sh", 3]}, "ahead.run must hold strings"),
])
def test_a_bad_ahead_table_is_refused_naming_the_file(ahead, message):
    path = str(FIXTURES / "x.toml")
    with pytest.raises(ConfigError, match=f"language file {path}: {message}"):
        language_from({**GO, "ahead": ahead}, path)


def test_javas_jvm_is_started_ahead_with_the_runs_flags_and_handed_its_main():
    java = load_languages()["java"]
    assert java.ahead is not None and Path(java.ahead.source).is_file() and "/usr/bin/javac" in java.toolchain()
    ahead = start_ahead(java, "/var/lib/toolserver/program/java-x", 256)
    assert ahead is not None and ahead.directories == ("out",) and dict(ahead.environment) == {"TMPDIR": "{cwd}"}
    assert ahead.argv[-3:] == ("-cp", "out:/var/lib/toolserver/program/java-x", "ToolserverJavaStart")
    run_flags = [flag.replace("{memory_mb}", "256") for flag in java.run if flag.startswith("-X")]
    assert [flag for flag in ahead.argv if flag.startswith("-X")] == run_flags and "-Xmx256m" in ahead.argv
    launcher = run_program(java, 256)
    assert f"globals().pop({STARTED_AHEAD!r}, None)" in launcher and "ahead(main + '\\n')" in launcher
    assert LAUNCHERS_STARTED_AHEAD == STARTED_AHEAD  # the zygote leaves the hand-over where launchers look
    assert start_ahead(load_languages()["go"], "/d", 256) is None and "ahead" not in run_program(load_languages()["go"], 256)


def test_an_ahead_file_is_built_once_into_a_directory_of_its_own(tmp_path, caplog):
    language = language_from({**GO, "ahead": AHEAD}, str(FIXTURES / "x.toml"))
    built = build_ahead(language, str(tmp_path / "ahead"), "go1.19")
    assert built and Path(built).parent == tmp_path / "ahead" and Path(built).name.startswith("go-")
    assert (Path(built) / "built").read_text() == (FIXTURES / "c.toml").read_text()
    assert oct(Path(built).stat().st_mode & 0o777) == "0o755" and not list((tmp_path / "ahead").glob(".go-*"))
    (Path(built) / "built").write_text("kept")
    assert build_ahead(language, str(tmp_path / "ahead"), "go1.19") == built
    assert (Path(built) / "built").read_text() == "kept"  # built once
    assert build_ahead(language, str(tmp_path / "ahead"), "go1.20") not in ("", built)  # another toolchain's
    failing = language_from({**GO, "ahead": {**AHEAD, "build": ["/bin/sh", "-c", "echo no >&2; exit 1", "{dir}"]}},
                            str(FIXTURES / "x.toml"))
    assert build_ahead(failing, str(tmp_path / "ahead"), "go1.19") == ""
    assert "building go's [ahead] failed" in caplog.text
    assert build_ahead(load_languages()["go"], str(tmp_path / "ahead"), "go1.19") == ""


def test_two_languages_may_not_claim_one_name(tmp_path):
    (tmp_path / "golang.toml").write_text('name = "golang"\nsource_file = "a.go"\nversion = ["/bin/true"]\n'
                                          'run = ["/bin/true"]\n')
    with pytest.raises(ConfigError, match="'golang' is claimed by"):
        load_languages(str(tmp_path))


def test_the_settings_name_only_described_languages():
    assert load_settings(None, **{"program.languages": ["java", "go"]}).program.languages == ("java", "go")
    with pytest.raises(ConfigError, match="program.languages names cobol, which no language file describes"):
        load_settings(None, **{"program.languages": ["cobol"]})
    with pytest.raises(ConfigError, match="must be an absolute path"):
        load_settings(None, **{"program.languages_dir": "languages"})
    assert load_settings(None, **{"program.languages_dir": str(FIXTURES),
                                  "program.languages": ["c"]}).program.languages == ("c",)
    with pytest.raises(ConfigError, match="program.ahead_dir must be an absolute path outside /root and /tmp"):
        load_settings(None, **{"program.ahead_dir": "/tmp/ahead"})


def test_a_version_probe_that_fails_says_nothing():
    assert toolchain_version(("/bin/sh", "-c", "echo 'v1.2'; echo more")) == "v1.2"
    assert toolchain_version(("/bin/sh", "-c", "echo found; exit 1")) == ""
    assert toolchain_version(("/nonexistent/compiler", "--version")) == ""
    absent = language_from({**GO, "version": ["/nonexistent/go", "version"]}, "x.toml")
    assert missing([absent], every=False) == [absent] and missing([absent], every=True) == [absent]


def test_the_toolchains_install_what_dpkg_lacks_then_the_npm_packages():
    languages = load_languages(str(FIXTURES))
    wanted = [languages["kotlin"], languages["typescript"], languages["javascript"]]
    commands = install_commands(wanted, has_npm=False)
    apt = commands[1]
    assert commands[0] == ["apt-get", "update", "-qq"] and apt[:3] == ["env", "DEBIAN_FRONTEND=noninteractive", "apt-get"]
    assert "kotlin" in apt and "npm" in apt  # this host has neither; one nodejs, whichever languages name it
    assert apt.count("nodejs") == (0 if installed("nodejs") else 1)
    assert commands[2:] == [["mkdir", "-p", "/opt/toolserver/typescript"],
                            ["npm", "install", "-q", "--no-audit", "--no-fund", "--prefix", "/opt/toolserver/typescript",
                             "typescript@5.6.3", "@types/node@20"]]
    assert "npm" not in install_commands(wanted, has_npm=True)[1]
    javascript_only = install_commands([languages["javascript"]], has_npm=False)  # no npm package: no npm
    if installed("nodejs"):
        assert javascript_only == []
    else:
        assert javascript_only[1][-1] == "nodejs" and len(javascript_only) == 2


def test_the_toolchains_command_names_what_it_would_run_and_refuses_an_unknown_language():
    done = subprocess.run([sys.executable, "-m", "toolserver.program.toolchains", "--all", "--dry-run", "go", "rust"],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr
    assert all(line.startswith("toolchains: ") for line in done.stdout.splitlines())
    refused = subprocess.run([sys.executable, "-m", "toolserver.program.toolchains", "cobol"],
                             capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert refused.returncode == 2 and "unknown language cobol" in refused.stderr


def launch(program: str, directory: Path) -> subprocess.CompletedProcess:
    (directory / PROGRAM_FILE).write_text(program)
    return subprocess.run([sys.executable, PROGRAM_FILE], cwd=directory, capture_output=True, text=True, timeout=60)


def test_a_compile_packs_what_the_compiler_wrote_and_a_run_unpacks_it(tmp_path):
    """The launchers outside the jail, with sh as the compiler: its messages on stdout
    become stderr, out/ comes back packed, and the run execs what it unpacked."""
    language = Language(name="shell", source_file="main.sh", version=("/bin/sh", "-c", "true"),
                        compile=("/bin/sh", "-c", "echo compiling; cp main.sh out/main; mkdir out/lib; "
                                                  "echo data > out/lib/x; echo $GREETING >&2"),
                        run=("out/main", "{memory_mb}"), environment={"GREETING": "in {cwd}"})
    build = tmp_path / "build"
    build.mkdir()
    (build / "main.sh").write_text("#!/bin/sh\necho ran with $1 MB; cat lib/x 2>/dev/null || cat out/lib/x\n")
    compiled = launch(compile_program(language), build)
    assert compiled.returncode == 0 and compiled.stdout == ""
    assert compiled.stderr == f"compiling\nin {build}\n"
    with zipfile.ZipFile(build / ARTIFACT) as packed:
        assert sorted(packed.namelist()) == ["out/lib/x", "out/main"]
    assert compile_step(language).artifact == ARTIFACT and compile_step(language).source_file == "main.sh"
    runs = tmp_path / "run"
    runs.mkdir()
    (runs / ARTIFACT).write_bytes((build / ARTIFACT).read_bytes())
    ran = launch(run_program(language, 64), runs)
    assert (ran.returncode, ran.stdout) == (0, "ran with 64 MB\ndata\n"), ran.stderr
    assert sorted(os.listdir(runs)) == ["out"]  # the launcher and the archive are gone


@pytest.mark.parametrize("source, main", [("#!/bin/sh\n# program hello_2\necho ran $0\n", "hello_2"),
                                          ("#!/bin/sh\necho ran $0\n", "Main"),  # none named: main_default
                                          ("#!/bin/sh\n# program ../../etc\necho ran $0\n", "Main"),
                                          ("#!/bin/sh\n# else other\n# program first\necho ran $0\n", "first"),
                                          ("#!/bin/sh\n# else other\necho ran $0\n", "other")])
def test_a_source_that_names_its_main_is_compiled_and_run_under_that_name(tmp_path, source, main):
    """Java's way (a public class lives in the file of its name), with sh as the compiler:
    the compile finds {main} in the source (by the first of its patterns that finds one), renames the source to its file, and the run
    execs it by that name; a name the pattern does not find, or may not be, is main_default."""
    language = language_from({"name": "shell", "source_file": "{main}.sh", "main_pattern": [r"^# program (\S+)",
                                                                                           r"^# else (\S+)"],
                              "main_default": "Main", "version": ["/bin/sh", "-c", "true"],
                              "compile": ["/bin/sh", "-c", "cp \"$0\" out/\"${0%.sh}\"", "{main}.sh"],
                              "run": ["out/{main}"]}, "x.toml")
    assert compile_step(language).source_file == "Main.sh"
    build = tmp_path / "build"
    build.mkdir()
    (build / "Main.sh").write_text(source)
    compiled = launch(compile_program(language), build)
    assert compiled.returncode == 0, compiled.stderr
    assert not (build / "Main.sh").exists() or main == "Main"
    runs = tmp_path / "run"
    runs.mkdir()
    (runs / ARTIFACT).write_bytes((build / ARTIFACT).read_bytes())
    ran = launch(run_program(language, 64), runs)
    assert (ran.returncode, ran.stdout) == (0, f"ran out/{main}\n"), ran.stderr


def test_a_failed_compile_exits_with_the_compilers_status_and_packs_nothing(tmp_path):
    language = language_from({**GO, "compile": ["/bin/sh", "-c", "echo 'main.go:1: nope' >&2; exit 2"]}, "x.toml")
    failed = launch(compile_program(language), tmp_path)
    assert failed.returncode == 2 and "main.go:1: nope" in failed.stderr and not (tmp_path / ARTIFACT).exists()


def test_only_address_space_languages_cap_it_at_the_memory_limit():
    rust = load_languages()["rust"]
    java = load_languages()["java"]
    assert "RLIMIT_AS" in run_program(rust, 256) and "RLIMIT_AS" not in run_program(java, 256)
    assert "-Xmx256m" in run_program(java, 256)
