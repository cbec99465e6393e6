"""The guarded profile's denied modules and actions against the known bypasses."""

from __future__ import annotations

import pytest

from tests.security.test_attacks import still_serving
from toolcontract.v1 import toolserver_pb2 as pb

# Each deny-listed module through every import path, and each denied action.
BYPASSES = {
    "import statement": "import ctypes",
    "from import": "from _ctypes import dlopen",
    "__import__": "__import__('_posixsubprocess')",
    "__import__ of a submodule": "__import__('ctypes.util')",
    "importlib": "import importlib\nimportlib.import_module('ctypes')",
    "importlib via sys.modules": "import sys\nsys.modules['importlib'].import_module('cffi')",
    "importlib util find_spec": "import importlib.util\nimportlib.util.find_spec('_ctypes')",
    "sys.modules lookup": "import sys\nsys.modules['ctypes'].CDLL(None)",
    "builtins dict": "import builtins\nbuiltins.__dict__['__import__']('_ctypes')",
    "restored builtin import": "import sys\nb = sys.modules['builtins']\nb.__import__ = sys.modules['importlib'].__import__\n"
                               "import _posixsubprocess",
    "BuiltinImporter": ("import importlib.machinery as m\n"
                        "m.BuiltinImporter.create_module(m.ModuleSpec('_posixsubprocess', m.BuiltinImporter))"),
    "_imp.create_builtin": ("import _imp, importlib.machinery as m\n"
                            "_imp.create_builtin(m.ModuleSpec('_posixsubprocess', None)).fork_exec"),
    "extension loaded under another name": (
        "import importlib.machinery as m, importlib.util as u, sys, os, glob\n"
        "path = glob.glob(os.path.join(os.path.dirname(os.__file__), 'lib-dynload', '_ctypes*.so'))[0]\n"
        "spec = m.ModuleSpec('harmless._ctypes', m.ExtensionFileLoader('harmless._ctypes', path), origin=path)\n"
        "u.module_from_spec(spec).dlopen"),
    "path finder and loader": ("import importlib.machinery as m, importlib.util as u\n"
                               "spec = m.PathFinder.find_spec('ctypes')\nm2 = u.module_from_spec(spec)\n"
                               "spec.loader.exec_module(m2)"),
    "reload of a module that imports a denied one": "import importlib, subprocess\nimportlib.reload(subprocess)",
    "function of a denied module kept by a library": "import subprocess\nsubprocess._fork_exec()",
    "module attribute of a library": "import numpy\nnumpy._core._internal.ctypes.CDLL(None)",
    "hand-built code object": "def f():\n    pass\nf.__code__.replace(co_code=b'\\x00' * 4)",
    "code type constructor": ("import types\nc = (lambda: 0).__code__\n"
                              "types.CodeType(c.co_argcount, c.co_posonlyargcount, c.co_kwonlyargcount, c.co_nlocals,"
                              " c.co_stacksize, c.co_flags, c.co_code, c.co_consts, c.co_names, c.co_varnames,"
                              " c.co_filename, c.co_name, c.co_qualname, c.co_firstlineno, c.co_linetable,"
                              " c.co_exceptiontable)"),
    "marshal of own bytes": "import sys\nsys.modules['marshal'].loads(b'\\xe3' + b'\\x00' * 40)",
    "bytecode via the import system": "import sys\nsys.modules['_frozen_importlib_external']._compile_bytecode(b'\\xe3')",
    "open /proc/self/mem": "open('/proc/self/mem', 'rb')",
    "os.open /proc/<pid>/mem": "import os\nos.open(f'/proc/{os.getpid()}/mem', os.O_RDWR)",
    "os.system": "import os\nos.system('id')",
    "os.exec": "import os\nos.execv('/bin/sh', ['sh'])",
    "os.posix_spawn": "import os\nos.posix_spawn('/bin/true', ['true'], {})",
    "os.fork": "import os\nos.fork()",
    "subprocess": "import subprocess\nsubprocess.run(['id'])",
    "multiprocessing": "import multiprocessing\nmultiprocessing.Process(target=print).start()",
    "pty": "import pty\npty.fork()",
    "kill the worker": "import os\nos.kill(os.getppid(), 9)",
    "gc object walk": "import sys\nsys.modules['gc'].get_objects()",
    "subprocess class from subclasses": "[c for c in object.__subclasses__() if c.__name__ == 'Popen'][0](['id'])",
    "tcp connection": "import socket\nsocket.create_connection(('127.0.0.1', 1))",
    "name lookup": "import socket\nsocket.getaddrinfo('localhost', 80)",
    "asyncio connection": ("import asyncio\nasync def main():\n    await asyncio.open_connection('127.0.0.1', 1)\n"
                           "asyncio.run(main())"),
    "unix socket": "import socket\nsocket.socket(socket.AF_UNIX).connect('/run/x.sock')",
}


@pytest.mark.parametrize("name", sorted(BYPASSES))
def test_bypass_is_refused(guarded_client, name):
    response = guarded_client.run_python(BYPASSES[name])
    assert response.outcome in (pb.DENIED, pb.ERROR), (name, response)
    if response.outcome == pb.ERROR:  # refused before the guard: the module is simply not there,
        # or the jail refused the system call
        assert response.error.startswith(("KeyError", "IndexError", "AttributeError", "PermissionError")), response.error
    still_serving(guarded_client)


def test_denied_import_names_the_module(guarded_client):
    response = guarded_client.run_python("import numpy\nimport ctypes")
    assert response.outcome == pb.DENIED and "'ctypes'" in response.error
    assert "ImportDenied" in response.stderr


def test_caught_refusal_lets_the_code_go_on(guarded_client):
    response = guarded_client.run_python("try:\n    import ctypes\nexcept ImportError:\n    ctypes = None\nctypes is None")
    assert response.outcome == pb.OK and response.python.value == "True"


def test_allowed_computation_is_untouched(guarded_client):
    code = ("import sympy, numpy as np, mpmath, fractions, itertools, math, statistics, collections, re, json\n"
            "x = sympy.Symbol('x')\n"
            "(sympy.integrate(x**2, (x, 0, 3)), int(np.linalg.matrix_power(np.array([[1, 1], [1, 0]]), 10)[0, 0]),\n"
            " str(mpmath.mpf(2) ** 0.5)[:6], math.comb(10, 3), statistics.mean([1, 2, 3]))")
    response = guarded_client.run_python(code)
    assert response.outcome == pb.OK, response.stderr
    assert response.python.value == "(9, 89, '1.4142', 120, 2)"


def test_a_preloaded_librarys_native_handles_are_refused_on_a_scientific_worker(guarded_client):
    """A scientific zygote preloaded libraries that loaded ctypes; a guarded call finds
    every reference to it replaced, whatever the library."""
    response = guarded_client.run_python("import pandas, scipy, sys\nimport ctypes")
    assert response.outcome == pb.DENIED and "'ctypes'" in response.error
    response = guarded_client.run_python("import pandas, sys\n'ctypes' in sys.modules")
    assert response.outcome == pb.OK and response.python.value == "False"
