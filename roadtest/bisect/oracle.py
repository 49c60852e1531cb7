"""The oracle of a bisection: selected tests (`roadtest run`), or the replay of golden traces
(`roadtest replay --golden`), run on a step's kernel in a process of its own.

Its exit status is the verdict, as a `git bisect run` script's would be: 0 good, 1 bad
(a test failed, a trace diverged), anything else skip (the guest did not boot, no test
ran): the reason is the run's own last word.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from roadtest import signals
from roadtest.kernel.build import Kernel

GOOD, BAD, SKIP = "good", "bad", "skip"
_FAILURE_LINES = 40  # of pytest's FAILURES section, shown for the first bad commit
# pytest's short summary ("FAILED file::test - why") and replay's verdicts on traces.
_TEST_SUMMARY = re.compile(r"^(FAILED|ERROR) \S+::")
_TRACE_SUMMARY = re.compile(r"^  (DIVERGED|FAILED|NOT PLAYED|DAMAGED) ")


@dataclass(frozen=True)
class Verdict:
    verdict: str  # GOOD, BAD or SKIP
    why: str  # one line
    failure: list[str]  # what the oracle printed about the failure (BAD)
    seconds: float
    log: Path


class Oracle:
    def __init__(
        self,
        repo_root: Path,
        tests: list[str],
        golden: Path | None,
        options: list[str],
    ) -> None:
        self.repo_root = repo_root
        self.tests = tests
        self.golden = golden
        self.options = options

    def describe(self) -> str:
        what = " ".join(self.tests)
        if self.golden is None:
            return f"tests {what}"
        return f"the golden traces {self.golden}" + (f" of {what}" if what else "")

    def command(self, kernel: Kernel, overrides: tuple[Path, ...], modules_used: Path) -> list[str]:
        roadtest = [sys.executable, "-m", "roadtest"]
        options = [
            f"--roadtest-kernel={kernel.build_dir.parent}",
            *(f"--roadtest-module={ko}" for ko in overrides),
            f"--roadtest-modules-used={modules_used}",
            "-pno:cacheprovider",  # a step's failures must not reorder the next step's tests
            "--tb=short",
            "-rfE",
            *self.options,
        ]
        if not any(o.startswith("--roadtest-cpu") for o in self.options):
            # The guest on a CPU this process may use (make test pins a bisection to one).
            options.append(f"--roadtest-cpu={min(os.sched_getaffinity(0))}")
        if self.golden is None:
            return [*roadtest, "run", *options, *self.tests]
        return [*roadtest, "replay", f"--golden={self.golden}", *options, *self.tests]

    def run(
        self, kernel: Kernel, overrides: tuple[Path, ...], log: Path, modules_used: Path
    ) -> Verdict:
        """Run on `kernel`; the output goes to `log`, the modules it loaded to `modules_used`."""
        modules_used.unlink(missing_ok=True)
        start = time.monotonic()
        with log.open("wb") as out:
            status = subprocess.run(
                self.command(kernel, overrides, modules_used),
                cwd=self.repo_root,
                env={**os.environ, "COLUMNS": "200"},  # whole lines in pytest's summary
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                check=False,
            ).returncode
        seconds = time.monotonic() - start
        signals.check()  # Ctrl-C reached the oracle too: stop here, not at the next step
        lines = log.read_text(errors="replace").splitlines()
        if status == 0:
            return Verdict(GOOD, _last_summary(lines) or "passed", [], seconds, log)
        if status == 1:
            # A trace's verdict first: it names the divergence, the test only its symptom.
            summary = [line.strip() for line in lines if _TRACE_SUMMARY.match(line)]
            summary += [line.strip() for line in lines if _TEST_SUMMARY.match(line)]
            why = summary[0] if summary else _last_summary(lines) or "failed"
            return Verdict(BAD, why, _failure(lines), seconds, log)
        return Verdict(SKIP, _skip_reason(status, lines), [], seconds, log)


def _last_summary(lines: list[str]) -> str:
    """pytest's closing line ("= 1 passed in 3.2s ="), or replay's count."""
    for line in reversed(lines):
        text = line.strip().strip("=").strip()
        if text and (" in " in text or "replayed" in text):
            return text
    return ""


def _skip_reason(status: int, lines: list[str]) -> str:
    said = [line.strip() for line in lines if line.startswith(("roadtest:", "ERROR:"))]
    if said:
        return said[-1]
    if status == 5:
        return "no tests ran (pytest exit status 5)"
    return f"the oracle ended with exit status {status}"


def _failure(lines: list[str]) -> list[str]:
    """The run's account of what failed: pytest's FAILURES section (its first
    _FAILURE_LINES lines), then the short summary and replay's verdicts on traces."""
    start = next((i for i, line in enumerate(lines) if " FAILURES " in line), len(lines))
    end = next((i for i, line in enumerate(lines) if "short test summary" in line), len(lines))
    section = lines[start:end] if start < end else []
    if len(section) > _FAILURE_LINES:
        section = [*section[:_FAILURE_LINES], f"... ({len(section)} lines in all)"]
    summary = [x for x in lines if _TEST_SUMMARY.match(x) or _TRACE_SUMMARY.match(x)]
    return [*section, *summary]
