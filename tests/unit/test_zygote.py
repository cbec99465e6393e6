"""The jailed zygote on its own (slot user 21, unused by other tests)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from sandbox.jail import JailPolicy
from sandbox.slots import discover_slots, prepare_scratch
from sandbox.worker import Zygote, ZygoteSpec

SCRATCH = Path("/var/lib/toolserver/scratch")
PROJECT = str(Path(__file__).resolve().parents[2])


def kernel_can_collapse() -> bool:
    major, minor = (int(part) for part in os.uname().release.split(".")[:2])
    try:
        enabled = Path("/sys/kernel/mm/transparent_hugepage/enabled").read_text()
    except OSError:
        return False
    return (major, minor) >= (6, 1) and "[never]" not in enabled


@pytest.fixture
async def slot():
    slots = discover_slots("tsbox", 1, SCRATCH, first=21)
    if not slots:
        pytest.skip("sandbox slot users missing: run toolserver setup-sandbox")
    prepare_scratch(slots[0])
    return slots[0]


@pytest.mark.skipif(not kernel_can_collapse(), reason="MADV_COLLAPSE needs Linux 6.1+ with THP not 'never'")
async def test_warm_heap_is_collapsed_into_huge_pages(slot):
    spec = ZygoteSpec(interpreter=sys.executable, preload=("sympy",), jail=JailPolicy(hidden_paths=(PROJECT,)))
    zygote = Zygote(spec, slot)
    try:
        hello = await zygote.start()
        assert hello["preloaded"] == ["sympy"]
        assert hello["huge_pages_mb"] >= 8
    finally:
        await zygote.kill()


async def test_huge_pages_can_be_turned_off(slot):
    spec = ZygoteSpec(interpreter=sys.executable, preload=("sympy",), huge_pages=False,
                      jail=JailPolicy(hidden_paths=(PROJECT,)))
    zygote = Zygote(spec, slot)
    try:
        assert (await zygote.start())["huge_pages_mb"] == 0
        reply = await zygote.run({"id": "a", "code": "import sympy\nsympy.factorint(360)", "stdin": "",
                                  "timeout_ms": 5000, "memory_mb": 256, "max_output_bytes": 4096,
                                  "max_processes": 16, "max_file_mb": 1, "max_open_files": 64}, 10)
        assert reply["value"] == "{2: 3, 3: 2, 5: 1}"
    finally:
        await zygote.kill()
