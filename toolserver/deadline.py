"""When the client of the call being served stops waiting for its answer.

A front whose protocol fixes how long its client waits (SandboxFusion's clients wait
`run_timeout + compile_timeout` and a margin) sets it around the call; the worker
scheduler then refuses a call it cannot start early enough to run its whole time limit
before then, rather than run it for nobody. Unset: the client waits as long as it takes.
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Iterator

ANSWER_BY: ContextVar[float | None] = ContextVar("answer_by", default=None)


@contextmanager
def answer_within(seconds: float) -> Iterator[None]:
    """Marks the calls made inside the block as awaited for seconds from now (monotonic)."""
    token = ANSWER_BY.set(time.monotonic() + seconds)
    try:
        yield
    finally:
        ANSWER_BY.reset(token)
