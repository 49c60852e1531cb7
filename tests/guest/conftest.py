"""The fixtures of tests/guest; the helpers its tests share are in scaffold.py.

It stays an initial conftest (one that pytest loads from its command line's paths, before
collection), the only kind in which pytest_plugins is allowed: a run names tests/guest, or
files in it.
"""

from pathlib import Path

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


# roadtest's default limit, 300 s a test, is for a stuck guest. A test here without a guest
# fixture of its own runs roadtest (or pytest) in a process of its own, bounded by that
# process's timeout (5 to 30 min): under the default the run could be cut short on a loaded
# machine (the sanitizer kernel's driver suite took more than 300 s with a CPU hog on each
# CPU). Such a test gets the longest inner bound instead, unless it sets its own.
OWN_PROCESS_LIMIT = 1800


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:  # the whole run's: a run may name tests/drivers too
        uses_guest = "guest" in getattr(item, "fixturenames", ())
        if item.path.is_relative_to(here) and not uses_guest:
            if item.get_closest_marker("timeout") is None:
                item.add_marker(pytest.mark.timeout(OWN_PROCESS_LIMIT))
