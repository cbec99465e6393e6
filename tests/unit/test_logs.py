"""The server's log lines: a throttled kind is written once an interval, with a count of the rest."""

from __future__ import annotations

import logging

from toolserver.logs import Throttled


def test_a_throttled_kind_is_written_once_an_interval_with_what_it_left_out(caplog, monkeypatch):
    now = [100.0]
    monkeypatch.setattr("toolserver.logs.time.monotonic", lambda: now[0])
    throttled = Throttled(logging.getLogger("test.throttled"), interval_s=10)
    with caplog.at_level(logging.WARNING, logger="test.throttled"):
        for _ in range(1000):
            throttled.warning("flood", "refused %d", 1)
        throttled.warning("other", "another kind")
        now[0] += 11
        throttled.warning("flood", "refused %d", 2)
    assert [record.getMessage() for record in caplog.records] == [
        "refused 1", "another kind", "refused 2 (999 more like it in the last 10 s)"]
