"""A STAND-IN for the Lean REPL, for tests on machines without Lean. It is not Lean.

It speaks the leanprover-community/repl protocol (JSON commands separated by blank
lines; each answer a JSON object followed by a blank line; `env` numbers; `messages`
with severity, pos {line, column} and data; `sorries`; `{"message": ...}` for a command
it refuses) but understands only a tiny language, one statement per line:

    import M                          in a command without "env": the header; each header
                                      command sleeps --header-delay seconds; a module
                                      named Missing is an error, as an unknown module is
    theorem NAME : STATEMENT := PROOF where PROOF is one of
        sorry | by sorry              a sorry (and Lean's "declaration uses 'sorry'" warning)
        by error                      an error message at the word `error`
        by sleep N                    sleeps N seconds, then succeeds
        by crash                      the process exits at once (status 1)
        by oom                        allocates until MemoryError, then reports out of
                                      memory on stderr and exits, as Lean does
        by hogs N                     starts 3 processes that each touch N MB (what a proof's
                                      code can start), waits for them, then succeeds
        anything else                 succeeds
    #env                              an info message with JSON: instance (random per process),
                                      header, elaborations, uses
    #noise                            prints non-JSON text with a blank line before the answer

Other lines are ignored. The tests run it jailed like a real REPL (`standin_command`).
"""

from __future__ import annotations

import base64
import zlib

STANDIN_SOURCE = r'''
import json, os, re, sys, time

delay = float(sys.argv[sys.argv.index("--header-delay") + 1]) if "--header-delay" in sys.argv else 0.0
instance = os.urandom(8).hex()  # pids repeat across jails (each has its own pid namespace)
envs = {}
elaborations = 0
uses = 0
THEOREM = re.compile(r"(theorem)\s+(\S+)\s*:\s*(.*?)\s*:=\s*(.*)$")


def answer(obj):
    sys.stdout.write(json.dumps(obj, indent=1, ensure_ascii=False) + "\n\n")
    sys.stdout.flush()


def message(severity, line, column, data):
    return {"severity": severity, "pos": {"line": line, "column": column},
            "endPos": {"line": line, "column": column + 1}, "data": data}


def run_body(lines, first_line, messages, sorries):
    for offset, line in enumerate(lines):
        number = first_line + offset
        stripped = line.strip()
        if stripped == "#env":
            info = {"instance": instance, "header": header_text, "elaborations": elaborations, "uses": uses}
            messages.append(message("info", number, line.index("#env"), json.dumps(info)))
            continue
        if stripped == "#noise":
            sys.stdout.write("Processing incremental state [pos: 0..7]:\n#noise\n\n")
            continue
        match = THEOREM.search(line)
        if not match:
            continue
        proof = match.group(4).strip()
        if proof in ("sorry", "by sorry"):
            column = line.index("sorry", match.start(4))
            sorries.append({"pos": {"line": number, "column": column},
                            "endPos": {"line": number, "column": column + 5}, "goal": "⊢ " + match.group(3)})
            messages.append(message("warning", number, match.start(1), "declaration uses 'sorry'"))
        elif proof == "by error":
            messages.append(message("error", number, line.index("error", match.start(4)),
                                    "unsolved goals\n⊢ " + match.group(3)))
        elif proof.startswith("by sleep "):
            time.sleep(float(proof.split()[2]))
        elif proof == "by crash":
            sys.stderr.write("stand-in: crashing on purpose\n")
            sys.stderr.flush()
            os._exit(1)
        elif proof.startswith("by hogs "):
            size = int(proof.split()[2]) << 20
            children = []
            for _ in range(3):
                pid = os.fork()
                if pid == 0:
                    block = bytearray(size)
                    for i in range(0, size, 4096):
                        block[i] = 1
                    time.sleep(1)
                    os._exit(0)
                children.append(pid)
            for pid in children:
                os.waitpid(pid, 0)
        elif proof == "by oom":
            hog = []
            try:
                while True:
                    hog.append(bytearray(64 * 1024 * 1024))
            except MemoryError:
                hog.clear()
                sys.stderr.write("INTERNAL PANIC: out of memory\n")
                sys.stderr.flush()
                os._exit(1)


def handle(command):
    global elaborations, uses, header_text
    if not isinstance(command, dict) or not isinstance(command.get("cmd"), str):
        return {"message": "Could not parse as a valid JSON command"}
    lines = command["cmd"].split("\n")
    messages, sorries = [], []
    if "env" in command:
        if command["env"] not in envs:
            return {"message": "Unknown environment."}
        header_text = envs[command["env"]]
        for number, line in enumerate(lines, 1):
            if line.startswith("import "):
                messages.append(message("error", number, 0, "invalid 'import' command, it must be used in the "
                                                          "beginning of the file"))
        uses += 1
        run_body(lines, 1, messages, sorries)
    else:
        time.sleep(delay)
        elaborations += 1
        count = 0
        while count < len(lines) and lines[count].startswith("import "):
            count += 1
        header_text = "\n".join(lines[:count])
        for number, line in enumerate(lines[:count], 1):
            for module in line.split()[1:]:
                if module == "Missing":
                    messages.append(message("error", number, line.index(module), "unknown module prefix 'Missing'"))
        run_body(lines[count:], count + 1, messages, sorries)
    env = len(envs)
    envs[env] = header_text
    reply = {"env": env}
    if messages:
        reply["messages"] = messages
    if sorries:
        reply["sorries"] = sorries
    return reply


header_text = ""
while True:
    block = []
    while True:
        line = sys.stdin.readline()
        if not line:
            sys.exit(0)
        if not line.strip():
            break
        block.append(line)
    if not block:
        continue
    try:
        command = json.loads("".join(block))
    except ValueError:
        answer({"message": "Could not parse JSON"})
        continue
    answer(handle(command))
'''


def standin_command(interpreter: str, header_delay_s: float = 0.0) -> tuple[str, ...]:
    """argv that runs the stand-in. The source travels inline (the jail hides the project
    tree), compressed: firejail refuses arguments longer than 4128 bytes."""
    packed = base64.b64encode(zlib.compress(STANDIN_SOURCE.encode(), 9)).decode()
    program = f"import zlib,base64;exec(zlib.decompress(base64.b64decode('{packed}')))"
    return (interpreter, "-I", "-c", program, "--header-delay", str(header_delay_s))
