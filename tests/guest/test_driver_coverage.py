"""`roadtest run --coverage`: gcov line and branch coverage of the drivers a run loaded."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from scaffold import run


def test_coverage_of_the_driver_a_test_bound(pytester: pytest.Pytester, tmp_path: Path) -> None:
    out = tmp_path / "coverage"
    result = run(
        pytester,
        """
def test_lux(guest):
    with guest.bound(SENSOR) as dev:
        dev.model.result = 0x0001
        assert read_float(dev.path.only("iio:device*") / "in_illuminance_input") == 0.01
""",
        f"--roadtest-coverage={out}",
    )
    result.assert_outcomes(passed=1)
    text = result.stdout.str()
    # gcovr's summary names the driver's source, for lines and for branches
    assert re.search(r"^drivers/iio/light/opt3001\.c\s+\d+\s+\d+\s+\d+%", text, re.M), text
    assert "Branches" in text
    assert (out / "index.html").is_file()
    # lcov records (geninfo(1)): FN:<line>,<function> and FNDA:<calls>,<function>
    lcov = (out / "coverage.lcov").read_text()
    assert "SF:" in lcov and "drivers/iio/light/opt3001.c" in lcov
    calls = {name: int(n) for n, name in re.findall(r"^FNDA:(\d+),(\w+)$", lcov, re.M)}
    assert calls["opt3001_probe"] == 1  # bound once
    assert calls["opt3001_irq"] == 0  # the device has no interrupt line
