"""The trainer's tests run against the suite's shared tool server (tests/conftest.py `server`)."""

from __future__ import annotations

import pytest

from tests.conftest import RunningServer


@pytest.fixture(scope="session")
def trainer_server(server: RunningServer) -> RunningServer:
    return server


@pytest.fixture(scope="session", autouse=True)
def one_torch_thread():
    """torch at one thread: the tool server shares the machine's cores."""
    import torch
    torch.set_num_threads(1)
