"""Replay under basic time-travel depends on host timing, and its divergence report says
so; under simulated time it does not.

Under a CPU hog on the guest's CPU, `roadtest replay --golden traces/vcnl4040`
diverged in 10 of 10 runs under basic time-travel (0 of 10 without the hog):
runtime-PM autosuspend and kernel timers fire at other points of the driver's
I/O when the host answers slowly. Under simulated time (the default) the guest's clock
moves only when roadtest's calendar says so, and the replay, exact, passes.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from scaffold import own_cpu, run

from roadtest.checkout import repo_root

# The test reads once more when asked: a replay of its recording then diverges.
READS = """
import os

def test_reads(guest):
    with guest.bound(SENSOR) as dev:
        dev.model.result = 0x0001
        lux = dev.path.only("iio:device*") / "in_illuminance_input"
        for _ in range(2 if os.environ.get("ROADTEST_TEST_EXTRA_READ") else 1):
            assert read_float(lux) == 0.01
"""


def test_divergence_under_basic_time_travel_says_host_load_matters(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    golden = pytester.path / "golden"
    travel = "--roadtest-time=travel"
    run(pytester, READS, travel, f"--roadtest-record={golden}").assert_outcomes(passed=1)
    monkeypatch.setenv("ROADTEST_TEST_EXTRA_READ", "1")
    result = run(pytester, READS, travel, f"--roadtest-replay={golden}")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*replay of *test_reads.rtrace: the driver *",
            "*note: the guest runs in basic time-travel mode, in which host load can change "
            "this sequence*re-run on an idle machine*",
        ]
    )


def test_exact_replay_under_simulated_time_with_a_cpu_hog_on_the_guests_cpu() -> None:
    root = repo_root()
    roadtest = Path(sys.executable).with_name("roadtest")
    guest_cpu = own_cpu()  # one this run may use
    # sha256sum of an endless input: a pure CPU hog, pinned where the guest runs.
    hog = subprocess.Popen(
        ["taskset", "-c", str(guest_cpu), "sha256sum", "/dev/zero"],
        stdout=subprocess.DEVNULL,
    )
    try:
        result = subprocess.run(
            [
                str(roadtest),
                "replay",
                "--roadtest-time=sim",
                f"--roadtest-cpu={guest_cpu}",
                "--golden",
                str(root / "traces" / "vcnl4040"),
            ],
            capture_output=True,
            text=True,
            cwd=root,
            timeout=900,
            check=False,
        )
    finally:
        hog.kill()
        hog.wait()
    assert result.returncode == 0, result.stdout + result.stderr
