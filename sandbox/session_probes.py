"""The self-test's probes of a session, judged from the host side: what its process sees
of itself (`session_jail`), of the host's tree (`session_root`) and what it can write
beside a worker's call (`session_mounts`). Run by toolserver/python/executor.py on a
session it opens at start-up; the probes are programs, the judges pure functions.
"""

from __future__ import annotations

import ast
import dataclasses
from typing import Any

from sandbox.calls import CallReply
from sandbox.root import JailRoot, expected_names
from sandbox.selftest import ROOT_PROBE, Check, judge_root
from sandbox.worker import ZygoteSpec

# What a session's process sees of itself (toolserver/python/executor.verify_session_jail):
# its value is a dict of facts that judge_session_probe reads.
SESSION_PROBE = r'''
import os, socket
facts = {"uid": os.getuid(), "euid": os.geteuid()}
with open("/proc/self/status") as status:
    for line in status:
        key, _, value = line.partition(":")
        if key in ("CapEff", "CapPrm", "CapBnd", "NoNewPrivs", "Seccomp", "Seccomp_filters"):
            facts[key] = value.strip()
facts["interfaces"] = sorted(line.split(":")[0].strip() for line in open("/proc/net/dev").readlines()[2:])
try:
    socket.create_connection(("1.1.1.1", 53), timeout=2).close()
    facts["network"] = "reached"
except OSError as exc:
    facts["network"] = type(exc).__name__
for path in ("/etc", "/usr", "/opt"):
    try:
        open(os.path.join(path, ".toolserver-session-probe"), "w").close()
        facts["wrote " + path] = True
    except OSError:
        pass
with open(os.path.join(os.environ["HOME"], "probe"), "w") as handle:
    facts["home_writable"] = handle.write("ok") == 2
facts
'''


def probe_answer(reply: CallReply, name: str) -> tuple[Any, Check | None]:
    """The value a probe answered, or the failed check `name` where it ended otherwise or
    answered what cannot be read."""
    if reply.outcome != "OK":
        return None, Check(name, False, f"the probe ended {reply.outcome}: {reply.error or reply.stderr[-300:]}")
    try:
        return ast.literal_eval(reply.value), None
    except (ValueError, SyntaxError):
        return None, Check(name, False, f"unreadable probe answer {reply.value[:200]!r}")


def judge_session_probe(reply: CallReply) -> Check:
    """Whether a session's process is jailed like a worker's call: not root, no
    capability, no_new_privs, seccomp filters (the jail's and ours), only loopback, the
    host's files read-only, its home writable."""
    facts, broken = probe_answer(reply, "session_jail")
    if broken is not None:
        return broken
    wrong = []
    if facts.get("uid") == 0 or facts.get("euid") == 0:
        wrong.append("runs as root")
    for key in ("CapEff", "CapPrm", "CapBnd"):
        if int(facts.get(key, "1"), 16) != 0:
            wrong.append(f"{key} {facts.get(key)}")
    if facts.get("NoNewPrivs") != "1":
        wrong.append("no_new_privs off")
    if facts.get("Seccomp") != "2" or int(facts.get("Seccomp_filters", "0")) < 2:
        wrong.append(f"seccomp {facts.get('Seccomp')} with {facts.get('Seccomp_filters')} filters")
    if facts.get("interfaces") != ["lo"] or facts.get("network") == "reached":
        wrong.append(f"network {facts.get('interfaces')} {facts.get('network')}")
    wrong += [key for key in facts if key.startswith("wrote ")]
    if not facts.get("home_writable"):
        wrong.append("home not writable")
    if wrong:
        return Check("session_jail", False, "; ".join(wrong))
    return Check("session_jail", True, f"uid {facts['uid']}, no capabilities, no_new_privs, "
                                       f"{facts['Seccomp_filters']} seccomp filters, loopback only, host read-only")


def judge_session_root(reply: CallReply, root: JailRoot) -> Check:
    """Whether a session sees only its root of the host's tree, as a call does
    (`judge_root` of a `root_probe` run in it)."""
    view, broken = probe_answer(reply, "session_root")
    if broken is not None:
        return broken
    return judge_root(view, expected_names(root, str(view.get("home", ""))), "session_root")


# What a process can do to the filesystem, ids aside: run as a worker's call and in a
# session, the two answers must be equal (judge_mount_views): a read-only root, the hidden
# paths hidden, and the same writable mounts, each counted where the process reaches it
# (one covered by another, or in a directory the jail emptied, is none of its). Read-only
# mounts are not compared: a host mount made between the two jails' starts is among them
# (read-only in the later jail, absent from the earlier), and what a jail may see of the
# host is its root's, proven apart (`judge_root`). Formatted with the jail's hidden paths.
MOUNT_VIEW_PROBE = r'''
import os
def seen(path):
    try:
        if os.path.isdir(path):
            os.listdir(path)
        else:
            open(path, "rb").close()
        return True
    except OSError:
        return False
def reached(point, device):
    major, minor = (int(number) for number in device.split(":"))
    try:
        return os.stat(point).st_dev == os.makedev(major, minor)
    except OSError:
        return False
def view(hidden):
    home = os.environ["HOME"]
    mounts = []
    with open("/proc/self/mountinfo") as lines:
        for line in lines:
            fields = line.split()
            point = fields[4].encode().decode("unicode_escape")
            if not reached(point, fields[2]):
                continue
            if point == home or point.startswith(home + "/"):
                point = "~" + point[len(home):]
            if "ro" not in fields[5].split(","):
                mounts.append(f"{point} {fields[fields.index('-') + 1]}")
    return {"root_read_only": bool(os.statvfs("/").f_flag & os.ST_RDONLY), "mounts": sorted(set(mounts)),
            "hidden_seen": [path for path in hidden if os.path.exists(path) and seen(path)]}
view(%r)
'''


def root_probe(tops: list[str], canary: str) -> str:
    """A program whose value is what it sees of the host's tree (ROOT_PROBE's root_view)."""
    return ROOT_PROBE + f"root_view({tops!r}, {canary!r})"


def mount_view_probe(spec: ZygoteSpec) -> str:
    return MOUNT_VIEW_PROBE % (list(spec.jail.hidden_paths),)


def judge_mount_views(call: CallReply, session: CallReply) -> Check:
    """Whether a session can do to the filesystem what a worker's call can: the same
    writable mounts, a read-only root and every hidden path hidden."""
    views = []
    for name, reply in (("a call", call), ("a session", session)):
        view, broken = probe_answer(reply, "session_mounts")
        if broken is not None:
            return dataclasses.replace(broken, detail=f"in {name}: {broken.detail}")
        views.append(view)
    worker, own = views
    wrong = []
    if not own.get("root_read_only"):
        wrong.append("its root is writable")
    if own.get("hidden_seen"):
        wrong.append(f"it sees hidden paths {own['hidden_seen']}")
    if own.get("mounts") != worker.get("mounts"):
        only_own = sorted(set(own.get("mounts", ())) - set(worker.get("mounts", ())))
        only_worker = sorted(set(worker.get("mounts", ())) - set(own.get("mounts", ())))
        wrong.append(f"its writable mounts differ from a call's ({len(own.get('mounts', ()))} against "
                     f"{len(worker.get('mounts', ()))}; only its own: {only_own[:3]}; only a call's: {only_worker[:3]})")
    if wrong:
        return Check("session_mounts", False, "; ".join(wrong))
    return Check("session_mounts", True,
                 f"the same {len(own['mounts'])} writable mounts as a call, read-only root, hidden paths hidden")
