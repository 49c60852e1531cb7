"""The sanitizer kernel (`roadtest run --sanitizers`): KASAN and kmemleak find what they are
for, and the driver suite runs on it without a report.

Each case runs in a pytest subprocess with a guest of its own on the sanitizer kernel.
data/sanitizer_proof.c is built out of tree against that kernel; loading it does one
wrong thing, named by its `bug` parameter.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from scaffold import CACHE, other_cpu, run

from roadtest.arch.um import UM
from roadtest.checkout import repo_root
from roadtest.kernel import ensure_kernel
from roadtest.kernel.external import build_own_module
from roadtest.kernel.variants import SANITIZERS

PROOF = Path(__file__).parent / "data" / "sanitizer_proof.c"
ROADTEST = Path(sys.executable).with_name("roadtest")


@pytest.fixture(scope="module")
def proof_module(tmp_path_factory: pytest.TempPathFactory) -> Path:
    variant = SANITIZERS.build_variant(repo_root(), UM)
    kernel = ensure_kernel(repo_root(), variant=variant, cache_dir=CACHE)
    return build_own_module(kernel, PROOF, tmp_path_factory.mktemp("proof"))


def test_kasan_reports_a_read_past_a_kmalloc_buffer_and_the_test_fails(
    pytester: pytest.Pytester, proof_module: Path
) -> None:
    result = run(
        pytester,
        f"""
def test_read_past_end(guest):
    guest.agent.load_module("{proof_module}", "bug=read-past-end")
""",
        "--roadtest-sanitizers",
    )
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    # mm/kasan/report.c: the bug type, the function and the access (a 1-byte read).
    assert "BUG: KASAN: slab-out-of-bounds in sanitizer_proof_read_past_end" in out, out
    assert "Read of size 1 at addr" in out, out


def test_kmemleak_names_the_function_that_leaked(
    pytester: pytest.Pytester, proof_module: Path
) -> None:
    result = run(
        pytester,
        f"""
def test_leak(guest):
    assert guest.kmemleak_scan() == []  # nothing unreferenced since boot
    with guest.bound(SENSOR) as dev:
        dev.model.result = 0x0001
        assert read_float(dev.path.only("iio:device*") / "in_illuminance_input") == 0.01
    assert guest.kmemleak_scan() == []  # a driver bound, read and unbound left nothing

    guest.agent.load_module("{proof_module}", "bug=leak")
    leaks = guest.kmemleak_scan()
    assert len(leaks) == 1, leaks
    assert leaks[0].startswith("unreferenced object "), leaks[0]
    assert "(size 128)" in leaks[0], leaks[0]
    assert "sanitizer_proof_leak" in leaks[0], leaks[0]  # the allocation's backtrace
    assert guest.kmemleak_scan() == []  # reported once
""",
        "--roadtest-sanitizers",
    )
    result.assert_outcomes(passed=1)


def test_kmemleak_scan_on_the_main_kernel_says_what_is_missing(pytester: pytest.Pytester) -> None:
    result = run(
        pytester,
        """
def test_scan(guest):
    guest.kmemleak_scan()
""",
    )
    result.assert_outcomes(failed=1)
    assert "the guest kernel has no kmemleak" in result.stdout.str()


def test_the_driver_suite_passes_on_the_sanitizer_kernel(tmp_path: Path) -> None:
    """A KASAN, UBSAN or lockdep report in the kernel log fails the test it came in (the
    console's trouble pattern), one at boot the first test."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env.update(ROADTEST_CACHE=str(CACHE), COLUMNS="400")
    proc = subprocess.run(
        [
            str(ROADTEST),
            "run",
            "--sanitizers",
            "-q",
            "-p",
            "no:cacheprovider",
            f"--roadtest-cpu={other_cpu()}",
            f"--roadtest-workdir={tmp_path}",
            str(repo_root() / "tests" / "drivers"),
        ],  # fmt: skip
        cwd=repo_root(),
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=1800,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-5000:]
    # pytest's summary: "296 passed, 16 xfailed in 23.01s" (an expected failure is no failure).
    assert re.search(r"\b\d+ passed\b", proc.stdout), proc.stdout[-5000:]
    assert not re.search(r"\b\d+ (failed|errors?)\b", proc.stdout), proc.stdout[-5000:]
