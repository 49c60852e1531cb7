"""Which Hypothesis profile a roadtest run gets: roadtest's quick one, also where CI is set
(Hypothesis then loads its own "ci" profile by itself), unless a run names another."""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]

FUNCTION_SCOPED = """
import pytest
from hypothesis import given, settings, strategies as st

@pytest.fixture
def thing():
    return 1

@given(x=st.integers())
def test_property(thing, x):
    # roadtest-quick: 20 examples, derandomized, no database
    current = settings()
    assert settings.get_current_profile_name() == "roadtest-quick"
    assert current.max_examples == 20 and current.derandomize and current.database is None
"""


@pytest.mark.parametrize("ci", [None, "true"], ids=["local", "ci"])
def test_a_property_with_a_function_scoped_fixture_runs_in_the_quick_profile(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, ci: str | None
) -> None:
    if ci is None:
        monkeypatch.delenv("CI", raising=False)
    else:
        monkeypatch.setenv("CI", ci)
    pytester.makepyfile(test_p=FUNCTION_SCOPED)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
