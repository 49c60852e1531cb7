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


MODULE_SETTINGS = """
import sys
from hypothesis import given, settings, strategies as st

# Made at import: its defaults are the profile loaded at that moment.
FEW = settings(max_examples=5)

def test_module_level_settings_start_from_the_quick_profile():
    assert FEW.max_examples == 5
    assert FEW.deadline is None and FEW.derandomize and FEW.database is None
"""

NO_PROPERTY = """
import sys

def test_plain():
    assert "hypothesis" not in sys.modules
"""


def test_settings_made_when_a_module_imports_hypothesis_have_the_quick_profile(
    pytester: pytest.Pytester,
) -> None:
    """The profile is chosen the moment Hypothesis is first imported, before the importing
    module's next line (not at configure: a run without a property test does not import
    Hypothesis at all)."""
    pytester.makepyfile(test_m=MODULE_SETTINGS)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)


def test_a_run_without_a_property_test_does_not_import_hypothesis(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_plain=NO_PROPERTY)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
