"""CPU weight for calls that run long: together they weigh what one call weighs.

A call that has run `LONG_AFTER_S` joins the long ones; each of the k long calls gets
its jail's autogroup nice set so that its weight is about 1/k of a call at full weight
(nice 0: 1024; each step of nice divides the weight by 1.25, down to nice 19). One long
call alone keeps its full weight, so a program that computes for seconds beside short
calls is slowed by them no more than by plain CFS; a hundred loops burning to their
limit weigh together as much as one short call, which then runs at half the CPU at
worst. A call gets its full weight back `RESTORE_BEFORE_S` before its time limit (so its
stop, the signal and the flush and the reply, is not delayed) and when it ends, before
its worker takes the next call.
"""

from __future__ import annotations

import asyncio
import math

from sandbox.worker import Zygote

LONG_AFTER_S = 0.5
RESTORE_BEFORE_S = 0.2
MAX_NICE = 19
NICE_STEP = 1.25  # the kernel's weight ratio between two nice levels


def nice_for(long_calls: int) -> int:
    """The nice at which long_calls calls weigh together about as much as one at nice 0."""
    if long_calls <= 1:
        return 0
    return min(MAX_NICE, round(math.log(long_calls) / math.log(NICE_STEP)))


class CpuShares:
    def __init__(self) -> None:
        self.long: set[Zygote] = set()
        self._timers: dict[Zygote, list[asyncio.TimerHandle]] = {}

    def started(self, worker: Zygote, timeout_s: float) -> None:
        """worker began a call with this time limit."""
        loop = asyncio.get_running_loop()
        restore_after_s = timeout_s - RESTORE_BEFORE_S
        if restore_after_s <= LONG_AFTER_S:
            return
        self._timers[worker] = [loop.call_later(LONG_AFTER_S, self._join, worker),
                                loop.call_later(restore_after_s, self._leave, worker)]

    def ended(self, worker: Zygote) -> None:
        """worker's call is over: full weight again, before its next call."""
        for timer in self._timers.pop(worker, ()):
            timer.cancel()
        self._leave(worker)

    def _join(self, worker: Zygote) -> None:
        self.long.add(worker)
        self._rebalance()

    def _leave(self, worker: Zygote) -> None:
        if worker in self.long:
            self.long.discard(worker)
            self._rebalance()
        if worker.cpu_nice:
            worker.set_cpu_nice(0)

    def _rebalance(self) -> None:
        nice = nice_for(len(self.long))
        for worker in self.long:
            if worker.cpu_nice != nice:
                worker.set_cpu_nice(nice)
