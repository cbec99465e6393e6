"""Which zygote runs a stateless python call: a slim, a warm or a scientific one.

A slim zygote preloads only standard modules, so its fork and exit cost least; a warm
one has the math stack (`python.preload`) imported; a scientific one the data stack too
(`python.scientific_preload`), and its bigger heap makes each fork and exit dearer. A
slim one also lacks the standard modules that load a denied one (subprocess,
`sandbox.guard.LOAD_BEFORE_REMOVAL`). A static look at the code decides: it runs on a
scientific zygote when it mentions a module only those preload by name; else slim when
every module it imports by name is one a slim zygote offers and it does not mention a
module the warm zygotes preload (which catches `__import__("sympy")`); else warm. The look
is cheap and may err either way without changing a result: a slim zygote ends a call
that reaches for anything else (REROUTE, naming the module) and a warm one a call that
reaches for the data stack (where scientific zygotes run), and it runs again, from the
start, where that module is preloaded (`route_handed_back`): code whose imports its text
hides (base64 in `exec`, a computed `__import__`) runs warm too. It does not parse the code: a syntax error runs
where the rest would and is reported there.
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


SLIM, WARM, SCIENTIFIC = "slim", "warm", "scientific"
# The classes whose workers may run a call of each class, its own first: a warm or
# scientific worker offers every module a slim one does, and each the other's on import.
RUNS_ON = {SLIM: (SLIM, WARM, SCIENTIFIC), WARM: (WARM, SCIENTIFIC), SCIENTIFIC: (SCIENTIFIC, WARM)}


def mentions(modules: Iterable[str]) -> re.Pattern[str] | None:
    """A pattern that finds any of modules named as a word, or None for none."""
    names = sorted(modules)
    return re.compile(r"\b(?:" + "|".join(map(re.escape, names)) + r")\b") if names else None


def top_levels(modules: Iterable[str]) -> set[str]:
    return {name.partition(".")[0] for name in modules}


def scientific_only(warm_preload: Iterable[str], scientific_preload: Iterable[str]) -> set[str]:
    """The top-level modules only the scientific zygotes preload: a warm zygote hands back a
    call at the import of one of them."""
    return top_levels(scientific_preload) - top_levels(warm_preload) - SLIM_MODULES


class CallRouter:
    """Decides slim, warm or scientific for a call's code, given the zygotes' preloads."""

    def __init__(self, warm_preload: Iterable[str], scientific_preload: Iterable[str] = ()) -> None:
        warm = top_levels(warm_preload) - SLIM_MODULES
        self.scientific_modules = scientific_only(warm_preload, scientific_preload)
        self.mentions_warm_module = mentions(warm)
        self.mentions_scientific_module = mentions(self.scientific_modules)

    def route_handed_back(self, module: str) -> str:
        """Where a call handed back for module (REROUTE) runs next: on a scientific zygote
        for the data stack, else on a warm one."""
        return SCIENTIFIC if module.partition(".")[0] in self.scientific_modules else WARM

    def route(self, code: str) -> str:
        if self.mentions_scientific_module is not None and self.mentions_scientific_module.search(code):
            return SCIENTIFIC
        return SLIM if self.runs_slim(code) else WARM

    def runs_slim(self, code: str) -> bool:
        if self.mentions_warm_module is not None and self.mentions_warm_module.search(code):
            return False
        return "import" not in code or imported_modules(code) <= SLIM_MODULES
