"""The mini-sweep: about twenty I2C drivers of the nine subsystems and two SPI ones swept as
`roadtest sweep` sweeps them, on the sanitizer kernel (which make test builds anyway, with
these drivers: kernel-patches/sweep-mini.config for the I2C ones; the SPI ones, rtc-pcf2123
and mcp320x, are those the driver tests build). The expectation is keyed by driver
(its source, `@spi` for an SPI one). How far each got and what it found are compared with
data/mini-sweep.json: a new finding fails, and so does a lost one (a fixed bug: take it
out of the expectation in the fix's change), and so does a driver whose probe got past
where it did not, or the other way round.

`ROADTEST_UPDATE_MINI_SWEEP=1` writes the expectation from a run (after reading why it
changed); the full sweep is `roadtest sweep`, a command, not a test.

And the oracles on a real kernel's reports: the sanitizer proof module's KASAN report and
leak, as the guest printed them, are findings with the proof's function in their
signatures.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from scaffold import CACHE, other_cpu

from roadtest.arch.um import UM
from roadtest.checkout import repo_root
from roadtest.guest.protocol import ProtocolError
from roadtest.kernel import Kernel, ensure_kernel
from roadtest.kernel.external import build_own_module
from roadtest.kernel.variants import SANITIZERS
from roadtest.sweep import oracles
from roadtest.sweep.campaign import plans_for
from roadtest.sweep.inventory import Driver, read_driver, split_key
from roadtest.sweep.outcome import Kind
from roadtest.sweep.runner import Sweeper
from roadtest.testing import kmemleak

EXPECTED = Path(__file__).parent / "data" / "mini-sweep.json"
PROOF = Path(__file__).parent / "data" / "sanitizer_proof.c"


@pytest.fixture(scope="module")
def kernel() -> Kernel:
    variant = SANITIZERS.build_variant(repo_root(), UM)
    return ensure_kernel(repo_root(), variant=variant, cache_dir=CACHE)


def drivers(kernel: Kernel, keys: list[str]) -> list[Driver]:
    found = []
    for key in keys:
        source, bus = split_key(key)
        driver = read_driver(kernel.source_dir, kernel.source_dir / source, bus)
        assert driver is not None, f"{source} defines no {bus} driver in {kernel.source_dir}"
        found.append(driver)
    return found


# About 30 s of sweeping; the sanitizer kernel's build, when the fixture has to do it
# (make test builds it before), counts in pytest-timeout's time too.
@pytest.mark.timeout(900)
def test_mini_sweep_finds_what_it_found(kernel: Kernel, tmp_path: Path) -> None:
    expected: dict[str, dict[str, object]] = json.loads(EXPECTED.read_text())
    plans = plans_for(kernel.source_dir, drivers(kernel, sorted(expected)))
    got: dict[str, dict[str, object]] = {}
    with Sweeper(
        kernel, tmp_path, plans, boot_args=SANITIZERS.boot_args, cpu=other_cpu()
    ) as sweeper:
        for plan in plans:
            result = sweeper.sweep_one(plan)
            got[result.key] = {
                "module": result.module,
                "subsystem": result.subsystem,
                "stage": str(result.stage),
                "findings": sorted(f.signature for f in result.findings),
            }
    if os.environ.get("ROADTEST_UPDATE_MINI_SWEEP"):
        EXPECTED.write_text(json.dumps(got, indent=1, sort_keys=True) + "\n")
    changed = {
        key: {"expected": expected[key], "got": got[key]}
        for key in expected
        if got[key] != expected[key]
    }
    assert not changed, json.dumps(changed, indent=1)


def test_the_oracles_read_the_kernels_own_reports(kernel: Kernel, tmp_path: Path) -> None:
    proof = build_own_module(kernel, PROOF, tmp_path / "proof")
    with Sweeper(kernel, tmp_path / "guest", [], boot_args=SANITIZERS.boot_args) as sweeper:
        guest = sweeper.session.ensure_guest()
        assert guest.console is not None
        mark = guest.console.mark()
        guest.agent.load_module(str(proof), "bug=leak")
        leaks = kmemleak.scan(guest.agent, sweeper.session.sleep)  # named while loaded
        guest.agent.remove_module("sanitizer_proof")
        (leak,) = oracles.leak_findings(leaks, {"sanitizer_proof"})
        assert leak.kind is Kind.LEAK
        assert leak.signature == "leak in sanitizer_proof_leak", leak.report
        with pytest.raises(ProtocolError):  # KASAN's report panics it (panic_on_warn)
            guest.agent.load_module(str(proof), "bug=read-past-end")
        guest.console.wait_closed(timeout=10.0)
        found = oracles.findings(guest.console.kernel_lines_since(mark), {"sanitizer_proof"})
    (kasan,) = (f for f in found if f.kind is Kind.KASAN)
    assert kasan.title.startswith("BUG: KASAN: slab-out-of-bounds"), kasan.report
    assert kasan.signature.startswith("kasan: slab-out-of-bounds in sanitizer_proof_read_past_end")
