"""`@pytest.mark.roadtest_kernel(RANGE, reason=...)`: a test outside its kernel range is
skipped with its reason and counted in the summary; a bad mark is a usage error (exit 4,
one line) before any guest boots. The guest session here is a stand-in with a kernel
release, whose guest a test in its range reaches (and stops at)."""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]

CONFTEST = """
import types

import pytest


class Session:
    kernel = types.SimpleNamespace(release="{release}")

    def ensure_guest(self):
        pytest.skip("reached the guest")


@pytest.fixture(scope="session")
def roadtest_session():
    return Session()
"""

TESTS = """
import pytest


@pytest.mark.roadtest_kernel(">=6.9", reason="abc123 (v6.9) made it divide by zero")
def test_since_6_9(guest):
    pass


@pytest.mark.roadtest_kernel(">=6.1,<6.9", reason="fixed by def456 in v6.9")
def test_before_6_9(guest):
    pass


def test_unmarked(guest):
    pass


@pytest.mark.roadtest_kernel(">=6.9", reason="abc123 (v6.9) made it divide by zero")
def test_without_guest(roadtest_session):
    pytest.skip("reached the test")
"""


def run(pytester: pytest.Pytester, release: str, tests: str = TESTS) -> pytest.RunResult:
    pytester.makeconftest(CONFTEST.format(release=release))
    pytester.makepyfile(test_marked=tests)
    return pytester.runpytest_subprocess("-p", "no:cacheprovider", "-rs")


def test_a_test_outside_its_range_is_skipped_with_its_reason(pytester: pytest.Pytester) -> None:
    result = run(pytester, "6.1.192-roadtest")
    result.assert_outcomes(skipped=4)
    out = result.stdout.str()
    assert (
        "holds for Linux >=6.9 (this kernel: 6.1.192-roadtest): abc123 (v6.9) made it "
        "divide by zero" in out
    )
    assert out.count("reached the guest") == 2  # the other two ran
    # A marked test that takes no `guest` is held to its range too.
    assert "reached the test" not in out
    assert "roadtest: 2 tests unsupported" in out and "test_since_6_9" in out


def test_a_test_inside_its_range_runs(pytester: pytest.Pytester) -> None:
    result = run(pytester, "6.12.118-roadtest")
    result.assert_outcomes(skipped=4)
    out = result.stdout.str()
    assert "holds for Linux >=6.1,<6.9 (this kernel: 6.12.118-roadtest)" in out
    assert out.count("reached the guest") == 2
    assert out.count("reached the test") == 1


@pytest.mark.parametrize(
    ("mark", "said"),
    [
        ('"6.9", reason="x"', "'6.9' in '6.9' is not a comparison"),
        ('">=6.9"', "needs a reason"),
        ('">=6.9", "<7.0", reason="x"', "takes one range and reason="),
    ],
)
def test_a_bad_mark_is_a_usage_error_in_one_line(
    pytester: pytest.Pytester, mark: str, said: str
) -> None:
    tests = f"import pytest\n\n@pytest.mark.roadtest_kernel({mark})\ndef test_x(guest):\n    pass\n"
    result = run(pytester, "6.12.118-roadtest", tests)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    errors = [line for line in result.stderr.lines if line.startswith("ERROR:")]
    assert len(errors) == 1 and said in errors[0] and "test_x" in errors[0]
    assert "reached the guest" not in result.stdout.str()
