"""Frames on a pipe or socket: a 4-byte big-endian length, then a JSON object."""

import json
import os
import struct


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def read_exactly(fd: int, size: int) -> "bytes | None":
    """size bytes from fd, or None at end of file (pipes return short reads)."""
    chunks: list[bytes] = []
    remaining = size
    while remaining:
        data = os.read(fd, min(remaining, 1 << 20))
        if not data:
            return None
        chunks.append(data)
        remaining -= len(data)
    return b"".join(chunks)


def send_frame(fd: int, message: object) -> None:
    data = json.dumps(message).encode()
    write_all(fd, struct.pack(">I", len(data)) + data)


def read_frame(fd: int) -> "bytes | None":
    """The bytes of the next frame, or None at end of file."""
    header = read_exactly(fd, 4)
    if header is None:
        return None
    return read_exactly(fd, struct.unpack(">I", header)[0])
