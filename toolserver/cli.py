"""The `toolserver` command: serve, call, tools, info, bench, mcp, token, setup-sandbox, and the
tools' own commands (`index`: the search tool's), each run by the `run` its parser sets."""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import os
import sys
from pathlib import Path
from typing import TypedDict

from toolserver.config import RUNTIME_INTERPRETER, ConfigError


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="toolserver", description="Tool-integrated reasoning sandbox server")
    sub = parser.add_subparsers(dest="command", required=True)

    serve = sub.add_parser("serve", help="run the gRPC server")
    serve.add_argument("--host")
    serve.add_argument("--port", type=int)
    serve.add_argument("--config", help="TOML file overriding the embedded defaults")
    serve.add_argument("--workers", type=int, help="warm python workers (default: two per CPU)")
    serve.add_argument("--slim-workers", type=int,
                       help="slim python workers, for calls that need only the standard library (0: none)")
    serve.add_argument("--scientific-workers", type=int,
                       help="scientific python workers, for calls that use the data stack (0: none)")
    serve.add_argument("--http-port", type=int,
                       help="serve the HTTP fronts (SandboxFusion, code-judge, Search-R1 APIs) on this port")
    serve.add_argument("--advertise", help="host:port other machines reach this replica at (sessions pin to it)")
    serve.add_argument("--allow-open-bind", action="store_true",
                       help="listen beyond loopback with no caller tokens and no mutual TLS")
    serve.add_argument("--insecure-no-sandbox", action="store_true",
                       help="run untrusted code WITHOUT firejail (development only; reported loudly)")

    for name, help_text in (("call", "run one tool call and print the result"),
                            ("tools", "list the tools and their JSON schemas"),
                            ("info", "print the server's health details"),
                            ("bench", "load-test a server against the fresh-process baseline"),
                            ("mcp", "serve the tools over MCP on stdio, forwarding to --target")):
        command = sub.add_parser(name, help=help_text)
        command.add_argument("--target", default="127.0.0.1:50051")
        command.add_argument("--token", default=os.environ.get("TOOLSERVER_TOKEN"),
                             help="bearer token (default: $TOOLSERVER_TOKEN)")
        command.add_argument("--tls-ca", help="PEM CA bundle: connect with TLS")
        command.add_argument("--tls-cert", help="PEM client certificate (mutual TLS)")
        command.add_argument("--tls-key", help="PEM key of --tls-cert")
        if name == "call":
            command.add_argument("tool", help="python, cpp, bash, or a language of the program tool (java, go, rust, "
                                              "javascript, typescript, ...: `toolserver tools` lists them)")
            command.add_argument("code", help="the code (a program's source); '-' reads it from stdin")
            command.add_argument("--stdin", default="", help="text fed to the program's stdin")
            command.add_argument("--timeout-ms", type=int, default=0)
            command.add_argument("--json", action="store_true", help="print the whole response as JSON")
        if name == "bench":
            command.add_argument("--workload", default="trivial",
                                 help="comma-separated workloads: trivial, sympy, pandas, sklearn, humaneval, "
                                      "mixed10, mixed30, cpp20, cpp20-cold, python20, java20, go20, rust20, "
                                      "javascript20, typescript20 "
                                      "(toolclient/bench_workloads.py)")
            command.add_argument("--code", help="send this snippet instead of the named workloads")
            command.add_argument("--mode", default="unary",
                                 help="comma-separated: unary (C callers of Execute), stream (one ExecuteStream, "
                                      "C in flight)")
            command.add_argument("-n", "--calls", type=int, default=2000, help="calls at each point")
            command.add_argument("-c", "--concurrency", default="1,8,16", help="comma-separated levels")
            command.add_argument("--baseline-calls", type=int, default=200,
                                 help="fresh-process calls at each level for the baseline (0: skip)")
            command.add_argument("--python", default=RUNTIME_INTERPRETER,
                                 help="the baseline's interpreter: a plain python3 of the calls' runtime "
                                      f"(default {RUNTIME_INTERPRETER})")
            command.add_argument("--repeat", type=int, default=1,
                                 help="runs per point; the median run counts")
            command.add_argument("--json", dest="json_out", help="write every point's figures to this file")
            command.add_argument("--plot", help="draw throughput and latency against concurrency into this PNG")
            command.add_argument("--peer", action="append", default=[], metavar="NAME=URL",
                                 help="also send the same calls to another sandbox's HTTP API (repeatable): "
                                      "sandbox-fusion=http://HOST:PORT (POST /run_code) or code-judge=http://HOST:PORT "
                                      "(POST /run)")
            command.add_argument("--peer-calls", type=int, default=0,
                                 help="calls at each point for each peer (0: as many as --calls)")

    token = sub.add_parser("token", help="caller tokens")
    token_sub = token.add_subparsers(dest="token_command", required=True)
    new = token_sub.add_parser("new", help="make a token and print the policy-file lines that admit it")
    new.add_argument("--name", required=True, help="the caller's name in the policy file")

    from toolserver.tools import TOOLS

    for tool in TOOLS:
        if tool.commands is not None:
            tool.commands(sub)

    setup = sub.add_parser("setup-sandbox", help="create the sandbox slot users (root)")
    setup.add_argument("--config")
    setup.add_argument("--first-uid", type=int,
                       help="give slot user i the uid and gid FIRST_UID + i (an image fixes them); "
                            "default: useradd picks system uids")
    setup.add_argument("--slots", type=int,
                       help="how many slot users to make (default: the config's sandbox.slots after its first_slot)")
    return parser


def cmd_serve(args: argparse.Namespace) -> int:
    overrides = {}
    if args.host:
        overrides["server.host"] = args.host
    if args.port is not None:
        overrides["server.port"] = args.port
    if args.workers:
        overrides["python.workers"] = args.workers
    if args.slim_workers is not None:
        overrides.update({"python.slim": args.slim_workers > 0, "python.slim_workers": max(args.slim_workers, 0)})
    if args.scientific_workers is not None:
        overrides.update({"python.scientific": args.scientific_workers > 0,
                          "python.scientific_workers": max(args.scientific_workers, 0)})
    if args.http_port is not None:
        overrides["http.port"] = args.http_port
    if args.insecure_no_sandbox:
        overrides["sandbox.insecure_no_sandbox"] = True
    if args.allow_open_bind:
        overrides["auth.allow_open_bind"] = True
    if args.advertise:
        overrides["server.advertise_address"] = args.advertise
    from toolserver.logs import configure_logging
    from toolserver.settings import load_settings

    settings = load_settings(args.config, **overrides)

    configure_logging(settings.server.log_level, settings.server.log_format)
    from toolserver.server import serve

    asyncio.run(serve(settings))  # serve checks the policies and the bind before it starts anything
    return 0


class ClientArgs(TypedDict):
    """The connection flags of every client command, as `ToolClient` takes them."""

    token: str | None
    tls_ca: str | None
    tls_cert: str | None
    tls_key: str | None


def client_args(args: argparse.Namespace) -> ClientArgs:
    return {"token": args.token, "tls_ca": args.tls_ca, "tls_cert": args.tls_cert, "tls_key": args.tls_key}


def cmd_call(args: argparse.Namespace) -> int:
    from google.protobuf.json_format import MessageToDict

    from toolclient.client import ToolClient
    from toolcontract.v1 import toolserver_pb2 as pb

    code = sys.stdin.read() if args.code == "-" else args.code
    with ToolClient(args.target, **client_args(args)) as client:
        limits = pb.Limits(timeout_ms=args.timeout_ms)
        if args.tool == "python":
            response = client.run_python(code, stdin=args.stdin, timeout_ms=args.timeout_ms)
        elif args.tool == "cpp":
            response = client.execute(pb.ExecuteRequest(cpp=pb.CppCall(source=code, stdin=args.stdin), limits=limits))
        elif args.tool == "bash":
            response = client.execute(pb.ExecuteRequest(bash=pb.BashCall(script=code, stdin=args.stdin), limits=limits))
        else:
            response = client.execute(pb.ExecuteRequest(
                program=pb.ProgramCall(language=args.tool, source=code, stdin=args.stdin), limits=limits))
    if args.json:
        print(json.dumps(MessageToDict(response, preserving_proto_field_name=True), indent=2))
    else:
        sys.stdout.write(response.stdout)
        sys.stderr.write(response.stderr)
        if response.python.value:
            print(response.python.value)
        if response.outcome != pb.OK:
            print(f"[{pb.Outcome.Name(response.outcome)}] {response.error}", file=sys.stderr)
    return 0 if response.outcome == pb.OK else 1


def cmd_tools(args: argparse.Namespace) -> int:
    from toolclient.client import ToolClient
    from toolserver.arguments import openai_function

    with ToolClient(args.target, **client_args(args)) as client:
        print(json.dumps([openai_function(spec) for spec in client.list_tools()], indent=2))
    return 0


def cmd_info(args: argparse.Namespace) -> int:
    from google.protobuf.json_format import MessageToDict

    from toolclient.client import ToolClient

    with ToolClient(args.target, **client_args(args)) as client:
        print(json.dumps(MessageToDict(client.server_info(), preserving_proto_field_name=True), indent=2))
    return 0


def cmd_bench(args: argparse.Namespace) -> int:
    from toolclient.bench import MODES, plot, run_bench, write_json
    from toolclient.bench_peers import parse_peer
    from toolclient.bench_workloads import Program, Workload, get_workload

    try:
        levels = [int(level) for level in args.concurrency.split(",") if level]
        modes = [mode for mode in args.mode.split(",") if mode]
        if not levels or min(levels) < 1 or args.calls < 1:
            raise ValueError("--concurrency and --calls must be positive")
        if not modes or set(modes) - set(MODES[:2]):
            raise ValueError(f"--mode: {args.mode!r}; known: unary, stream")
        workloads = ([Workload("custom", (Program(args.code),))] if args.code else
                     [get_workload(name) for name in args.workload.split(",") if name])
        if args.plot and importlib.util.find_spec("matplotlib") is None:
            raise ValueError("--plot needs matplotlib: pip install matplotlib")
        peers = dict(parse_peer(text) for text in args.peer)
        if peers and importlib.util.find_spec("aiohttp") is None:
            raise ValueError("--peer needs aiohttp: pip install 'toolserver[http]'")
    except ValueError as exc:
        print(f"bench: {exc}", file=sys.stderr)
        return 2
    results = run_bench(args.target, workloads, args.calls, levels, args.baseline_calls, modes=modes,
                        repeat=max(1, args.repeat), python=args.python, peers=peers, peer_calls=max(0, args.peer_calls),
                        **client_args(args))
    if args.json_out:
        write_json(results, Path(args.json_out))
    if args.plot:
        plot([r.summary() for r in results], Path(args.plot), title=f"toolserver bench, {args.target}")
    return 1 if any(r.failures for r in results) else 0


def cmd_token(args: argparse.Namespace) -> int:
    """Prints a new token once; the policy file keeps only its SHA-256."""
    import secrets

    from toolserver.policy import token_hash

    token = "ts_" + secrets.token_urlsafe(32)
    print(f"token (give it to the caller; it is not stored anywhere): {token}", file=sys.stderr)
    print(f'[callers.{args.name}]\ntoken_sha256 = "{token_hash(token)}"\ntools = ["python"]')
    return 0


def cmd_setup_sandbox(args: argparse.Namespace) -> int:
    from sandbox.slots import create_slot_users, running_as_root
    from toolserver.settings import load_settings

    settings = load_settings(args.config)
    if not running_as_root():
        print("not root: jails will run as this user (one uid for all slots)")
        return 0
    root = Path(settings.sandbox.scratch_root)
    root.mkdir(parents=True, exist_ok=True)
    root.chmod(0o755)
    count = args.slots or settings.sandbox.first_slot + settings.sandbox.slots
    created = create_slot_users(settings.sandbox.user_prefix, count, root, first_uid=args.first_uid)
    print(f"sandbox slot users: {count} ({len(created)} created), scratch under {root}")
    return 0


def cmd_mcp(args: argparse.Namespace) -> int:
    try:
        from toolserver.fronts.mcp_stdio import serve_stdio
    except ImportError as exc:
        print(f"the MCP front is not installed ({exc.name}): pip install 'toolserver[mcp]'", file=sys.stderr)
        return 2
    asyncio.run(serve_stdio(args.target, **client_args(args)))
    return 0


COMMANDS = {"serve": cmd_serve, "call": cmd_call, "tools": cmd_tools, "info": cmd_info,
            "bench": cmd_bench, "mcp": cmd_mcp, "token": cmd_token, "setup-sandbox": cmd_setup_sandbox}


def main(argv: list[str] | None = None) -> int:
    from toolclient.client import ToolServerError

    args = build_parser().parse_args(argv)
    try:
        status = COMMANDS[args.command](args) if args.command in COMMANDS else args.run(args)
        sys.stdout.flush()  # here, where a reader that went away is handled below
        return status
    except ConfigError as exc:
        print(f"config error: {exc}", file=sys.stderr)
        return 2
    except ToolServerError as exc:  # every verb that asks a server: one line, no traceback
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        # The reader went away (`toolserver tools | head`): stop quietly, as shell tools do;
        # stdout goes to /dev/null so that the interpreter's last flush does not fail again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


if __name__ == "__main__":
    sys.exit(main())
