"""Splitting Lean 4 source into its import header and its body, and mapping positions back.

The pool keys REPLs by the normalised header, so `import Mathlib` written in the call's
`header` field or at the top of its `code` lands on the same warm environment. These are
pure functions over text: they do not parse Lean beyond the `import` lines and comments
before the first declaration, and they do not decide whether a header is allowed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MODULE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_'.!?]*")
IMPLICIT_PRELUDE = "Init"  # every Lean file imports it; an empty header elaborates just this


class HeaderError(ValueError):
    """An import line names something that is not a module name."""


@dataclass(frozen=True)
class Header:
    """The imports a REPL environment is built from, deduplicated, in first-seen order."""

    imports: tuple[str, ...]

    @property
    def key(self) -> str:
        """The normalised header text: one `import M` line per module; "" for none."""
        return "\n".join(f"import {module}" for module in self.imports)

    @property
    def command(self) -> str:
        """What the REPL elaborates once for this header (the prelude when it is empty)."""
        return self.key or f"import {IMPLICIT_PRELUDE}"


@dataclass(frozen=True)
class SplitSource:
    """One call's source ready for a REPL: the header to key on, and the command text.

    command = prelude (the non-import lines of the call's header field) + the code, with
    the code's own import lines blanked so that its line and column numbers stay as the
    caller wrote them. `prelude_lines` is how far the command's lines are shifted."""

    header: Header
    command: str
    prelude_lines: int

    def caller_line(self, command_line: int) -> int:
        """The line of the caller's code a REPL line (1-based) refers to; 0 when the
        position lies in the prelude (the header field), not in the code."""
        line = command_line - self.prelude_lines
        return line if line >= 1 else 0


def _scan_header(text: str) -> tuple[list[str], list[int], int]:
    """Modules imported by text's leading import block, the indexes of the import lines,
    and the index of the first line after that block (comments and blanks skipped)."""
    lines = text.split("\n")
    modules: list[str] = []
    import_lines: list[int] = []
    in_comment = False
    end = 0
    for index, line in enumerate(lines):
        stripped = line.strip()
        if in_comment:
            in_comment = "-/" not in stripped
            end = index + 1
            continue
        if not stripped or stripped.startswith("--"):
            end = index + 1
            continue
        if stripped.startswith("/-"):
            in_comment = "-/" not in stripped[2:]
            end = index + 1
            continue
        if stripped == "import" or stripped.startswith(("import ", "import\t")):
            names = stripped[len("import"):].split("--", 1)[0].split()
            if not names:
                raise HeaderError(f"line {index + 1}: import names no module")
            for name in names:
                if not MODULE_NAME.fullmatch(name) or name.endswith("."):
                    raise HeaderError(f"line {index + 1}: {name!r} is not a module name")
            modules.extend(names)
            import_lines.append(index)
            end = index + 1
            continue
        break
    return modules, import_lines, end


def parse_header(text: str) -> Header:
    """The Header of a header field such as "import Mathlib\\nimport Aesop"."""
    modules, _, _ = _scan_header(text)
    return Header(tuple(dict.fromkeys(modules)))


def split_source(code: str, header_field: str = "") -> SplitSource:
    """Splits a call into the header its REPL is keyed on and the command it runs.

    Imports come from the header field and from the top of the code. Lines of the header
    field after its imports (`open ...`, `set_option ...`) are not part of the key: they
    run with every call, before the code. Raises HeaderError on a malformed import."""
    field_modules, _, field_end = _scan_header(header_field)
    code_modules, code_imports, _ = _scan_header(code)
    header = Header(tuple(dict.fromkeys(field_modules + code_modules)))
    field_rest = header_field.split("\n")[field_end:]
    while field_rest and not field_rest[-1].strip():
        field_rest.pop()
    code_lines = code.split("\n")
    for index in code_imports:
        code_lines[index] = ""
    prelude = "".join(line + "\n" for line in field_rest)
    return SplitSource(header, prelude + "\n".join(code_lines), len(field_rest))
