"""The layout's rules, read from the import graph of the project's own modules.

Dependencies point one way: fronts -> dispatch and registry -> tools' wings -> sandbox;
the sandbox imports nothing of the server or the trainer; no module reaches itself
through its imports; no module outside a tool's package names that tool, so that a new
tool is its package and one line in toolserver/tools.py. The client and the trainer load
nothing of the server, through any chain of imports: what both sides need is the neutral
`toolcontract`, which loads neither. Imports inside functions count as much as those at
the top, and importing a module loads the packages above it.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from toolserver.tools import SECTIONS, TOOLS

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("sandbox", "toolcontract", "toolserver", "toolclient", "trainer")
WINGS = tuple(tool.build.__module__ for tool in TOOLS)  # each tool's package
TOOL_LIST = "toolserver.tools"


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def project_modules() -> dict[str, Path]:
    return {module_name(path): path for package in PACKAGES for path in (ROOT / package).rglob("*.py")}


def imports_of(path: Path, known: dict[str, Path]) -> set[str]:
    """The project modules path imports: `from a import b` names a.b when b is a module."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names = [f"{node.module}.{alias.name}" if f"{node.module}.{alias.name}" in known else node.module
                     for alias in node.names]
        else:
            continue
        found.update(name for name in names if name.split(".")[0] in PACKAGES)
    return found


def import_graph() -> dict[str, set[str]]:
    known = project_modules()
    return {name: imports_of(path, known) for name, path in known.items()}


def cycle_in(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of the graph as a path that returns to its start, or None."""
    done: set[str] = set()
    path: list[str] = []
    on_path: set[str] = set()

    def visit(node: str) -> list[str] | None:
        path.append(node)
        on_path.add(node)
        for target in sorted(graph.get(node, ())):
            if target in on_path:
                return path[path.index(target):] + [target]
            if target not in done and (found := visit(target)):
                return found
        on_path.discard(node)
        path.pop()
        done.add(node)
        return None

    for start in sorted(graph):
        if start not in done and (found := visit(start)):
            return found
    return None


def under(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    return import_graph()


def test_the_walk_sees_the_layers(graph):
    assert "toolserver.registry" in graph["toolserver.fronts.grpc_service"] | graph["toolserver.dispatch"]
    assert WINGS == ("toolserver.python", "toolserver.search", "toolserver.lean", "toolserver.cpp", "toolserver.bash",
                     "toolserver.program")
    assert set(WINGS) <= graph[TOOL_LIST]
    assert "toolserver.python.executor" in graph["toolserver.python"]  # its builder's, inside a function
    assert "sandbox.worker" in graph["toolserver.zygotes.pool"]


def test_no_module_reaches_itself(graph):
    assert cycle_in(graph) is None, " -> ".join(cycle_in(graph) or ())


def test_the_cycle_finder_finds_one():
    assert cycle_in({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert cycle_in({"a": {"b"}, "b": set()}) is None


def test_the_sandbox_imports_nothing_of_the_server_or_the_trainer(graph):
    wrong = {(module, target) for module, targets in graph.items() if under(module, "sandbox")
             for target in targets if not under(target, "sandbox")}
    assert not wrong


def test_fronts_and_the_dispatcher_know_no_tool_internals(graph):
    callers = [module for module in graph if under(module, "toolserver.fronts") or module == "toolserver.dispatch"]
    assert callers
    wrong = {(module, target) for module in callers for target in graph[module]
             if any(under(target, wing) for wing in WINGS)}
    assert not wrong


def test_wings_do_not_reach_into_each_other_or_the_fronts(graph):
    for wing in WINGS:
        for module in (m for m in graph if under(m, wing)):
            others = {target for target in graph[module] if any(under(target, w) for w in WINGS if w != wing)
                      or under(target, "toolserver.fronts") or target in ("toolserver.dispatch", TOOL_LIST)}
            assert not others, (module, others)


def test_no_module_outside_a_tools_package_imports_it_but_the_tool_list(graph):
    wrong = {(module, target) for module, targets in graph.items() if module != TOOL_LIST
             for target in targets for wing in WINGS if under(target, wing) and not under(module, wing)}
    assert not wrong


SECTION_OF_CLASS = {kind.__name__: name for name, kind in SECTIONS.items()}


def settings_sections_read(path: Path) -> set[str]:
    """The tools' settings sections a module reads: `<...settings>.section(KindSettings)`,
    or as an attribute, `<...settings>.<section>`."""
    tree = ast.parse(path.read_text(), str(path))
    typed = {SECTION_OF_CLASS[node.args[0].id] for node in ast.walk(tree)
             if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "section"
             and node.args and getattr(node.args[0], "id", "") in SECTION_OF_CLASS}
    return typed | {node.attr for node in ast.walk(tree)
                    if isinstance(node, ast.Attribute) and node.attr in SECTIONS
                    and (getattr(node.value, "id", "") or getattr(node.value, "attr", "")).endswith("settings")}


def test_no_module_outside_a_tools_package_reads_its_settings():
    owner = {section: tool.build.__module__ for tool in TOOLS for section in tool.sections}
    modules = project_modules()
    assert settings_sections_read(modules["toolserver.python.executor"]) >= {"python", "sessions"}
    wrong = {(name, section) for name, path in modules.items() for section in settings_sections_read(path)
             if not under(name, owner[section])}
    assert not wrong


def loaded_by(graph: dict[str, set[str]], start: str) -> set[str]:
    """Every project module that importing start can load: its imports, theirs, and the
    packages above each (importing a.b.c runs a/__init__.py and a/b/__init__.py)."""
    seen: set[str] = set()
    todo = [start]
    while todo:
        module = todo.pop()
        parts = module.split(".")
        for name in [".".join(parts[:end]) for end in range(1, len(parts))] + [module]:
            if name not in seen:
                seen.add(name)
                todo += graph.get(name, ())
    return seen - {start}


def test_the_closure_follows_chains_and_packages():
    graph = {"a.x": {"b.y"}, "b.y": {"c"}, "c": set(), "a": set(), "b": {"d"}, "d": set()}
    assert loaded_by(graph, "a.x") == {"a", "b", "b.y", "c", "d"}


SERVER = ("toolserver", "sandbox")
COMMAND_LINE = "toolserver.cli"  # the `toolserver` command: the server's and the client's
BRIDGE = "toolserver.fronts.mcp_stdio"  # the MCP front served on stdio over a gRPC client


def server_modules_loaded(graph: dict[str, set[str]], start: str) -> set[str]:
    return {name for name in loaded_by(graph, start) if any(under(name, server) for server in SERVER)}


def test_the_contract_loads_nothing_of_the_server_or_the_client(graph):
    shared = [module for module in graph if under(module, "toolcontract")]
    assert {"toolcontract.names", "toolcontract.answer_text", "toolcontract.v1.toolserver_pb2_grpc"} <= set(shared)
    wrong = {(module, target) for module in shared for target in loaded_by(graph, module)
             if not under(target, "toolcontract")}
    assert not wrong


def test_the_client_loads_nothing_of_the_server(graph):
    client = [module for module in graph if under(module, "toolclient")]
    assert {"toolclient.client", "toolclient.integrations.calls", "toolclient.integrations.verl"} <= set(client)
    assert "toolcontract.answer_text" in loaded_by(graph, "toolclient.integrations.calls")
    wrong = {module: server_modules_loaded(graph, module) for module in client}
    assert not {module: found for module, found in wrong.items() if found}


def test_the_trainer_loads_nothing_of_the_server(graph):
    trainer = [module for module in graph if under(module, "trainer")]
    assert "toolclient.client" in loaded_by(graph, "trainer.tool_runner")
    wrong = {module: server_modules_loaded(graph, module) for module in trainer}
    assert not {module: found for module, found in wrong.items() if found}


def test_the_rule_sees_a_server_module_two_imports_away(graph):
    chained = {**graph, "toolclient.client": graph["toolclient.client"] | {"toolcontract.names"},
               "toolcontract.names": graph["toolcontract.names"] | {"toolserver.config"}}
    assert "toolserver.config" in server_modules_loaded(chained, "toolclient.client")


def test_the_server_never_imports_the_client(graph):
    server = [module for module in graph if any(under(module, part) for part in SERVER)
              and module not in (COMMAND_LINE, BRIDGE)]
    assert "toolserver.server" in server
    wrong = {(module, target) for module in server for target in graph[module] if under(target, "toolclient")}
    assert not wrong


def test_only_the_command_line_starts_the_bridge(graph):
    assert {module for module, targets in graph.items() if BRIDGE in targets} == {COMMAND_LINE}


def test_a_fresh_interpreter_importing_the_client_loads_no_server_module():
    """The same rule at run time, for the modules a trainer or an engine loads first."""
    probe = ("import sys, toolclient.client, toolclient.integrations.calls; "
             "print(sorted(m for m in sys.modules if m.split('.')[0] in ('toolserver', 'sandbox')))")
    result = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == "[]"
