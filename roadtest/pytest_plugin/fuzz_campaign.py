"""`roadtest fuzz`: the Hypothesis properties of a selection (or its devices in hostile mode),
long and random, with a live progress line and a summary per property.

It is a pytest run of the selection's `@given` tests under the `roadtest-fuzz` profile
(random, the example database in the cache). `--examples N` runs N examples of each
property. `--duration` runs rounds of examples until the time is up: Hypothesis has no
time budget of its own, and a round is a run with a new seed (a round of the same seed
would draw the same examples again), which also lets the database's failures come first.
A failure ends the campaign after its round: Hypothesis has shrunk it by then. Each round
is sized from the last one's pace so that the campaign ends near its time (the first
round measures the pace, with a few examples).
"""

from __future__ import annotations

import os
import re
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from roadtest.errors import UsageError
from roadtest.fuzz import profiles
from roadtest.pytest_plugin.examples import ExampleStats

ROUND_EXAMPLES = 500  # of each property, at most, per round of a --duration campaign
FIRST_ROUND_EXAMPLES = 20  # a --duration campaign's first round: it measures the pace
_PROGRESS_EVERY = 0.5  # seconds between progress lines on a terminal
_PROGRESS_EVERY_LOG = 30.0  # and in a log (not a terminal)
_DURATION = re.compile(r"(\d+(?:\.\d+)?)([smh]?)")


def parse_duration(text: str) -> float:
    """`90`, `90s`, `10m`, `1.5h` as seconds (RoadtestError otherwise, or if not positive)."""
    found = _DURATION.fullmatch(text.strip())
    if found is None:
        raise UsageError(f"--duration {text!r}: not a duration (e.g. 90s, 10m, 1h)")
    seconds = float(found.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600}[found.group(2)]
    if seconds <= 0:
        raise UsageError(f"--duration {text!r}: must be more than nothing")
    return seconds


@dataclass
class PropertyResult:
    outcome: str = "not run"
    reproducer: str = ""


@dataclass
class Campaign:
    """What the rounds of one `roadtest fuzz` found, for the progress line and summary."""

    stats: ExampleStats = field(default_factory=ExampleStats)
    results: dict[str, PropertyResult] = field(default_factory=dict)
    started: float = field(default_factory=time.monotonic)

    @property
    def failed(self) -> bool:
        return any(r.outcome == "failed" for r in self.results.values())


class _Progress:
    """The pytest plugin a round runs with: keeps the Campaign's figures and prints them."""

    def __init__(self, campaign: Campaign, hostile: bool, write: Callable[[str], object]) -> None:
        self.campaign = campaign
        self.hostile = hostile
        self.write = write
        self.tty = sys.stderr.isatty()
        self.last_print = 0.0
        self.examples = FIRST_ROUND_EXAMPLES  # per property, this round

    @pytest.hookimpl(trylast=True)
    def pytest_configure(self, config: pytest.Config) -> None:
        from roadtest.pytest_plugin.stash import EXAMPLE_STATS

        config.stash[EXAMPLE_STATS] = self.campaign.stats
        if self._on_example not in self.campaign.stats.listeners:
            self.campaign.stats.listeners.append(self._on_example)

    def pytest_collection_modifyitems(
        self, config: pytest.Config, items: list[pytest.Item]
    ) -> None:
        for item in items:
            _set_examples(getattr(item, "obj", None), self.examples)
        if self.hostile:
            return  # every item is a hostile test
        properties = [i for i in items if hasattr(getattr(i, "obj", None), "hypothesis")]
        deselected = [i for i in items if i not in properties]
        if deselected:
            config.hook.pytest_deselected(items=deselected)
        items[:] = properties

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        if not session.items:
            args = " ".join(session.config.args)
            raise pytest.UsageError(f"no property (a @given test) in {args}")

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        result = self.campaign.results.setdefault(report.nodeid, PropertyResult())
        if report.failed:
            result.outcome = "failed"
            result.reproducer = dict(report.sections).get("roadtest reproduce", "")
        elif report.when == "call" and report.passed and result.outcome != "failed":
            result.outcome = "passed"
        elif report.skipped and result.outcome == "not run":
            result.outcome = "skipped"

    def _on_example(self, test_id: str, stats: ExampleStats) -> None:
        now = time.monotonic()
        if now - self.last_print < (_PROGRESS_EVERY if self.tty else _PROGRESS_EVERY_LOG):
            return
        self.last_print = now
        line = progress_line(self.campaign, now)
        self.write(f"\r\033[K{line}" if self.tty else line + "\n")


def _set_examples(test: object, examples: int) -> None:
    """This round's examples for a @given test. Hypothesis takes a test's settings when it
    decorates it, from the profile loaded then: a module imported in an earlier round
    would keep that round's count. (`_hypothesis_internal_use_settings` is where given()
    keeps them, an internal name: tests/unit/test_fuzz_command.py checks it still works.)"""
    from hypothesis import settings

    current = getattr(test, "_hypothesis_internal_use_settings", None)
    if isinstance(current, settings) and current.max_examples != examples:
        test._hypothesis_internal_use_settings = settings(  # type: ignore[attr-defined]
            current, max_examples=examples
        )


def progress_line(campaign: Campaign, now: float) -> str:
    stats = campaign.stats
    rate = stats.examples / stats.seconds if stats.seconds else 0.0
    return (
        f"fuzz {now - campaign.started:6.0f} s: {stats.examples} examples, {rate:.0f}/s, "
        f"{stats.failed} failing, {stats.restarts} guest restarts"
    )


def summary(campaign: Campaign) -> str:
    """The table `roadtest fuzz` ends with: one row per property."""
    rows = [("property", "examples", "per s", "failing", "restarts", "result")]
    for test_id, result in sorted(campaign.results.items()):
        stats = campaign.stats.per_test.get(test_id, ExampleStats())
        rate = f"{stats.examples / stats.seconds:.0f}" if stats.seconds else "-"
        rows.append(
            (
                test_id,
                str(stats.examples),
                rate,
                str(stats.failed),
                str(stats.restarts),
                result.outcome,
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = [
        "  ".join(
            cell.ljust(w) if i in (0, 5) else cell.rjust(w)
            for i, (cell, w) in enumerate(zip(row, widths, strict=True))
        )
        for row in rows
    ]
    for test_id, result in sorted(campaign.results.items()):
        if result.outcome == "failed" and result.reproducer:
            lines.append(f"reproduce {test_id}:\n  " + result.reproducer.replace("\n", "\n  "))
    return "\n".join(lines)


def round_size(campaign: Campaign, before: tuple[int, float], left: float) -> int:
    """Examples per property for the next round, so that it ends about when the time is up
    (the last round's pace, over all its properties), within 1 and ROUND_EXAMPLES."""
    examples = campaign.stats.examples - before[0]
    seconds = campaign.stats.seconds - before[1]
    properties = max(1, len(campaign.results))
    if examples <= 0 or seconds <= 0:
        return FIRST_ROUND_EXAMPLES
    return max(1, min(ROUND_EXAMPLES, int(left * examples / seconds / properties)))


def fuzz(
    selection: Sequence[str],
    pytest_options: Sequence[str],
    *,
    hostile: bool,
    examples: int | None,
    duration: float | None,
    seed: int | None,
    default_selection: Path,
    pytest_main: Callable[[list[str], Sequence[object]], int],
    cache: Path,
    build_kernel: Callable[[], object],
) -> int:
    """Check the input, build the kernel, run the campaign; its exit status (1 on any
    failure)."""
    from hypothesis import core, settings

    if examples is not None and examples < 1:
        raise UsageError(f"--examples {examples}: must be at least 1")
    for item in selection:
        path = Path(item.partition("::")[0])
        if not path.exists():
            raise UsageError(f"{item}: no such test file or directory")
    profiles.check_database(profiles.database_dir(cache))
    build_kernel()  # before pytest, so its progress is not hidden behind pytest's capture
    profiles.register(cache)
    campaign = Campaign()
    # pytest captures the tests' stderr, fd 2 included: the progress line goes to a copy of
    # the stderr this command started with.
    stderr = os.dup(2)
    progress = _Progress(campaign, hostile, lambda text: os.write(stderr, text.encode()))
    args = [*pytest_options, *(["--roadtest-hostile"] if hostile else [])]
    args += ["-q", "-p", "no:cacheprovider", "--timeout=0"]  # each example has its hang limit
    # Hypothesis is imported already (its profiles): pytest may not rewrite its asserts.
    args += ["-W", "ignore::pytest.PytestAssertRewriteWarning"]
    args += list(selection) or [str(default_selection)]
    try:
        rounds = 0
        status = 0
        per_round = examples if examples is not None else FIRST_ROUND_EXAMPLES
        while True:
            before = (campaign.stats.examples, campaign.stats.seconds)
            settings.register_profile(
                "roadtest-fuzz-run", settings.get_profile(profiles.FUZZ), max_examples=per_round
            )
            settings.load_profile("roadtest-fuzz-run")
            core.global_force_seed = None if seed is None else seed + rounds  # type: ignore[assignment]
            progress.examples = per_round
            status = pytest_main(args, [progress])
            rounds += 1
            if status not in (0, 1) or campaign.failed or duration is None:
                break
            left = duration - (time.monotonic() - campaign.started)
            if left <= 0:
                break
            per_round = round_size(campaign, before, left)
    finally:
        os.close(stderr)
    if sys.stderr.isatty():
        sys.stderr.write("\r\033[K")
    print(progress_line(campaign, time.monotonic()).replace("fuzz", f"fuzz, {rounds} rounds,", 1))
    if campaign.results:
        print(summary(campaign))
    if status in (0, 1):
        return 1 if campaign.failed else 0
    return status
