"""The datasheet properties find real kernel bugs: the division by zero that
kernel-patches/iio/0001 fixes, on its own; and the two bugs they found in 6.12
(iio/0003, rtc/0001), whose properties are these patches' regression tests: they fail
without them.

vcnl4000.ko is built out of tree from the cached kernel tree with iio/0001 taken back out
(the tree has it applied: the patch is applied in reverse). Then, each in a pytest
subprocess with its own guest, test_vcnl4000_properties.py's test_every_proximity_value
for the VCNL4020 runs:

(a) with `--roadtest-module=<that module>`: the first in_proximity_raw read panics the
    guest ("Kernel mode signal 8", the divide error on UML); the example fails with
    KernelPanic, and the report gives the minimal input, results=[0] (every value divides
    by zero: Hypothesis's first example, the simplest, is already the minimal one, so
    there is nothing left to shrink; test_fuzz_examples.py shows a panic being shrunk),
    and the command that reproduces it, with the module option;
(b) with the cache's module (iio/0001 applied): the same property passes.

For iio/0003 (vcnl4000: a measurement given up on) and rtc/0001 (pcf8563: digits that
are not BCD) the same: the module built with the patch taken back out fails its property, the
cache's passes.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from scaffold import run_pytest

from roadtest.checkout import repo_root
from roadtest.kernel import Kernel, ensure_kernel
from roadtest.kernel.external import build_external_module

REPO = repo_root()
PATCH = REPO / "kernel-patches/iio/0001-iio-light-vcnl4000-Fix-division-by-zero-reading-VCNL.patch"
DRIVER = "drivers/iio/light/vcnl4000.c"
PATCHES = REPO / "kernel-patches"
PROPERTY = (
    REPO
    / "tests/drivers/iio/light/test_vcnl4000_properties.py::test_every_proximity_value[vcnl4020]"
)
TIMEOUT = 600  # per inner run: shrinking restarts the guest after each panic


def reversed_patch(patch: Path, out: Path) -> Path:
    """`patch` undone, as a patch of its own (what `patch -R` applies): the old and new
    sides of each file header, hunk header and line swapped."""
    lines = []
    for line in patch.read_text().splitlines(keepends=True):
        if line.startswith("--- "):
            line = "+++ " + line[4:]
        elif line.startswith("+++ "):
            line = "--- " + line[4:]
        elif hunk := re.match(r"@@ -(\S+) \+(\S+) @@(.*)", line, re.S):
            line = f"@@ -{hunk[2]} +{hunk[1]} @@{hunk[3]}"
        elif line[:1] in "+-":
            line = {"+": "-", "-": "+"}[line[0]] + line[1:]
        lines.append(line)
    # The headers must stay in order: "--- a" before "+++ b".
    text = re.sub(r"^(\+\+\+ .*\n)(--- .*\n)", r"\2\1", "".join(lines), flags=re.M)
    out.write_text(text)
    return out


@pytest.fixture(scope="module")
def kernel() -> Kernel:
    return ensure_kernel(REPO)


def run(pytester: pytest.Pytester, *args: str, tests: str = str(PROPERTY)) -> pytest.RunResult:
    return run_pytest(pytester, tests, *args, timeout=TIMEOUT)


def test_the_proximity_property_finds_the_division_by_zero(
    kernel: Kernel, pytester: pytest.Pytester, tmp_path: Path
) -> None:
    undo = reversed_patch(PATCH, tmp_path / "undo-0002.patch")
    unpatched = build_external_module(kernel, DRIVER, tmp_path / "unpatched", patches=[undo])

    # (a) The property alone finds the panic, shrinks it and says how to reproduce it.
    found = run(pytester, f"--roadtest-module={unpatched}")
    out = found.stdout.str()
    found.assert_outcomes(failed=1)
    panic = (
        "KernelPanic: the guest kernel panicked: Kernel panic - not syncing: Kernel mode signal 8"
    )
    assert panic in out, out
    shrunk = re.search(r"(?:Falsifying example|Failing test case): .*?results=(\[.*?\])", out, re.S)
    assert shrunk is not None and shrunk[1] == "[0]", out
    assert "roadtest reproduce" in out
    reproducer = re.search(r"^roadtest run .*test_every_proximity_value\[vcnl4020\].*$", out, re.M)
    assert reproducer is not None, out
    assert f"--roadtest-module={unpatched}" in reproducer[0]
    print(f"{panic}\nshrunk to results={shrunk[1]}\n{reproducer[0]}")

    # (b) The patched module (the cache's) passes the same property.
    fixed = run(pytester)
    fixed.assert_outcomes(passed=1)


@pytest.mark.parametrize(
    ("patch", "source", "tests", "count"),
    [
        (
            "iio/0003-iio-light-vcnl4000-Do-not-report-the-result-of-a-mea.patch",
            DRIVER,
            "tests/drivers/iio/light/test_vcnl4000_properties.py::"
            "test_a_measurement_that_ends_after_the_driver_gave_up",
            4,  # two chips, two channels
        ),
        (
            "rtc/0001-rtc-pcf8563-Refuse-a-date-and-time-whose-digits-are-.patch",
            "drivers/rtc/rtc-pcf8563.c",
            "tests/drivers/rtc/test_pcf8563_properties.py::test_a_digit_above_nine_is_an_error",
            1,
        ),
    ],
    ids=["iio-0003-vcnl4000", "rtc-0001-pcf8563"],
)
def test_a_found_bug_fails_its_property_without_its_patch(
    kernel: Kernel,
    pytester: pytest.Pytester,
    tmp_path: Path,
    patch: str,
    source: str,
    tests: str,
    count: int,
) -> None:
    undo = reversed_patch(PATCHES / patch, tmp_path / f"undo-{Path(patch).name}")
    unpatched = build_external_module(kernel, source, tmp_path / "unpatched", patches=[undo])
    without = run(pytester, f"--roadtest-module={unpatched}", tests=str(REPO / tests))
    without.assert_outcomes(failed=count)
    with_patch = run(pytester, tests=str(REPO / tests))
    with_patch.assert_outcomes(passed=count)
