"""guest.kmemleak_scan(): the scans kmemleak needs before it reports an object, and its
reports split per object, against a fake agent (no guest)."""

from __future__ import annotations

import pytest

from roadtest.errors import RoadtestError
from roadtest.testing.kmemleak import KMEMLEAK, reports, scan

# Two objects as print_unreferenced() in mm/kmemleak.c writes them to the debugfs file.
TWO_OBJECTS = """\
unreferenced object 0x0000000061f4e200 (size 128):
  comm "insmod", pid 62, jiffies 4294892310
  hex dump (first 32 bytes):
    5a 5a 5a 5a 5a 5a 5a 5a 5a 5a 5a 5a 5a 5a 5a 5a  ZZZZZZZZZZZZZZZZ
    5a 5a 5a 5a 5a 5a 5a 5a 5a 5a 5a 5a 5a 5a 5a 5a  ZZZZZZZZZZZZZZZZ
  backtrace (crc 6d3a1c27):
    __kmalloc_cache_noprof+0x2c3/0x3f0
    leaky_alloc+0x1e/0x40 [leaky]
    do_one_initcall+0x9c/0x2f0
unreferenced object 0x0000000061f4e300 (size 8):
  comm "swapper", pid 1, jiffies 4294892001
  hex dump (first 8 bytes):
    00 00 00 00 00 00 00 00                          ........
  backtrace (crc 0):
    kmemdup_noprof+0x22/0x50
"""


def test_the_file_is_split_into_one_report_per_object() -> None:
    found = reports(TWO_OBJECTS)
    assert len(found) == 2
    assert found[0].startswith("unreferenced object 0x0000000061f4e200 (size 128):")
    assert "leaky_alloc+0x1e/0x40 [leaky]" in found[0]
    assert "kmemdup_noprof" not in found[0]
    assert found[1].splitlines()[-1].strip() == "kmemdup_noprof+0x22/0x50"


def test_nothing_unreferenced_is_no_report() -> None:
    assert reports("") == []


class FakeAgent:
    def __init__(self, text: str = TWO_OBJECTS, present: bool = True) -> None:
        self.text = text
        self.present = present
        self.calls: list[str] = []
        self.off = False

    def exists(self, path: str) -> bool:
        return self.present and path == KMEMLEAK

    def read_file(self, path: str) -> bytes:
        self.calls.append("read")
        return self.text.encode()

    def write_file(self, path: str, data: bytes | str) -> None:
        assert path == KMEMLEAK
        if self.off and data != "clear":
            raise PermissionError(1, "Operation not permitted")  # kmemleak_write(), once off
        self.calls.append(str(data))


def test_a_scan_waits_the_minimum_age_scans_twice_reads_then_clears() -> None:
    agent = FakeAgent()
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        agent.calls.append("sleep")
        slept.append(seconds)

    found = scan(agent, sleep)
    assert len(found) == 2
    # MSECS_MIN_AGE (mm/kmemleak.c) is 5000 ms; a new object's first scan only checksums it.
    assert slept[0] > 5.0
    assert agent.calls == ["sleep", "scan", "scan", "read", "clear"]


def test_a_kernel_without_kmemleak_is_a_clear_error() -> None:
    with pytest.raises(RoadtestError, match="no kmemleak.*--roadtest-sanitizers"):
        scan(FakeAgent(present=False), lambda seconds: None)


def test_kmemleak_off_is_a_clear_error() -> None:
    agent = FakeAgent()
    agent.off = True
    with pytest.raises(RoadtestError, match="kmemleak turned itself off"):
        scan(agent, lambda seconds: None)
