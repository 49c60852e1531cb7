"""Under simulated time a driver that busy-waits without sleeping finishes, and its run
repeats: UML's external time-travel counts each cpu_relax() as 1 ns of guest time
(arch/x86/um/asm/processor.h), each clock read in process context as 256 ns
(`timer_read()`, arch/um/kernel/time.c) and a delay as its length, so a poll of jiffies
or of the clock ends once the guest's clock reaches its deadline, after the same number
of turns on every run. (A userspace loop without a system call is another matter:
docs/troubleshooting.md, "the guest hung".)

data/busy_wait.c busy-waits at load, as its `how` parameter says, for `ms`, and leaves
the guest time that took and its loop's turns in its parameters."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from scaffold import CACHE, run

from roadtest.checkout import repo_root
from roadtest.kernel import ensure_kernel
from roadtest.kernel.external import build_own_module

MODULE = Path(__file__).parent / "data" / "busy_wait.c"
WAIT_MS = 20


@pytest.fixture(scope="module")
def busy_wait(tmp_path_factory: pytest.TempPathFactory) -> Path:
    kernel = ensure_kernel(repo_root(), cache_dir=CACHE)
    return build_own_module(kernel, MODULE, tmp_path_factory.mktemp("busy-wait"))


def test_a_driver_that_busy_waits_finishes_and_its_run_repeats(
    pytester: pytest.Pytester, busy_wait: Path
) -> None:
    body = f"""
import pytest

@pytest.mark.parametrize("how", ["jiffies", "ktime", "mdelay"])
def test_load(guest, how):
    guest.agent.load_module("{busy_wait}", f"how={{how}} ms={WAIT_MS}")
    params = "/sys/module/busy_wait/parameters/"
    took = int(guest.agent.read_file(params + "took_ns"))
    turns = int(guest.agent.read_file(params + "turns"))
    guest.agent.remove_module("busy_wait")
    print(f"busy-wait {{how}}: {{took}} ns, {{turns}} turns")
"""
    runs = []
    for _ in range(2):
        result = run(pytester, body, "--roadtest-time=sim", "-s")
        result.assert_outcomes(passed=3)
        found = re.findall(r"busy-wait (\w+): (\d+) ns, (\d+) turns", result.stdout.str())
        runs.append({how: (int(took), int(turns)) for how, took, turns in found})
    assert runs[1] == runs[0]  # the same guest times and turns: event for event
    assert sorted(runs[0]) == ["jiffies", "ktime", "mdelay"], runs
    # A wait of n jiffies ends at the n-th tick, which can come as early as n - 1 ticks
    # after the start; and early after boot UML's jiffies run a tick ahead of its clock
    # (docs/design.md, "Limits of sim").
    took, turns = runs[0]["jiffies"]
    assert 0 < took < (WAIT_MS + 10) * 1_000_000 and turns > 0
    took, turns = runs[0]["ktime"]
    assert took >= WAIT_MS * 1_000_000 and turns > 0
    took, _ = runs[0]["mdelay"]
    assert took >= WAIT_MS * 1_000_000
