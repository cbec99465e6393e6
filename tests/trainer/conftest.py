"""One real tool server for the trainer's tests (slot users tsbox28..tsbox30)."""

from __future__ import annotations

import pytest

from tests.conftest import RunningServer


@pytest.fixture(scope="session")
def trainer_server(tmp_path_factory):
    running = RunningServer(tmp_path_factory.mktemp("trainer"), workers=2)
    yield running
    running.stop()


@pytest.fixture(scope="session", autouse=True)
def one_torch_thread():
    """torch at one thread: the tool server shares the machine's cores."""
    import torch
    torch.set_num_threads(1)
