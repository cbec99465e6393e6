"""The python tool's gauges: its pools and sessions, sampled at each scrape."""

from __future__ import annotations

from typing import Any, Callable

from toolserver.metrics import ServerMetrics


def watch_python(metrics: ServerMetrics, python: Any) -> None:
    """Gauges over the python tool's pools (all together; slim and scientific calls
    apart) and its session manager; python: the tool's executor."""
    pools = list(python.pools.values())

    def total(field: str) -> Callable[[], float]:
        return lambda: sum(getattr(pool.stats(), field) for pool in pools)

    metrics.sample("toolserver_python_queue_depth", "Python calls waiting for a worker", total("waiting"))
    metrics.sample("toolserver_python_workers_idle", "Python workers waiting for a call", total("idle"))
    metrics.sample("toolserver_python_workers_busy", "Python workers running a call",
                   lambda: sum(pool.stats().size - pool.stats().idle for pool in pools))
    metrics.sample("toolserver_sandbox_restarts", "Python workers replaced (lost, hung or recycled)", total("restarts"))
    metrics.sample("toolserver_python_workers_extra", "Python workers started past the base size, now running",
                   total("extra"))
    if python.pool is not None:
        scheduler = python.pool.scheduler
        metrics.sample("toolserver_python_workers_grown", "Extra python workers started while calls waited on held ones",
                       lambda: scheduler.grown)
        metrics.sample("toolserver_python_workers_shrunk", "Extra python workers stopped when idle",
                       lambda: scheduler.shrunk)
        metrics.sample("toolserver_python_borrowed_calls", "Python calls run by a worker of another class than "
                       "their own, whose workers were all held", lambda: scheduler.borrowed)
    if "slim" in python.pools:
        slim = python.pools["slim"]
        metrics.sample("toolserver_python_slim_calls", "Python calls run on slim workers", lambda: slim.stats().calls)
        metrics.sample("toolserver_python_rerouted_calls", "Calls a slim worker handed back to a warm one",
                       lambda: python.rerouted)
    if "scientific" in python.pools:
        scientific = python.pools["scientific"]
        metrics.sample("toolserver_python_scientific_calls", "Python calls run on scientific workers",
                       lambda: scientific.stats().calls)
    if python.sessions is not None:
        sessions = python.sessions
        metrics.sample("toolserver_sessions_open", "Open Python sessions", lambda: len(sessions.sessions))
        metrics.sample("toolserver_sessions_ready", "Python sessions made ahead, waiting for an OpenSession",
                       lambda: len(sessions.pool.ready))
        counts, made = sessions.counts, sessions.pool.counts
        metrics.sample("toolserver_sessions_opened", "Python sessions opened", lambda: counts.opened)
        metrics.sample("toolserver_sessions_closed", "Python sessions closed (by their caller, the idle reaper, "
                       "or their process's end)", lambda: counts.closed)
        metrics.sample("toolserver_sessions_evicted", "Python sessions closed for being idle", lambda: counts.evicted)
        metrics.sample("toolserver_sessions_made", "Python sessions made (jail started or recycled, process "
                       "forked into it)", lambda: made.made)
        metrics.sample("toolserver_sessions_recycled", "Python sessions made in the jail of a session that closed",
                       lambda: made.recycled)
        metrics.sample("toolserver_sessions_make_failures", "Python sessions that could not be made",
                       lambda: made.failed)
