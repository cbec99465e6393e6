"""Final answers: the last \\boxed{} of a text, and whether two answers are equal by value.

`equivalent` is pure but may be slow or hang (sympy's simplify), so the trainer calls it
only through `rewards.AnswerChecker`, in a separate process under a hard timeout.
Expressions reach `sympy.parse_expr` (which evaluates Python) only after a whitelist of
characters and names, so a model cannot smuggle code through an answer. Matrices,
intervals and units beyond simple \\text{} are compared as strings only.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sympy import Expr

BOXED = ("\\boxed", "\\fbox")
NAMES = frozenset({"sqrt", "pi", "oo", "E", "I", "log", "ln", "exp", "sin", "cos", "tan"})
SAFE = re.compile(r"^[0-9A-Za-z+\-*/^().,\s]*$")
REPLACEMENTS = (("\\left", ""), ("\\right", ""), ("\\!", ""), ("\\,", ""), ("\\;", ""), ("\\ ", ""),
                ("\\dfrac", "\\frac"), ("\\tfrac", "\\frac"), ("^\\circ", ""), ("^{\\circ}", ""),
                ("\\%", ""), ("%", ""), ("\\cdot", "*"), ("\\times", "*"), ("\\pi", "pi"),
                ("\\infty", "oo"), ("\\ln", "ln"), ("\\log", "log"), ("\\exp", "exp"),
                ("\\sin", "sin"), ("\\cos", "cos"), ("\\tan", "tan"), ("$", ""))


def last_boxed(text: str) -> str | None:
    """The content of the last \\boxed{...} (or \\fbox{...}), nested braces included;
    None when there is none or it is not closed."""
    start = max(text.rfind(b) for b in BOXED)
    if start < 0:
        return None
    brace = text.find("{", start)
    if brace < 0 or text[start:brace].strip() not in BOXED:
        return None
    depth = 0
    for i in range(brace, len(text)):
        depth += {"{": 1, "}": -1}.get(text[i], 0)
        if depth == 0:
            return text[brace + 1:i].strip()
    return None


def normalize(answer: str) -> str:
    s = answer.strip()
    s = re.sub(r"\\(?:text|mathrm|textbf|mbox)\{([^{}]*)\}", r"\1", s)
    for old, new in REPLACEMENTS:
        s = s.replace(old, new)
    s = re.sub(r"^[A-Za-z]\s*=\s*", "", s.strip())
    return s.strip().rstrip(".").strip()


def to_sympy_text(latex: str) -> str | None:
    """LaTeX of a plain expression as sympy input, or None when it is not one we accept."""
    s = latex
    for _ in range(20):
        before = s
        s = re.sub(r"\\frac\{([^{}]*)\}\{([^{}]*)\}", r"((\1)/(\2))", s)
        s = re.sub(r"\\sqrt\[([^{}\]]*)\]\{([^{}]*)\}", r"((\2)**(1/(\1)))", s)
        s = re.sub(r"\\sqrt\{([^{}]*)\}", r"sqrt(\1)", s)
        s = re.sub(r"\\frac(\d)(\d)", r"((\1)/(\2))", s)
        if s == before:
            break
    s = s.replace("{", "(").replace("}", ")")
    if not SAFE.match(s) or "__" in s or re.search(r"\.(?!\d)", s):
        return None
    for name in re.findall(r"[A-Za-z_]+", s):
        if len(name) > 1 and name not in NAMES:
            return None
    return s


def _parse(text: str) -> Expr | None:
    """The sympy expression of an answer, or None; a tuple such as (1,2) parses to a
    sympy Tuple, which fails the subtraction in `_same_value` and compares unequal."""
    from sympy.parsing.sympy_parser import (
        convert_xor,
        implicit_multiplication_application,
        parse_expr,
        standard_transformations,
    )
    source = to_sympy_text(text)
    if source is None:
        return None
    transformations = standard_transformations + (implicit_multiplication_application, convert_xor)
    try:
        expr: Expr = parse_expr(source.replace("ln", "log"), transformations=transformations)
    except Exception:
        return None
    return expr


def _split_top(s: str) -> list[str]:
    parts, depth, cur = [], 0, ""
    for ch in s:
        depth += {"(": 1, "[": 1, "{": 1, ")": -1, "]": -1, "}": -1}.get(ch, 0)
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    return parts + [cur]


def _unbrace(s: str) -> str:
    return s.replace("\\{", "").replace("\\}", "")


def _same_value(a: str, b: str) -> bool:
    if a == b:
        return True
    x, y = _parse(a), _parse(b)
    if x is None or y is None:
        return False
    import sympy
    try:
        diff = sympy.simplify(x - y)
        if diff == 0:
            return True
        if diff.is_number:
            return abs(complex(diff)) <= 1e-9 * max(1.0, abs(complex(y)))
    except Exception:
        return False
    return False


def _math_verify(pred: str, ref: str) -> bool | None:
    try:
        from math_verify import parse, verify
    except ImportError:
        return None
    try:
        return bool(verify(parse(f"${ref}$"), parse(f"${pred}$")))
    except Exception:
        return None


def equivalent(pred: str, ref: str) -> bool:
    """Whether two final answers are equal by value: equal strings after normalising,
    math-verify when it is installed and says so, else sympy element by element."""
    a, b = normalize(pred), normalize(ref)
    if a == b:
        return True
    if _math_verify(pred, ref):
        return True
    a = a.strip("()[]") if a.count(",") else a
    b = b.strip("()[]") if b.count(",") else b
    a_parts, b_parts = _split_top(_unbrace(a)), _split_top(_unbrace(b))
    if len(a_parts) != len(b_parts):
        return False
    return all(_same_value(p.strip(), q.strip()) for p, q in zip(a_parts, b_parts))
