"""A caller's python rules, from its table in the policy file (toolserver/policy.py):

    max_sessions = 2                 # open Python sessions; absent or 0: no cap of its own
    import_profile = "strict"        # of the server's python.import_profiles; absent: its default
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from toolserver.config import CoreSettings
from toolserver.errors import ConfigError
from toolserver.policy import count
from toolserver.python.settings import PythonSettings


@dataclass(frozen=True)
class PythonRules:
    KEYS: ClassVar[tuple[str, ...]] = ("max_sessions", "import_profile")

    max_sessions: int = 0             # 0: no cap of its own
    import_profile: str = ""          # the guard's import profile; "": the server's default

    @classmethod
    def from_table(cls, table: dict[str, Any], where: str, granted: bool) -> PythonRules:
        max_sessions = count(table, "max_sessions", where)
        if max_sessions and not granted:
            raise ConfigError(f"{where}.max_sessions is set but the python tool is not granted")
        profile = table.get("import_profile", "")
        if not isinstance(profile, str):
            raise ConfigError(f"{where}.import_profile must be a string")
        return cls(max_sessions=max_sessions, import_profile=profile)

    def validate_with(self, settings: CoreSettings, where: str) -> None:
        profiles = settings.section(PythonSettings).import_profiles
        if self.import_profile and self.import_profile not in profiles:
            raise ConfigError(f"{where}.import_profile {self.import_profile!r} is not one of the "
                              f"server's python.import_profiles ({', '.join(sorted(profiles))})")
