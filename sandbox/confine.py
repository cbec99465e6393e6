"""The jail's last seccomp layer: what firejail's flags cannot say, installed from inside.

Like `sandbox/guard.py`, this source runs inside the jail (sent over a control pipe)
and imports nothing from the project. A zygote applies it once it is warm, before it
forks any call; a session applies it when it starts,
before the first cell runs. A seccomp filter cannot be removed and is inherited by
every thread (TSYNC) and every process started afterwards, whatever the code does,
guard or no guard. It refuses, with EACCES:

- sockets of any family but AF_INET and AF_INET6 (those reach only the jail's own
  loopback under `--net=none`): no Unix socket can be created to connect to a host
  service whose socket file the jail can see, no netlink, no packet sockets;
- socketpair() of any type but SOCK_STREAM: a datagram pair could still `sendto` a
  host's datagram socket by path (the journal, syslog);
- System V shared memory, semaphores and message queues, and POSIX message queues:
  no rlimit counts them and they would outlive the call (the jail also has an IPC
  namespace of its own);
- io_uring, which opens sockets and files past every filter on system call arguments.

Correct programs need none of these: the standard library has no System V IPC, and
asyncio's self-pipe is a stream socketpair.
"""

import ctypes
import errno
import os
import platform
import struct

# No typing or __future__ import: either would show in the sys.modules of every program run
# here. Names only the type checker needs are imported for it, in annotations as strings.
TYPE_CHECKING = False  # typing's flag without importing typing at run time (type checkers read it as True)
if TYPE_CHECKING:
    from typing import Any

    # (kind, operands...): ("label", name), ("ld", offset), ("and", k), ("ret", k), ("jmp", label),
    # ("jeq" or "jge", k, label if true, label if false; None falls through)
    Instruction = tuple[Any, ...]

PR_SET_NO_NEW_PRIVS = 38
SECCOMP_SET_MODE_FILTER = 1
SECCOMP_FILTER_FLAG_TSYNC = 1
SECCOMP_RET_ALLOW = 0x7FFF0000
SECCOMP_RET_ERRNO = 0x00050000
REFUSE = SECCOMP_RET_ERRNO | errno.EACCES

AF_INET, AF_INET6 = 2, 10
SOCK_STREAM = 1
SOCK_TYPE_MASK = 0xF  # without SOCK_NONBLOCK / SOCK_CLOEXEC

# BPF opcodes (linux/filter.h)
LD_W_ABS = 0x20
JEQ_K = 0x15
JGE_K = 0x35
AND_K = 0x54
RET_K = 0x06

OFFSET_NR, OFFSET_ARCH, OFFSET_ARG0, OFFSET_ARG1 = 0, 4, 16, 24  # struct seccomp_data, little endian

AUDIT_ARCH_X86_64 = 0xC000003E
AUDIT_ARCH_AARCH64 = 0xC00000B7
AUDIT_ARCH_I386 = 0x40000003
X32_SYSCALL_BIT = 0x40000000

# name: (socket, socketpair, refused outright, seccomp)
SYSCALLS = {
    "x86_64": (AUDIT_ARCH_X86_64, 41, 53, (29, 64, 68, 240, 425, 426, 427), 317),
    "aarch64": (AUDIT_ARCH_AARCH64, 198, 199, (194, 190, 186, 180, 425, 426, 427), 277),
}
# 32-bit x86 system calls on an x86_64 kernel: socketcall, socket, socketpair, ipc,
# shmget, semget, msgget, mq_open and io_uring, all refused.
I386_REFUSED = (102, 359, 360, 117, 395, 393, 399, 277, 425, 426, 427)


def statement(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack("HBBI", code, jt, jf, k)


def filter_program(machine: str) -> bytes:
    """The BPF program for machine (platform.machine()), as bytes of sock_filter."""
    if machine not in SYSCALLS:
        raise OSError(f"no seccomp filter is defined for {machine}")
    arch, socket_nr, socketpair_nr, refused, _ = SYSCALLS[machine]
    program: list[Instruction] = []
    emit = program.append
    # Each block below jumps to ALLOW or REFUSE, which end the program; jumps are
    # resolved once every instruction is in place.
    emit(("ld", OFFSET_ARCH))
    emit(("jeq", arch, "native", None))
    if machine == "x86_64":
        emit(("jeq", AUDIT_ARCH_I386, "i386", "allow"))
    else:
        emit(("jmp", "allow"))
    emit(("label", "native"))
    emit(("ld", OFFSET_NR))
    if machine == "x86_64":
        emit(("jge", X32_SYSCALL_BIT, "refuse", None))
    emit(("jeq", socket_nr, "socket", None))
    emit(("jeq", socketpair_nr, "socketpair", None))
    for number in refused:
        emit(("jeq", number, "refuse", None))
    emit(("jmp", "allow"))
    emit(("label", "socket"))
    emit(("ld", OFFSET_ARG0))
    emit(("jeq", AF_INET, "allow", None))
    emit(("jeq", AF_INET6, "allow", "refuse"))
    emit(("label", "socketpair"))
    emit(("ld", OFFSET_ARG1))
    emit(("and", SOCK_TYPE_MASK))
    emit(("jeq", SOCK_STREAM, "allow", "refuse"))
    if machine == "x86_64":
        emit(("label", "i386"))
        emit(("ld", OFFSET_NR))
        for number in I386_REFUSED:
            emit(("jeq", number, "refuse", None))
        emit(("jmp", "allow"))
    emit(("label", "allow"))
    emit(("ret", SECCOMP_RET_ALLOW))
    emit(("label", "refuse"))
    emit(("ret", REFUSE))
    return assemble(program)


def assemble(program: "list[Instruction]") -> bytes:
    """Resolves labels into relative jumps; a None target falls through."""
    positions: dict[str, int] = {}
    index = 0
    for item in program:
        if item[0] == "label":
            positions[item[1]] = index
        else:
            index += 1
    out: list[bytes] = []
    index = 0
    for item in program:
        kind = item[0]
        if kind == "label":
            continue

        def offset(target: "str | None") -> int:
            return 0 if target is None else positions[target] - index - 1

        if kind == "ld":
            out.append(statement(LD_W_ABS, item[1]))
        elif kind == "and":
            out.append(statement(AND_K, item[1]))
        elif kind == "ret":
            out.append(statement(RET_K, item[1]))
        elif kind == "jmp":  # unconditional: ja
            out.append(statement(0x05, offset(item[1])))
        else:
            code = JEQ_K if kind == "jeq" else JGE_K
            jt, jf = offset(item[2]), offset(item[3])
            if not (0 <= jt < 256 and 0 <= jf < 256):
                raise OSError("seccomp filter jump out of range")
            out.append(statement(code, item[1], jt, jf))
        index += 1
    return b"".join(out)


class SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def apply() -> None:
    """Installs the filter on every thread of this process, for good; raises OSError."""
    machine = platform.machine()
    code = filter_program(machine)
    seccomp_nr = SYSCALLS[machine][4]
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) failed")
    buffer = ctypes.create_string_buffer(code, len(code))
    program = SockFprog(len(code) // 8, ctypes.cast(buffer, ctypes.c_void_p))
    libc.syscall.restype = ctypes.c_long
    result = libc.syscall(ctypes.c_long(seccomp_nr), ctypes.c_long(SECCOMP_SET_MODE_FILTER),
                          ctypes.c_long(SECCOMP_FILTER_FLAG_TSYNC), ctypes.byref(program))
    if result != 0:
        error = ctypes.get_errno()
        raise OSError(error, f"seccomp filter not installed ({result}): {os.strerror(error)}")
