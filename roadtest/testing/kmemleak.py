"""kmemleak in the guest (the sanitizer kernel): the objects nothing points to any more.

kmemleak (Documentation/dev-tools/kmemleak.rst) reports an object only when:
- it was allocated at least 5 s of guest time before the scan began (MSECS_MIN_AGE and
  unreferenced_object() in mm/kmemleak.c): a scan first lets that much guest time
  pass, which costs no host time under simulated time or time-travel;
- its contents did not change since the previous scan (update_checksum(): a new object's
  checksum starts at 0, so the first scan that sees it only records it): two scans.
Reported objects stay listed in /sys/kernel/debug/kmemleak until `clear`, which marks them
as seen: each call returns only what no earlier call returned.

kmemleak is conservative: any word that looks like a pointer into an object, a stale
one on a kernel stack included, keeps it from being reported (a missed leak, never a
false one).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from roadtest.errors import RoadtestError

KMEMLEAK = "/sys/kernel/debug/kmemleak"
MIN_AGE = 5.0  # seconds: MSECS_MIN_AGE in mm/kmemleak.c
_HEADLINE = "unreferenced object "


class _Files(Protocol):  # the guest agent, as far as kmemleak goes
    def exists(self, path: str) -> bool: ...

    def read_file(self, path: str) -> bytes: ...

    def write_file(self, path: str, data: bytes | str) -> None: ...


def scan(agent: _Files, sleep: Callable[[float], None]) -> list[str]:
    """Each object kmemleak finds unreferenced and no earlier call returned: its report
    (address, size, the allocating task, a hex dump and the allocation's backtrace)."""
    if not agent.exists(KMEMLEAK):
        raise RoadtestError(
            f"kmemleak_scan: the guest kernel has no kmemleak ({KMEMLEAK} is missing): "
            "run on the sanitizer kernel (--roadtest-sanitizers, `roadtest run --sanitizers`)"
        )
    sleep(MIN_AGE + 0.1)  # a jiffy more than the minimum age, for the rounding
    try:
        for _ in range(2):
            agent.write_file(KMEMLEAK, "scan")
        text = agent.read_file(KMEMLEAK).decode(errors="replace")
        agent.write_file(KMEMLEAK, "clear")
    except PermissionError:
        # kmemleak_write(): EPERM once kmemleak is off, which it turns itself when its
        # object pool runs out or its metadata cannot be allocated.
        raise RoadtestError(
            "kmemleak_scan: kmemleak turned itself off in the guest (its kernel log says "
            "why: 'kmemleak: ... disabled')"
        ) from None
    return reports(text)


def reports(text: str) -> list[str]:
    """/sys/kernel/debug/kmemleak's text, one string per object (print_unreferenced())."""
    found: list[list[str]] = []
    for line in text.splitlines():
        if line.startswith(_HEADLINE):
            found.append([line])
        elif found and line.strip():
            found[-1].append(line)
    return ["\n".join(lines) for lines in found]
