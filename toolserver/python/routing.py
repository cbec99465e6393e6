"""Which zygote runs a stateless python call: a slim one or a warm one.

A slim zygote preloads only standard modules, so its fork and exit cost less; a warm
one has the scientific stack (`python.preload`) imported. A slim one also lacks the
standard modules that load a denied one (subprocess, `sandbox.guard.LOAD_BEFORE_REMOVAL`).
A static look at the code decides: it runs slim when every module it imports by name is
one a slim zygote offers and it does not mention a module the warm zygotes preload by
name (which catches `__import__("sympy")`). The look is cheap and may err either way
without changing a result: a slim zygote ends a call that reaches for anything else
(REROUTE) and it runs again on a warm one, from the start. It does not parse the code: a
syntax error runs where the rest would and is reported there.
"""

from __future__ import annotations

import re
import sys
from typing import Iterable

from sandbox.guard import LOAD_BEFORE_REMOVAL

SLIM_MODULES = (sys.stdlib_module_names | {"__main__"}) - set(LOAD_BEFORE_REMOVAL)
IMPORTS = re.compile(r"\bfrom\s+([.\w]+)\s+import\b|\bimport\s+([^;\n#()]+)")


def imported_modules(code: str) -> set[str]:
    """Top-level names of the modules `import` and `from ... import` statements name
    (relative imports left out: a call's code is no package)."""
    names = set()
    for match in IMPORTS.finditer(code):
        source, listed = match.groups()
        if source is not None:
            names.add(source)
            continue
        for part in listed.split(","):
            words = part.split()
            if words:
                names.add(words[0])
    return {name.partition(".")[0] for name in names if name and not name.startswith(".")}


class CallRouter:
    """Decides slim or warm for a call's code, given the warm zygotes' preload."""

    def __init__(self, warm_preload: Iterable[str]) -> None:
        warm_only = sorted({name.partition(".")[0] for name in warm_preload} - SLIM_MODULES)
        self.mentions_warm_module = re.compile(r"\b(?:" + "|".join(map(re.escape, warm_only)) + r")\b") \
            if warm_only else None

    def runs_slim(self, code: str) -> bool:
        if self.mentions_warm_module is not None and self.mentions_warm_module.search(code):
            return False
        return "import" not in code or imported_modules(code) <= SLIM_MODULES
