"""The cpp tool's gauges: its workers and its compiles, sampled at each scrape."""

from __future__ import annotations

from typing import Any

from toolserver.metrics import ServerMetrics


def watch_cpp(metrics: ServerMetrics, cpp: Any) -> None:
    """cpp: the tool's executor, serving."""
    pool, compiler = cpp.pool, cpp.compiler
    metrics.sample("toolserver_cpp_queue_depth", "C++ compiles and runs waiting for a worker",
                   lambda: pool.stats().waiting)
    metrics.sample("toolserver_cpp_workers_busy", "C++ workers compiling or running",
                   lambda: pool.stats().size - pool.stats().idle)
    metrics.sample("toolserver_cpp_restarts", "C++ workers replaced (lost, hung or recycled)",
                   lambda: pool.stats().restarts)
    metrics.sample("toolserver_cpp_compiles", "C++ programs compiled", lambda: compiler.compiles)
    metrics.sample("toolserver_cpp_compile_cache_hits", "C++ calls whose program was compiled before",
                   lambda: compiler.cache.hits)
