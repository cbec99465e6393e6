import pytest

from toolcontract.v1 import toolserver_pb2 as pb
from toolserver.config import ConfigError
from toolserver.grants import effective_limits
from toolserver.settings import load_settings


def test_defaults_are_valid_and_loopback():
    settings = load_settings()
    assert settings.server.host == "127.0.0.1" and settings.server.port == 50051


def test_unknown_key_is_rejected(tmp_path):
    path = tmp_path / "c.toml"
    path.write_text("[python]\nworkerz = 3\n")
    with pytest.raises(ConfigError, match="workerz"):
        load_settings(path)


def test_wrong_type_is_rejected(tmp_path):
    path = tmp_path / "c.toml"
    path.write_text('[python]\nworkers = "many"\n')
    with pytest.raises(ConfigError, match="python.workers must be an integer"):
        load_settings(path)


def test_contradicting_limits_are_rejected():
    with pytest.raises(ConfigError, match="defaults.timeout_ms"):
        load_settings(**{"defaults.timeout_ms": 50_000, "limits.timeout_ms": 1000})


def test_request_limits_are_capped_and_defaulted():
    settings = load_settings()
    limits = effective_limits(pb.Limits(timeout_ms=10**9, memory_mb=0, max_output_bytes=10), settings)
    assert limits.timeout_ms == settings.limits.timeout_ms
    assert limits.memory_mb == settings.defaults.memory_mb
    assert limits.max_output_bytes == 10


def test_package_turns_grpc_fork_support_off_before_grpc_loads():
    import subprocess
    import sys

    probe = ("import sys, os\nimport toolserver\n"
             "print(os.environ['GRPC_ENABLE_FORK_SUPPORT'], 'grpc' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True,
                         env={"PATH": "/usr/bin:/bin"}).stdout.split()
    assert out[0] == "false"


def test_every_tool_section_is_a_tool_section_and_a_loose_one_is_refused():
    from dataclasses import dataclass

    from toolserver.config import ToolSection, compose_settings
    from toolserver.tools import SECTIONS

    assert all(issubclass(kind, ToolSection) for kind in SECTIONS.values())

    @dataclass(frozen=True)
    class Loose:
        size: int = 1

    with pytest.raises(ValueError, match="loose do not derive from ToolSection"):
        compose_settings({"loose": Loose}, __name__)


def test_a_section_that_takes_no_slots_claims_none():
    settings = load_settings()
    assert "search" not in settings.slot_claims()  # its hooks are ToolSection's: no slots
    assert settings.slot_claims()["python"].needed > 0


def test_a_tool_reads_its_section_by_its_type():
    from toolserver.config import ToolSection
    from toolserver.python.settings import PythonSettings

    settings = load_settings(**{"python.workers": 3})
    assert settings.section(PythonSettings).workers == 3

    class Unknown(ToolSection):
        pass

    with pytest.raises(KeyError, match="no Unknown section"):
        settings.section(Unknown)
