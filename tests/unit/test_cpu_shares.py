"""How the calls that run long share the CPU weight of one call."""

from __future__ import annotations

import asyncio

import pytest

from toolserver.zygotes import cpu_shares
from toolserver.zygotes.cpu_shares import CpuShares, nice_for


class Jail:
    """What CpuShares sets on a worker: its autogroup's nice."""

    def __init__(self) -> None:
        self.cpu_nice = 0
        self.writes = 0

    def set_cpu_nice(self, nice: int) -> None:
        self.cpu_nice = nice
        self.writes += 1


@pytest.mark.parametrize("calls", [1, 2, 3, 5, 10, 30, 60, 100])
def test_long_calls_together_weigh_about_one_call(calls):
    weight = 1024 / 1.25 ** nice_for(calls)
    assert 1024 / 1.25 <= calls * weight <= 1024 * 1.25 or nice_for(calls) == 19
    assert nice_for(1) == 0 and nice_for(1000) == 19


async def test_calls_join_the_long_ones_and_get_their_weight_back(monkeypatch):
    monkeypatch.setattr(cpu_shares, "LONG_AFTER_S", 0.05)
    shares = CpuShares()
    first, second, short = Jail(), Jail(), Jail()
    shares.started(first, 5.0)
    shares.started(second, 5.0)
    await asyncio.sleep(0.15)
    assert first.cpu_nice == second.cpu_nice == nice_for(2) == 3
    shares.ended(first)  # over: full weight before its next call, and the other is alone
    assert first.cpu_nice == 0 and second.cpu_nice == 0
    shares.started(short, 0.2)  # too short to ever count as long
    await asyncio.sleep(0.1)
    assert short.writes == 0 and shares.long == {second}
    shares.ended(second)
    shares.ended(short)
    assert not shares.long


async def test_a_long_call_gets_its_weight_back_before_its_limit(monkeypatch):
    monkeypatch.setattr(cpu_shares, "LONG_AFTER_S", 0.05)
    shares = CpuShares()
    loops = [Jail() for _ in range(3)]
    shares.started(loops[0], 0.4)  # its weight comes back at 0.2 s
    for jail in loops[1:]:
        shares.started(jail, 5.0)
    await asyncio.sleep(0.1)
    assert [jail.cpu_nice for jail in loops] == [nice_for(3)] * 3
    await asyncio.sleep(0.2)
    assert [jail.cpu_nice for jail in loops] == [0, nice_for(2), nice_for(2)]
