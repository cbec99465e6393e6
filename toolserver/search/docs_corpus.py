"""The default corpus: the documentation of the Python modules the sandbox offers.

One document per public function, class and method (signature and docstring), read
from the modules installed on this machine by importing them, so the default index
needs no download. A module that is not installed is skipped. Each object appears once,
under the first public name met (sympy re-exports the same function under many names);
a method appears under the class that defines it, and overrides are left out (sympy's
hundreds of `eval` and `taylor_term` would bury the rest). This module does not index.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import logging
import types
from typing import Any, Iterable, Iterator

from toolserver.search.corpus import Document

log = logging.getLogger(__name__)

MAX_DOC_CHARS = 2500  # a docstring's first 2500 characters: its summary, parameters and usually an example;
                      # shorter and longer cuts ranked the expected function lower on our check queries
BM25_K1 = 1.2         # docstrings differ tenfold in length: with weaker length normalization (b)
BM25_B = 0.5          # than the usual 0.75 the main function of a topic ranked first more often


def signature_of(obj: Any) -> str:
    try:
        return str(inspect.signature(obj))
    except (TypeError, ValueError):
        return ""


def public_names(module: types.ModuleType) -> list[str]:
    names = getattr(module, "__all__", None)
    if names is None:
        names = [name for name in dir(module) if not name.startswith("_")]
    return sorted(str(name) for name in names)


def _identity(obj: Any) -> int:
    """One key for an object however it is reached (bound methods, classmethods)."""
    return id(getattr(obj, "__func__", obj))


def _first_visit(obj: Any, seen: dict[int, Any]) -> bool:
    """True the first time obj is met; seen keeps each object alive so its id stays unique."""
    key = _identity(obj)
    if key in seen:
        return False
    seen[key] = obj
    return True


def _document(doc_id: str, obj: Any, texts: set[str]) -> Document | None:
    """The object's document; None without a docstring, or with one already used (mpmath
    makes a copy of each function per context: mpmath.mfrom, MPContext.mfrom, ...)."""
    doc = inspect.getdoc(obj)
    if not doc or doc in texts:
        return None
    texts.add(doc)
    return Document(id=doc_id, title=f"{doc_id}{signature_of(obj)}", text=doc[:MAX_DOC_CHARS].strip())


def _methods(cls: type, seen: dict[int, Any], texts: set[str]) -> Iterator[Document]:
    """The public methods of cls, each under the class that defines it."""
    for name in sorted(dir(cls)):
        if name.startswith("_"):
            continue
        owners = [klass for klass in cls.__mro__ if name in vars(klass)]
        if len(owners) != 1 or owners[0] is object:
            continue  # an override: documented once, where the method is first defined
        owner = owners[0]
        try:
            attr = getattr(cls, name)
        except Exception:  # a descriptor that fails on the class: not documentation
            continue
        if not callable(attr) or not _first_visit(attr, seen):
            continue
        document = _document(f"{owner.__module__}.{owner.__qualname__}.{name}", attr, texts)
        if document is not None:
            yield document


def installed(module_names: Iterable[str]) -> list[str]:
    """The names among module_names that can be imported here."""
    found = []
    for name in module_names:
        try:
            if importlib.util.find_spec(name) is not None:
                found.append(name)
        except (ImportError, ValueError):
            continue
    return found


def module_documents(module_names: Iterable[str]) -> Iterator[Document]:
    """Documents for the public callables of each importable module, in order, without repeats."""
    seen: dict[int, Any] = {}
    texts: set[str] = set()
    classes: list[type] = []
    for module_name in module_names:
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            log.info("default search index: module %s is not installed, skipped", module_name)
            continue
        for name in public_names(module):
            obj = getattr(module, name, None)
            if obj is None or isinstance(obj, types.ModuleType) or not callable(obj) or not _first_visit(obj, seen):
                continue
            document = _document(f"{module_name}.{name}", obj, texts)
            if document is not None:
                yield document
            if inspect.isclass(obj):
                classes.append(obj)
    for cls in classes:
        yield from _methods(cls, seen, texts)
