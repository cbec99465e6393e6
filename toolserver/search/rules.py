"""A caller's search rules, from its table in the policy file (toolserver/policy.py):

    indexes = ["python-docs"]        # search indexes; absent: all the server serves
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from toolserver.errors import PermissionDenied
from toolserver.policy import names


@dataclass(frozen=True)
class SearchRules:
    KEYS: ClassVar[tuple[str, ...]] = ("indexes",)

    indexes: frozenset[str] | None = None        # None: every index the server serves

    @classmethod
    def from_table(cls, table: dict[str, Any], where: str, granted: bool) -> SearchRules:
        return cls(indexes=names(table, "indexes", where))

    def allows(self, index: str) -> bool:
        return self.indexes is None or index in self.indexes

    def require_index(self, index: str, caller: str) -> None:
        if not self.allows(index):
            raise PermissionDenied(f"search index {index!r} is not allowed for caller {caller!r}")
