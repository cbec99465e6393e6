"""The trainer reaches the tool server only through its client and the generated API.

Every import of a `toolserver`, `toolclient` or `toolcontract` module in `trainer/`, at module
level or inside a function, must be `toolclient.client` or under `toolcontract`: the server's internals
(config, executors, service) can change without the trainer noticing.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

TRAINER = Path(__file__).resolve().parents[2] / "trainer"
ALLOWED = ("toolclient.client", "toolcontract")
PROJECT = ("toolserver", "toolclient", "toolcontract")


def allowed(module: str) -> bool:
    return any(module == name or module.startswith(name + ".") for name in ALLOWED)


def toolserver_imports(source: str) -> list[tuple[int, str]]:
    """(line, module) of every project module the source imports, wherever
    the import is."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module in PROJECT:  # from toolserver import config: the names are modules
                found += [(node.lineno, f"{node.module}.{alias.name}") for alias in node.names]
            else:
                found.append((node.lineno, node.module))
        elif (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant)
              and isinstance(node.args[0].value, str)
              and ast.unparse(node.func) in ("importlib.import_module", "import_module", "__import__")):
            found.append((node.lineno, node.args[0].value))
    return [(line, module) for line, module in found if module.split(".")[0] in PROJECT]


def forbidden(source: str) -> list[tuple[int, str]]:
    return [(line, module) for line, module in toolserver_imports(source) if not allowed(module)]


@pytest.mark.parametrize("path", sorted(TRAINER.rglob("*.py")), ids=lambda p: str(p.relative_to(TRAINER)))
def test_trainer_imports_only_the_client_and_the_api(path):
    assert forbidden(path.read_text()) == [], f"{path.name} imports toolserver internals"


def test_the_trainer_uses_the_client():
    modules = {module for path in TRAINER.rglob("*.py") for _, module in toolserver_imports(path.read_text())}
    assert "toolclient.client" in modules and any(m.startswith("toolcontract.v1") for m in modules)


@pytest.mark.parametrize("source", [
    "from toolserver.config import ConfigError\n",
    "import toolserver.service\n",
    "import toolserver\n",
    "from toolserver import config\n",
    "from toolclient import integrations\n",
    "from toolserver.v1 import toolserver_pb2 as pb\n",
    "def f():\n    from toolserver.config import read_toml\n    return read_toml\n",
    "class C:\n    def m(self):\n        import toolserver.python.pool as pool\n",
    "import importlib\nimportlib.import_module('toolserver.config')\n",
])
def test_an_import_of_the_internals_is_caught(source):
    assert forbidden(source)


@pytest.mark.parametrize("source", [
    "from toolclient.client import AsyncToolClient\n",
    "from toolcontract.v1 import toolserver_pb2 as pb\n",
    "import toolcontract.v1.toolserver_pb2\n",
    "from toolclient import client\nfrom toolcontract import v1\n",
    "def f():\n    from toolclient.client import ToolClient\n",
    "from toolserver_extra import x\nfrom trainer.config import ConfigError\nfrom . import formats\n",
])
def test_the_client_and_the_api_are_allowed(source):
    assert forbidden(source) == []
