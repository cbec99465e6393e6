"""A call's files in its working directory (the jail's home): its program, the files it
brings, and the files it asks back."""

import base64
import os
import stat

from sandbox.inside.frames import write_all
from sandbox.inside.program import PROGRAM_FILE

# No typing or __future__ import: either would show in the sys.modules of every program run
# here. Names only the type checker needs are imported for it, in annotations as strings.
TYPE_CHECKING = False  # typing's flag without importing typing at run time (type checkers read it as True)
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping


def write_program(home: str, code: str) -> None:
    """Writes the call's code where `python3 main.py` would find it: main.py in the
    working directory. The zygote writes it as its call's process waits for its request
    (there the same work faults in more of the pages it shares with the zygote)."""
    fd = os.open(os.path.join(home, PROGRAM_FILE), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        write_all(fd, code.encode("utf-8", errors="surrogateescape"))
    finally:
        os.close(fd)


def inside_home(name: str) -> "str | None":
    """The real path of name in the home, or None where it resolves outside it."""
    home = os.path.realpath(os.environ.get("HOME", "/"))
    path = os.path.realpath(os.path.join(home, name))
    return path if path.startswith(home + os.sep) else None


def write_file(name: str, data: bytes) -> None:
    """Writes data to name (a path relative to the home), parents made."""
    path = inside_home(name)
    if path is None:
        raise ValueError(f"file path {name!r} leaves the working directory")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as out:
        out.write(data)


def write_files(files: "Mapping[str, str]") -> None:
    """Writes the call's files (base64 by relative path) into its home."""
    for name, text in files.items():
        write_file(name, base64.b64decode(text))


def write_kept_files(kept: "Mapping[str, str]", held: "Mapping[str, bytes]", sent: "Mapping[str, str]") -> None:
    """Writes the call's kept files (a key by relative path): the bytes the zygote held
    when it forked this process, or those that came with the request (base64 by key)."""
    for name, key in kept.items():
        write_file(name, held[key] if key in held else base64.b64decode(sent[key]))


def fetch_files(names: "Iterable[str]", budget: int) -> "tuple[dict[str, str], bool]":
    """The named regular files under the home, base64 by name, while their sizes fit in
    budget bytes together; returns them and whether one was left out for the budget."""
    found: dict[str, str] = {}
    left_out = False
    for name in names:
        path = inside_home(name)
        if path is None:
            continue
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError:
            continue
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                continue
            if info.st_size > budget:
                left_out = True
                continue
            with os.fdopen(os.dup(fd), "rb") as source:
                data = source.read(budget + 1)
            if len(data) > budget:
                left_out = True
                continue
            budget -= len(data)
            found[name] = base64.b64encode(data).decode("ascii")
        finally:
            os.close(fd)
    return found, left_out
