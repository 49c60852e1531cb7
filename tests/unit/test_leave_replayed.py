"""`--roadtest-leave-replayed DIR`: the tests that have a golden trace under DIR are
deselected (the x86_64 lane's replay runs them, their I/O checked), the others run; a
directory that is not one is a usage error before anything runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from roadtest.trace.format import Header, write_trace_atomic

pytest_plugins = ["pytester"]

TESTS = """
import pytest


def test_traced():
    pass


@pytest.mark.parametrize("chip", ["a", "b"])
def test_one_chip_traced(chip):
    pass


def test_not_traced():
    pass
"""


def golden(where: Path, *tests: str) -> Path:
    (where / "chip").mkdir(parents=True)
    for n, test in enumerate(tests):
        header = Header(kernel="6.12", test=test, address=0x48, compatible="x,chip")
        write_trace_atomic(where / "chip" / f"t{n}.rtrace", header, [])
    return where


def test_the_replayed_tests_are_deselected(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_chips=TESTS)
    traces = golden(
        pytester.path / "traces",
        "test_chips.py::test_traced",
        "test_chips.py::test_one_chip_traced[b]",
        "test_gone.py::test_elsewhere",  # a trace of another file's test: nothing to leave
    )
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "-v", f"--roadtest-leave-replayed={traces}"
    )
    result.assert_outcomes(passed=2, deselected=2)
    result.stdout.fnmatch_lines(
        ["*test_one_chip_traced[[]a[]] PASSED*", "*test_not_traced PASSED*"]
    )


def test_a_golden_directory_that_is_none_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_chips=TESTS)
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", f"--roadtest-leave-replayed={pytester.path / 'none'}"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--roadtest-leave-replayed *none: no such directory*"])
