"""Prometheus metrics of one server, served over HTTP for scraping.

Counts calls by tool and outcome, their latency, refusals by status code, and samples
the pools at scrape time (queue depth, busy and idle workers, restarts, open sessions).
Each server has its own registry, so that several servers in one process (tests) do not
collide. It measures; it decides nothing.
"""

from __future__ import annotations

from typing import Any, Callable

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server

LATENCY_BUCKETS = (0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)


class ServerMetrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.calls = Counter("toolserver_calls", "Calls answered, by tool and outcome",
                             ["tool", "outcome"], registry=self.registry)
        self.latency = Histogram("toolserver_call_seconds", "Time from receiving a call to answering it",
                                 ["tool"], buckets=LATENCY_BUCKETS, registry=self.registry)
        self.queued = Histogram("toolserver_call_queued_seconds", "Time a call waited for a worker before it ran",
                                ["tool"], buckets=(0.001,) + LATENCY_BUCKETS, registry=self.registry)
        self.rejected = Counter("toolserver_rejected_calls", "Calls refused before running, by gRPC status",
                                ["reason"], registry=self.registry)
        self.front_requests = Counter("toolserver_front_requests", "HTTP front requests, by front and HTTP status",
                                      ["front", "status"], registry=self.registry)
        self.http_refused = Counter("toolserver_http_refused", "HTTP connections and requests refused at the "
                                    "listener, by reason", ["reason"], registry=self.registry)
        self.inflight = Gauge("toolserver_calls_in_flight", "Calls being answered now", registry=self.registry)

    def sample(self, name: str, documentation: str, read: Callable[[], float]) -> None:
        """A gauge read from read() at each scrape."""
        Gauge(name, documentation, registry=self.registry).set_function(read)

    def watch_python(self, python: Any) -> None:
        """Gauges over the python tool's pools (all together; slim and scientific calls
        apart) and its session manager."""
        pools = list(python.pools.values())

        def total(field: str) -> Callable[[], float]:
            return lambda: sum(getattr(pool.stats(), field) for pool in pools)

        self.sample("toolserver_python_queue_depth", "Python calls waiting for a worker", total("waiting"))
        self.sample("toolserver_python_workers_idle", "Python workers waiting for a call", total("idle"))
        self.sample("toolserver_python_workers_busy", "Python workers running a call",
                    lambda: sum(pool.stats().size - pool.stats().idle for pool in pools))
        self.sample("toolserver_sandbox_restarts", "Python workers replaced (lost, hung or recycled)", total("restarts"))
        self.sample("toolserver_python_workers_extra", "Python workers started past the base size, now running",
                    total("extra"))
        if python.pool is not None:
            scheduler = python.pool.scheduler
            self.sample("toolserver_python_workers_grown", "Extra python workers started while calls waited on held ones",
                        lambda: scheduler.grown)
            self.sample("toolserver_python_workers_shrunk", "Extra python workers stopped when idle",
                        lambda: scheduler.shrunk)
            self.sample("toolserver_python_borrowed_calls", "Python calls run by a worker of another class than "
                        "their own, whose workers were all held", lambda: scheduler.borrowed)
        if "slim" in python.pools:
            slim = python.pools["slim"]
            self.sample("toolserver_python_slim_calls", "Python calls run on slim workers", lambda: slim.stats().calls)
            self.sample("toolserver_python_rerouted_calls", "Calls a slim worker handed back to a warm one",
                        lambda: python.rerouted)
        if "scientific" in python.pools:
            scientific = python.pools["scientific"]
            self.sample("toolserver_python_scientific_calls", "Python calls run on scientific workers",
                        lambda: scientific.stats().calls)
        if python.sessions is not None:
            sessions = python.sessions
            self.sample("toolserver_sessions_open", "Open Python sessions", lambda: len(sessions.sessions))

    def serve(self, host: str, port: int) -> int:
        """Starts the HTTP endpoint; returns the port it listens on."""
        server, _ = start_http_server(port, addr=host, registry=self.registry)
        return server.server_port
