"""The fixtures of tests/guest; the helpers its tests share are in scaffold.py.

It stays an initial conftest (one that pytest loads from its command line's paths, before
collection), the only kind in which pytest_plugins is allowed: a run names tests/guest, or
files in it.
"""

import pytest
from scaffold import CACHE

pytest_plugins = ["pytester"]


@pytest.fixture(autouse=True)
def wide_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """Whole headlines in the summary lines of the pytest runs the harness tests start."""
    monkeypatch.setenv("COLUMNS", "400")


@pytest.fixture
def pytester(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """pytester, whose runs use the real kernel cache: pytester gives them a HOME of their
    own, and the cache is found under HOME."""
    monkeypatch.setenv("ROADTEST_CACHE", str(CACHE))
    return pytester
