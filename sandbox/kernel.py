"""A session's Jupyter kernel, started inside its jail: the in-jail half of a session.

Like `sandbox/zygote.py`, the host sends this source and its config over stdin (see
`sandbox.worker.BOOTSTRAP`); it imports nothing from the project. It

1. writes the kernel's connection file into its own home, a private tmpfs: the ZeroMQ
   `ipc` sockets live there, and the host reaches them through `/proc/<pid>/root`, so
   the jail shares no writable directory with the host;
2. starts ipykernel, which binds those sockets;
3. imports the preloads the workers have, applies the jail's seccomp layer (`sandbox/confine.py`: from here on no new Unix
   socket can be made, so the kernel reaches nothing but its own sockets), caps its
   address space at what it maps now plus the session's memory, and installs the guard
   (`sandbox/guard.py`) of the session's import profile (the default refuses nothing);
4. caps every message it publishes at the server's output cap, so that a cell printing
   100 MB sends the server a bounded message (the server also refuses larger ones);
5. tells the host where it is (a hello frame with its pid in the jail) before it binds
   anything, waits for the host's go (its client is connected and watching for the
   handshakes, which would otherwise be missed), and says when it serves.

What this does not protect against on its own: code in the kernel may bypass the
message cap (it owns the process); the server's socket limits bound what reaches it.
"""

import importlib
import json
import os
import resource
import struct
import sys
import types

CONNECTION_FILE = "kernel.json"


def load_source(name, source):
    module = types.ModuleType(name)
    exec(compile(source, name, "exec"), module.__dict__)
    return module


def send_frame(fd, message):
    data = json.dumps(message).encode()
    frame = struct.pack(">I", len(data)) + data
    while frame:
        frame = frame[os.write(fd, frame):]


def capped_text(text, cap):
    """text cut to at most cap bytes of UTF-8; (text, whether it was cut)."""
    if not isinstance(text, str) or len(text) <= cap // 4:
        return text, False
    data = text.encode("utf-8", "surrogatepass")
    if len(data) <= cap:
        return text, False
    return data[:cap].decode("utf-8", "ignore"), True


def cap_content(kind, content, cap):
    """The content of an outgoing message with its text cut to cap bytes, marked
    `truncated` when something was cut."""
    if not isinstance(content, dict):
        return content
    cut = False
    if kind == "stream":
        content["text"], cut = capped_text(content.get("text", ""), cap)
    elif kind in ("execute_result", "display_data", "update_display_data"):
        data = content.get("data") if isinstance(content.get("data"), dict) else {}
        plain, cut = capped_text(data.get("text/plain", ""), cap)
        cut = cut or any(key != "text/plain" for key in data)
        content["data"] = {"text/plain": plain} if plain else {}
    elif kind == "error":
        content["evalue"], cut_value = capped_text(str(content.get("evalue", "")), cap)
        joined, cut_trace = capped_text("\n".join(map(str, content.get("traceback") or [])), cap)
        content["traceback"] = joined.split("\n") if joined else []
        cut = cut_value or cut_trace
    if cut:
        content["truncated"] = True
    return content


def cap_messages(session_class, cap):
    """Every message the kernel's sessions send goes through cap_content."""
    send = session_class.send

    def capped_send(self, stream, msg_or_type, content=None, *args, **kwargs):
        if isinstance(msg_or_type, dict):
            kind = msg_or_type.get("header", {}).get("msg_type") or msg_or_type.get("msg_type")
            msg_or_type["content"] = cap_content(kind, msg_or_type.get("content"), cap)
        else:
            content = cap_content(msg_or_type, content, cap)
        return send(self, stream, msg_or_type, content, *args, **kwargs)

    session_class.send = capped_send


def vm_size_bytes():
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


def main(config):
    home = os.environ["HOME"]
    os.environ["TMPDIR"] = home  # firejail drops TMPDIR; the home is the only writable place
    os.chdir(home)
    control = os.dup(1)  # the hello's way out; ipykernel takes fd 1 and 2 over for output
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 1)
    os.close(null)
    sys.argv[0] = "ipykernel_launcher"  # the name ipykernel expects (else it prints a note)
    connection = dict(config["connection"], ip=os.path.join(home, "kernel"))
    path = os.path.join(home, CONNECTION_FILE)
    with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as handle:
        json.dump(connection, handle)
    send_frame(control, {"ready": True, "pid": os.getpid()})
    if not os.read(0, 1):  # any byte is the go; end of file: the host gave up
        raise SystemExit("the host went away before the kernel started")
    from ipykernel.kernelapp import IPKernelApp
    from jupyter_client.session import Session

    cap_messages(Session, config["max_message_text"])
    app = IPKernelApp.instance()
    app.initialize(["-f", path, "--transport=ipc", "--HistoryManager.enabled=False", "--IPKernelApp.quiet=True"])
    for name in config.get("preload", ()):  # warm like a worker; a library that needs a denied
        try:                                 # module when it loads (sympy: ctypes) loads here
            importlib.import_module(name)
        except Exception:
            pass
    load_source("confine", config["confine_source"]).apply()
    if config.get("memory_mb"):
        limit = vm_size_bytes() + config["memory_mb"] * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    guard = config.get("guard")  # the rules of the session's profile
    if guard is not None:
        module = load_source("guard", config["guard_source"])
        if guard["denied"]:
            module.load_before_removal()
        module.install_guard(guard["allowed"], guard["denied"], (home, "/tmp", "/var/tmp", "/dev/shm"),
                             guard["refuse_actions"])
    send_frame(control, {"serving": True, "guarded": guard is not None})
    os.close(control)
    app.start()


main(JAIL_CONFIG)  # noqa: F821 - defined by the bootstrap before this source runs
