"""Checks that refuse proofs which cheat, before Lean spends time on them.

Two checks on the caller's code: it declares no new `axiom` (an axiom proves anything),
and, when the caller supplies the theorem statement to hold fixed, the code states it
word for word (whitespace and comments aside) followed by `:=`. They read the text only:
they do not elaborate Lean, so they cannot see through notation, macros or `open`s that
change what the same words mean. Lean's own `sorry` detection covers `sorry`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

AXIOM_DECLARATION = re.compile(r"(?<![\w.'])axiom\s+([^\s:({\[⦃]+)")
BLOCK_COMMENT = re.compile(r"/-.*?-/", re.DOTALL)
LINE_COMMENT = re.compile(r"--[^\n]*")
STRING_LITERAL = re.compile(r'"(?:\\.|[^"\\])*"')
PROOF_START = re.compile(r"\s*:=")


@dataclass(frozen=True)
class GuardViolation:
    """Why a proof was refused, and where (1-based line of the caller's code; 0: none)."""

    reason: str
    line: int = 0
    column: int = 0


def strip_comments_and_strings(code: str) -> str:
    """code with comments and string literals blanked, keeping every offset in place."""
    def blank(match: re.Match[str]) -> str:
        return re.sub(r"[^\n]", " ", match.group(0))

    for pattern in (STRING_LITERAL, BLOCK_COMMENT, LINE_COMMENT):
        code = pattern.sub(blank, code)
    return code


def new_axioms(code: str) -> list[GuardViolation]:
    """One violation per `axiom` declaration in code."""
    text = strip_comments_and_strings(code)
    found = []
    for match in AXIOM_DECLARATION.finditer(text):
        line = text.count("\n", 0, match.start()) + 1
        column = match.start() - (text.rfind("\n", 0, match.start()) + 1)
        found.append(GuardViolation(f"declares a new axiom {match.group(1)!r}", line, column))
    return found


def normalise_statement(statement: str) -> str:
    """A statement without comments, its proof (from the first `:=`) and differences in
    whitespace. String literals are blanked on both sides, so their contents are not
    compared."""
    text = strip_comments_and_strings(statement)
    proof = PROOF_START.search(text)
    if proof is not None:
        text = text[:proof.start()]
    return " ".join(text.split())


def statement_changed(code: str, statement: str) -> GuardViolation | None:
    """A violation unless code contains statement (normalised) directly followed by `:=`."""
    wanted = normalise_statement(statement)
    if not wanted:
        return GuardViolation("the fixed statement is empty")
    text = " ".join(strip_comments_and_strings(code).split())
    start = 0
    while (index := text.find(wanted, start)) >= 0:
        before_ok = index == 0 or text[index - 1] == " "
        if before_ok and PROOF_START.match(text, index + len(wanted)):
            return None
        start = index + 1
    return GuardViolation(f"the code does not prove the fixed statement as given: {wanted}")


def check_proof(code: str, statement: str = "") -> list[GuardViolation]:
    """Every reason to refuse code; empty when it may run."""
    violations = new_axioms(code)
    if statement.strip():
        changed = statement_changed(code, statement)
        if changed is not None:
            violations.append(changed)
    return violations
