"""The in-jail seccomp layer, installed in a forked child of the test process."""

from __future__ import annotations

import os
import platform
import socket

import pytest

from sandbox import confine


def in_confined_child(probe) -> dict:
    """Runs probe() in a child that applied the filter; returns what it reported."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        try:
            confine.apply()
            result = probe()
        except BaseException as exc:  # report, never return into the test runner
            result = {"error": repr(exc)}
        os.write(write_end, repr(result).encode())
        os._exit(0)
    os.close(write_end)
    data = b""
    while chunk := os.read(read_end, 65536):
        data += chunk
    os.close(read_end)
    os.waitpid(pid, 0)
    return eval(data)


def attempts() -> dict:
    def outcome(make):
        try:
            make()
            return "made"
        except OSError as exc:
            return exc.errno

    return {
        "inet": outcome(lambda: socket.socket(socket.AF_INET).close()),
        "inet6": outcome(lambda: socket.socket(socket.AF_INET6).close()),
        "unix": outcome(lambda: socket.socket(socket.AF_UNIX)),
        "netlink": outcome(lambda: socket.socket(socket.AF_NETLINK, socket.SOCK_RAW)),
        "stream pair": outcome(lambda: socket.socketpair()),
        "nonblocking stream pair": outcome(lambda: socket.socketpair(type=socket.SOCK_STREAM | socket.SOCK_NONBLOCK)),
        "datagram pair": outcome(lambda: socket.socketpair(type=socket.SOCK_DGRAM)),
    }


@pytest.mark.skipif(platform.machine() not in confine.SYSCALLS, reason="no filter for this machine")
def test_only_inet_sockets_and_stream_pairs_are_made():
    seen = in_confined_child(attempts)
    refused = 13  # EACCES
    assert seen == {"inet": "made", "inet6": "made", "unix": refused, "netlink": refused,
                    "stream pair": "made", "nonblocking stream pair": "made", "datagram pair": refused}


@pytest.mark.skipif(platform.machine() not in confine.SYSCALLS, reason="no filter for this machine")
def test_the_filter_holds_in_threads_started_before_it():
    import threading

    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        results = []
        try:
            started, go = threading.Event(), threading.Event()

            def worker():
                started.set()
                go.wait()
                try:
                    socket.socket(socket.AF_UNIX)
                    results.append("made")
                except OSError as exc:
                    results.append(exc.errno)

            thread = threading.Thread(target=worker)
            thread.start()
            started.wait()
            confine.apply()
            go.set()
            thread.join()
        except BaseException as exc:
            results.append(repr(exc))
        os.write(write_end, repr(results).encode())
        os._exit(0)
    os.close(write_end)
    data = os.read(read_end, 4096)
    os.close(read_end)
    os.waitpid(pid, 0)
    assert eval(data) == [13]


def test_programs_are_whole_instructions_for_each_machine():
    for machine in confine.SYSCALLS:
        program = confine.filter_program(machine)
        assert program and len(program) % 8 == 0
    with pytest.raises(OSError, match="no seccomp filter"):
        confine.filter_program("sparc")


@pytest.mark.skipif(platform.machine() not in confine.SYSCALLS, reason="no filter for this machine")
def test_a_program_started_through_the_layer_keeps_it_across_exec():
    import subprocess
    import sys

    from sandbox.worker import ZygoteSpec, confined_program

    probe = ("import socket\ntry:\n    socket.socket(socket.AF_UNIX)\n    print('made')\n"
             "except OSError as exc:\n    print(exc.errno)")
    argv = confined_program(ZygoteSpec(interpreter=sys.executable), [sys.executable, "-c", probe])
    assert len(argv[3]) < 4128  # firejail's limit on one argument
    assert subprocess.run(argv, capture_output=True, text=True, timeout=60).stdout.strip() == "13"
