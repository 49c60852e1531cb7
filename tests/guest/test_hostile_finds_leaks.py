"""Hostile-device mode finds what a driver does wrong with nothing but its test file's
device declarations: here, an opt3001 driver patched to leak one allocation per probe
(data/opt3001-leak-in-probe.patch), on the sanitizer kernel (`roadtest fuzz`'s default).
The honest driver passes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from scaffold import other_cpu

from roadtest.arch.um import UM
from roadtest.checkout import repo_root
from roadtest.kernel import default_cache_dir
from roadtest.kernel.external import build_external_module
from roadtest.kernel.variants import SANITIZERS

LEAK = Path(__file__).parent / "data" / "opt3001-leak-in-probe.patch"
DRIVER = "drivers/iio/light/opt3001.c"
TESTS = repo_root() / "tests/drivers/iio/light/test_opt3001.py"
ROADTEST = Path(sys.executable).with_name("roadtest")


def hostile(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            str(ROADTEST),
            "fuzz",
            "--hostile",
            "--examples=10",
            str(TESTS),
            f"--roadtest-cpu={other_cpu()}",
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=900,
        env={**os.environ, "ROADTEST_CACHE": str(default_cache_dir())},
    )


@pytest.mark.timeout(900)  # a module build, and a kmemleak scan per example while shrinking
def test_hostile_mode_finds_a_probe_that_leaks(tmp_path: Path) -> None:
    kernel = SANITIZERS.ensure(repo_root(), UM)
    leaky = build_external_module(kernel, DRIVER, tmp_path, patches=[LEAK])
    result = hostile(f"--roadtest-module={leaky}")
    out = result.stdout
    assert result.returncode == 1, out + result.stderr
    assert "LeftBehind: binding, exercising and unbinding ti,opt3001 left" in out, out
    assert "opt3001_probe" in out  # kmemleak's backtrace of the allocation
    assert "reproduce tests/drivers/iio/light/test_opt3001.py::hostile[SENSOR]" in out, out
    assert f"--roadtest-module={leaky}" in out  # the reproducer keeps the module


@pytest.mark.timeout(900)
def test_the_honest_driver_leaves_nothing_behind() -> None:
    result = hostile()
    assert result.returncode == 0, result.stdout + result.stderr
    assert "hostile[SENSOR]" in result.stdout and "passed" in result.stdout
