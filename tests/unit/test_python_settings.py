"""The python tool's settings: its workers, their slots, preloads and import profiles."""

import sys

import pytest

from toolcontract.v1 import toolserver_pb2 as pb
from toolserver.config import RUNTIME_INTERPRETER, ConfigError
from toolserver.python import settings as python_settings
from toolserver.python.settings import ImportProfile
from toolserver.settings import load_settings

SMALL = {"sandbox.slots": 64, "sessions.max_sessions": 4}  # a server with few sessions

def extra_slots(overrides: dict) -> int:
    settings = load_settings(**{**SMALL, **overrides})
    return settings.python.extra_worker_slots(settings)


def test_slots_must_cover_workers():
    with pytest.raises(ConfigError, match="sandbox.slots"):
        load_settings(**SMALL, **{"python.workers": 30})
    with pytest.raises(ConfigError, match="sandbox.slots"):
        load_settings(**SMALL, **{"python.workers": 20, "python.slim_workers": 20, "python.scientific_workers": 20})
    with pytest.raises(ConfigError, match="sessions 256"):
        load_settings(**{"sandbox.slots": 64})
    python = load_settings(**SMALL, **{"python.workers": 59, "python.slim": False, "python.scientific": False}).python
    assert python.slim_count() == 0 and python.scientific_count() == 0


def test_worker_slots_count_every_worker_class_and_the_self_test():
    assert load_settings(**{"python.workers": 3, "python.slim_workers": 2,
                            "python.scientific_workers": 1}).needed_slots() == 7
    assert load_settings(**{"python.workers": 3, "python.slim": False}).needed_slots() == 7
    assert load_settings(**{"python.workers": 3, "python.slim": False, "python.scientific": False}).needed_slots() == 4


def test_pools_grow_onto_the_slots_nothing_else_takes(monkeypatch):
    monkeypatch.setattr(python_settings, "machine_memory_mb", lambda: 24 * 1024)
    settings = load_settings(None, **SMALL, **{"python.workers": 4, "cpp.workers": 3})  # 13: 12 workers and the self-test
    # minus the sessions, the Lean REPLs, the C++ workers, the bash one and the program tool's 2
    assert settings.python.extra_worker_slots(settings) == 64 - 13 - 4 - 2 - 3 - 1 - 2
    assert extra_slots({"python.workers": 4, "lean.enabled": False, "cpp.enabled": False,
                        "bash.enabled": False, "program.enabled": False}) == 64 - 13 - 4
    assert extra_slots({"python.workers": 4, "python.max_workers": 20}) == 20 - 12
    assert extra_slots({"python.workers": 4, "python.max_workers": 8}) == 0
    monkeypatch.setattr(python_settings, "machine_memory_mb", lambda: 4 * 1024)  # 16 workers at 256 MB each
    assert extra_slots({"python.workers": 4}) == 16 - 12


def test_workers_default_to_two_per_cpu_and_slim_ones_to_as_many(monkeypatch):
    monkeypatch.setattr(python_settings, "available_cpus", lambda: 3)
    python = load_settings().python
    assert python.warm_count() == 6 and python.slim_count() == 6 and python.scientific_count() == 6
    monkeypatch.setattr(python_settings, "available_cpus", lambda: 64)
    assert load_settings().python.warm_count() == python_settings.MAX_AUTO_WORKERS
    python = load_settings(**{"python.workers": 3, "python.slim_workers": 1}).python
    assert python.warm_count() == 3 and python.slim_count() == 1
    with pytest.raises(ConfigError, match="python.slim_workers must not be negative"):
        load_settings(**{"python.slim_workers": -1})


def test_slim_workers_preload_standard_modules_only():
    with pytest.raises(ConfigError, match="outside the standard library: sympy"):
        load_settings(**{"python.slim_preload": ["math", "sympy"]})


def test_scientific_workers_preload_the_warm_ones_preload_and_the_data_stack():
    python = load_settings().python
    assert set(python.preload) <= set(python.scientific_preload)
    assert {"pandas", "sklearn", "scipy", "matplotlib.pyplot"} <= set(python.scientific_preload)
    assert "pandas" not in python.preload


def test_import_profiles_default_to_open_guarded_and_strict():
    python = load_settings().python
    assert python.import_profile == "open" and python.allow_list("open") is None
    assert python.import_profiles["open"] == ImportProfile()  # nothing refused: the jail is the boundary
    guarded = python.import_profiles["guarded"]
    assert python.allow_list("guarded") is None and "ctypes" in guarded.denied_imports and guarded.refuse_actions
    assert "math" in python.allow_list("strict") and "inspect" not in python.allow_list("strict")
    assert "socket" not in python.import_profiles["strict"].denied_imports


def test_import_profiles_are_added_from_the_config(tmp_path):
    path = tmp_path / "c.toml"
    path.write_text('[python]\nimport_profile = "tenant"\n[python.import_profiles.tenant]\nimports = ["math", "json"]\n'
                    'refuse_actions = true\n')
    python = load_settings(path).python
    assert python.allow_list("tenant") == ("math", "json") and python.allow_list("open") is None
    tenant = python.import_profiles["tenant"]
    assert tenant.refuse_actions and tenant.denied_imports == () and "strict" in python.import_profiles


@pytest.mark.parametrize("toml, message", [
    ('[python]\nimport_profile = "nowhere"\n', "not one of python.import_profiles"),
    ('[python.import_profiles.bad]\nimports = ["math", "ctypes"]\ndenied_imports = ["ctypes"]\n',
     "allows denied module"),
    ('[python.import_profiles.bad]\nimports = []\n', "is empty"),
    ('[python.import_profiles.bad]\nimports = ["*", "math"]\n', "stands alone"),
    ('[python.import_profiles.bad]\nrefuse = true\n', "unknown setting in \\[python.import_profiles.bad\\]: refuse"),
    ('[python.import_profiles]\nbad = ["math"]\n', "must hold tables"),
    ('[python]\nimport_guard = false\n', "unknown setting"),
    ('[sandbox]\nmemory_cgroup = "sometimes"\n', "memory_cgroup"),
])
def test_bad_import_settings_are_refused(tmp_path, toml, message):
    path = tmp_path / "c.toml"
    path.write_text(toml)
    with pytest.raises(ConfigError, match=message):
        load_settings(path)


def test_the_default_interpreter_is_the_calls_own_runtime():
    python = load_settings().python
    assert python.interpreter == RUNTIME_INTERPRETER and not python.interpreter.startswith(sys.prefix)


def test_session_memory_follows_the_request_the_server_and_the_caller():
    from toolserver.errors import PermissionDenied
    from toolserver.policy import CallerPolicy
    from toolserver.python.executor import session_memory_mb

    settings = load_settings()
    capped = CallerPolicy(name="capped", tools=frozenset({"python"}), max_memory_mb=256)
    assert session_memory_mb(pb.Limits(), settings) == settings.sessions.memory_mb
    assert session_memory_mb(pb.Limits(memory_mb=300), settings) == 300
    assert session_memory_mb(pb.Limits(memory_mb=10**6), settings) == settings.sessions.memory_mb
    assert session_memory_mb(pb.Limits(), settings, capped) == 256
    with pytest.raises(PermissionDenied):
        session_memory_mb(pb.Limits(memory_mb=512), settings, capped)


def test_each_tool_names_the_interpreter_its_jails_run():
    from toolserver.jails import self_test_spec
    from toolserver.python.jails import python_jails

    settings = load_settings(**{"python.interpreter": "/usr/bin/python3", "python.huge_pages": False,
                                "python.start_timeout_s": 7.0, "sessions.start_timeout_s": 9.0})
    jails = python_jails(settings)
    assert (jails.worker.interpreter, jails.worker.huge_pages, jails.worker.start_timeout_s) == (
        "/usr/bin/python3", False, 7.0)
    assert jails.session.interpreter == jails.scientific_worker.interpreter == "/usr/bin/python3"
    assert jails.session.start_timeout_s == 9.0 and jails.slim_worker.reroute_outside_stdlib
    # python's interpreter is python's alone: the self-test and the cpp and bash jails keep theirs
    spec = self_test_spec(settings)
    assert spec.interpreter == settings.sandbox.interpreter == RUNTIME_INTERPRETER
    assert spec.guard is None and spec.preload == ()  # the jail alone, as the self-test proves it
    assert settings.cpp.runtime().interpreter == settings.bash.runtime().interpreter == RUNTIME_INTERPRETER
    own = load_settings(**{"cpp.interpreter": "/usr/bin/python3.11", "bash.interpreter": "/usr/local/bin/python3"})
    assert (own.cpp.runtime().interpreter, own.bash.runtime().interpreter, own.python.interpreter) == (
        "/usr/bin/python3.11", "/usr/local/bin/python3", RUNTIME_INTERPRETER)


@pytest.mark.parametrize("name", ["sandbox.interpreter", "python.interpreter", "cpp.interpreter", "bash.interpreter"])
@pytest.mark.parametrize("path", ["/root/venv/bin/python", "/tmp/venv/bin/python", "python3"])
def test_an_interpreter_the_jail_cannot_see_is_refused(name, path):
    with pytest.raises(ConfigError, match=name.replace(".", r"\.")):
        load_settings(**{name: path})
