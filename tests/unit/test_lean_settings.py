"""LeanSettings: safe defaults, and every bad value named by its field."""

from __future__ import annotations

import pytest

from toolserver.errors import ConfigError
from toolserver.lean.settings import LeanSettings


def test_defaults_are_valid():
    LeanSettings().validate()


@pytest.mark.parametrize("changes, field", [
    ({"max_repls": 0}, "lean.max_repls"),
    ({"memory_mb": -1}, "lean.memory_mb"),
    ({"start_timeout_s": 0.0}, "lean.start_timeout_s"),
    ({"recycle_after": -1}, "lean.recycle_after"),
    ({"default_timeout_ms": 10_000, "max_timeout_ms": 5_000}, "lean.default_timeout_ms"),
    ({"project_dir": "relative/dir"}, "lean.project_dir"),
    ({"env": ("NOEQUALS",)}, "lean.env"),
    ({"prewarm_headers": ("import Foo;",)}, "lean.prewarm_headers"),
    ({"prewarm_headers": ("import A", "import B", "import C")}, "lean.prewarm_headers"),
    ({"allowed_headers": ("import A",), "prewarm_headers": ("import B",)}, "lean.prewarm_headers"),
])
def test_bad_values_name_their_field(changes, field):
    with pytest.raises(ConfigError, match=field):
        LeanSettings(**changes).validate()


def test_env_entries_become_a_mapping():
    assert LeanSettings(env=("ELAN_HOME=/opt/elan", "A=b=c")).environment() == {"ELAN_HOME": "/opt/elan", "A": "b=c"}
