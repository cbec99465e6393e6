"""What an operator writes, read with every tool's part: the server's settings (the core
sections of toolserver/config.py and each tool's own) and the callers' policies (the
core keys of toolserver/policy.py and each tool's rules)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from toolserver import config, policy
from toolserver.config import CoreSettings
from toolserver.tools import RULES, SECTIONS

Settings: type[CoreSettings] = config.compose_settings(SECTIONS, __name__)


def load_settings(path: str | os.PathLike[str] | None = None, **overrides: Any) -> CoreSettings:
    """The embedded defaults, overridden by the TOML file at path, then by overrides
    (dotted names, e.g. {"server.port": 0}, from CLI flags); raises ConfigError."""
    return config.load_settings(Settings, path, **overrides)


def load_policies(path: str | Path | None) -> policy.Policies:
    """The callers' policies in the file at path; no path: the open policy. Raises ConfigError."""
    return policy.load_policies(path, RULES)
