"""The tool server the trainer starts for a run (`--local-server`, the demo, a recipe)."""

from __future__ import annotations

from tests.conftest import SLOTS
from toolclient.client import ToolClient
from trainer.local_server import local_server


def test_a_local_server_serves_warm_and_slim_workers_and_stops(tmp_path):
    first = SLOTS.take(5)  # the self-test's, 2 warm, 2 slim
    try:
        with local_server(tmp_path, workers=2, first_slot=first) as target:
            with ToolClient(target, timeout_s=60) as client:
                assert client.run_python("print(6 * 7)").stdout == "42\n"
                detail = client.server_info().tools[0].detail
        assert detail.startswith("warm: 2 workers") and "slim: 2 workers" in detail and "scientific" not in detail
        assert "stopped" in (tmp_path / "server.log").read_text()
    finally:
        SLOTS.give_back(first, 5)
