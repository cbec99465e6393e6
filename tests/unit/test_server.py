from pathlib import Path

import pytest

from toolserver.errors import ConfigError
from toolserver.jails import PROJECT_PACKAGES, project_paths
from toolserver.python.jails import zygote_spec
from toolserver.server import advertised_address, load_caller_policies
from toolserver.settings import load_settings

ROOT = Path(__file__).resolve().parents[2]


def test_a_checkout_hides_its_whole_tree_from_jails():
    assert project_paths() == [str(ROOT)]
    assert str(ROOT) in zygote_spec(load_settings()).jail.hidden_paths


def test_an_installed_server_hides_every_package_of_the_project():
    import tomllib

    include = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]["find"]["include"]
    assert sorted(PROJECT_PACKAGES) == sorted(name.rstrip("*") for name in include)


def test_advertised_address_prefers_the_configured_one():
    assert advertised_address(load_settings(**{"server.advertise_address": "10.0.0.7:50051"}), 1234) == "10.0.0.7:50051"
    assert advertised_address(load_settings(), 4321) == "127.0.0.1:4321"
    host, _, port = advertised_address(load_settings(**{"server.host": "0.0.0.0",
                                                        "auth.allow_open_bind": True}), 5555).rpartition(":")
    assert port == "5555" and host not in ("0.0.0.0", "")


def test_an_open_http_front_beyond_loopback_is_refused():
    with pytest.raises(ConfigError, match="refusing to serve HTTP on 0.0.0.0"):
        load_caller_policies(load_settings(**{"http.port": 8080, "http.host": "0.0.0.0"}))
    load_caller_policies(load_settings(**{"http.port": 8080}))  # loopback: fine
    load_caller_policies(load_settings(**{"http.port": 8080, "http.host": "0.0.0.0", "auth.allow_open_bind": True}))
