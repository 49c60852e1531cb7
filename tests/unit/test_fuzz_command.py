"""`roadtest fuzz`'s bad input: one line and a non-zero exit, before any guest starts."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import Result, Roadtest, cli_runner

from roadtest.fuzz import profiles
from roadtest.pytest_plugin.fuzz_campaign import parse_duration


@pytest.fixture
def roadtest(capsys: pytest.CaptureFixture[str]) -> Roadtest:
    return cli_runner(capsys)


@pytest.fixture(autouse=True)
def own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("ROADTEST_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.mark.parametrize(
    ("text", "seconds"), [("90", 90), ("90s", 90), ("10m", 600), ("1.5h", 5400)]
)
def test_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "10 minutes", "-5m", "0", "1d"])
def test_bad_durations(roadtest: Roadtest, text: str) -> None:
    result = roadtest("fuzz", f"--duration={text}", "tests/drivers")
    assert result.returncode == 4
    assert result.stderr.startswith("roadtest: --duration ")
    assert len(result.stderr.splitlines()) == 1


def one_line_error(result: Result, *words: str, status: int = 4) -> None:
    """One line naming `words`, and exit `status` (4: a usage error; 2: another problem)."""
    stderr = result.stderr
    assert result.returncode == status, stderr
    assert len(stderr.splitlines()) == 1, stderr
    for word in words:
        assert word in stderr


def test_zero_examples(roadtest: Roadtest) -> None:
    one_line_error(roadtest("fuzz", "--examples", "0", "tests/drivers"), "--examples 0")


def test_examples_and_duration_together(roadtest: Roadtest) -> None:
    one_line_error(
        roadtest("fuzz", "--examples", "5", "--duration", "1m"), "cannot be used together"
    )


def test_an_unknown_selection(roadtest: Roadtest) -> None:
    one_line_error(roadtest("fuzz", "tests/nowhere.py::test_x"), "tests/nowhere.py::test_x")


def test_a_corrupt_example_database(roadtest: Roadtest, own_cache: Path) -> None:
    entry = profiles.database_dir(own_cache) / "0123456789abcdef"
    entry.mkdir(parents=True)
    (entry / "fedcba9876543210").write_bytes(b"\xff\xfe not an example")
    one_line_error(
        roadtest("fuzz", "tests/drivers"), "is damaged", str(entry / "fedcba9876543210"), status=2
    )


def test_an_example_database_that_is_a_file(roadtest: Roadtest, own_cache: Path) -> None:
    own_cache.mkdir(parents=True)
    profiles.database_dir(own_cache).write_text("no")
    one_line_error(roadtest("fuzz", "tests/drivers"), "not a directory", status=2)


def test_a_database_hypothesis_wrote_is_accepted(own_cache: Path) -> None:
    from hypothesis import given, settings
    from hypothesis import strategies as st
    from hypothesis.database import DirectoryBasedExampleDatabase

    db = profiles.database_dir(own_cache)

    @settings(database=DirectoryBasedExampleDatabase(db), max_examples=50)
    @given(st.integers())
    def fails(x: int) -> None:
        assert x < 10

    with pytest.raises(AssertionError):
        fails()
    assert any(db.rglob("*"))  # it saved the failure
    profiles.check_database(db)


def test_rounds_are_sized_to_end_near_the_time() -> None:
    from roadtest.pytest_plugin.fuzz_campaign import (
        FIRST_ROUND_EXAMPLES,
        ROUND_EXAMPLES,
        Campaign,
        PropertyResult,
        round_size,
    )

    campaign = Campaign()
    campaign.results = {"a": PropertyResult(), "b": PropertyResult()}
    assert round_size(campaign, (0, 0.0), 60) == FIRST_ROUND_EXAMPLES  # nothing measured yet
    campaign.stats.examples, campaign.stats.seconds = 40, 20.0  # 2 examples a second
    assert round_size(campaign, (0, 0.0), 60) == 60  # 60 s: 120 examples over 2 properties
    assert round_size(campaign, (0, 0.0), 1e6) == ROUND_EXAMPLES
    assert round_size(campaign, (0, 0.0), 0.1) == 1


def test_a_round_sets_the_examples_of_a_test_decorated_before_it() -> None:
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from roadtest.pytest_plugin.fuzz_campaign import _set_examples

    runs: list[int] = []

    @settings(max_examples=5, database=None)
    @given(st.integers())
    def prop(x: int) -> None:
        runs.append(x)

    _set_examples(prop, 37)
    prop()
    assert len(runs) == 37
