"""One program of the fidelity corpus and how its output is compared.

The oracle is a plain `python3 main.py` of the calls' runtime in a directory that holds
only main.py and the program's files, as the server runs a call. Outputs are compared
with the working directory's path made `<cwd>` (the server's is a scratch directory,
the oracle's a temporary one), test runners' durations `<duration>` and object
addresses (which differ between any two runs) `0x<address>`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

SCRATCH_PATH = re.compile(r"/var/lib/toolserver/scratch/[\w.-]+")
DURATION = re.compile(r"\b\d+\.\d+s\b")
ADDRESS = re.compile(r"\b0x[0-9a-f]{6,}\b")


@dataclass(frozen=True)
class Program:
    name: str
    code: str
    stdin: str = ""
    files: dict[str, bytes] = field(default_factory=dict)
    # python3 drops what sits in stdout's buffer at os._exit or a kill; the server keeps
    # it, as `python3 -u` would: the oracle of such a program runs with -u.
    abrupt: bool = False
    timeout_ms: int = 20_000  # the fidelity server allows calls 30 s
    times_out: bool = False  # runs to its time limit: only the output before it is compared


def normalize(text: str, cwd: str = "") -> str:
    if cwd:
        text = text.replace(cwd, "<cwd>")
    text = SCRATCH_PATH.sub("<cwd>", text)
    return ADDRESS.sub("0x<address>", DURATION.sub("<duration>", text))
