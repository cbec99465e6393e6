"""Prometheus metrics of one server, served over HTTP for scraping.

Counts calls by tool and outcome, their latency, refusals by status code; tools add
gauges of their own (`sample`: their pools' queue depth, workers, restarts, sessions),
read at scrape time.
Each server has its own registry, so that several servers in one process (tests) do not
collide. It measures; it decides nothing.
"""

from __future__ import annotations

from typing import Callable

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

    def serve(self, host: str, port: int) -> int:
        """Starts the HTTP endpoint; returns the port it listens on."""
        server, _ = start_http_server(port, addr=host, registry=self.registry)
        return server.server_port
