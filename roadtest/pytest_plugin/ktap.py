"""A run's results as KTAP, the kernel's test-result format
(Documentation/dev-tools/ktap.rst), for kernel CI and `kunit.py parse`.

Each test file is one suite, a nested test whose subtests are the file's test
cases, in the order they finished:

    KTAP version 1
    1..1
      KTAP version 1
      # Subtest: tests/drivers/iio/light/test_opt3001.py
      1..2
      # machine: UML 6.12.118-roadtest
      ok 1 test_illuminance
      # <the failure and the test's kernel log, one diagnostic line each>
      not ok 2 test_interrupt
    not ok 1 tests/drivers/iio/light/test_opt3001.py

A skipped test is `ok N name # SKIP reason`; an error outside the test's call
(a fixture, the guest's teardown verdict) is `not ok N name # ERROR ...`, a
test past its time limit `not ok N name # TIMEOUT 300 seconds`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest

from roadtest.atomic import write_atomically
from roadtest.text import printable

_INDENT = "  "  # one nesting level (ktap.rst, "Nested tests")


@dataclass
class _Case:
    name: str
    failed: bool = False
    directive: str = ""  # "SKIP ...", "ERROR ...", "XFAIL ..."
    diagnostics: list[str] = field(default_factory=list)
    machine: str = ""  # the guest it ran on (Machine.describe)


def _text(value: str) -> str:
    """A description or directive: KTAP allows any character but `#` and line breaks, and
    what a guest printed must not reach a terminal as escapes."""
    value = value.replace("#", "%23")
    return "".join(c if c.isprintable() else " " for c in value).strip()


def _skip_reason(report: pytest.TestReport) -> str:
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        reason = str(longrepr[2])
        return reason.removeprefix("Skipped: ")
    return ""


class KtapReport:
    """Collects test reports and writes them to `path` when the session ends."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.suites: dict[str, dict[str, _Case]] = {}  # file -> test name -> case

    def _case(self, nodeid: str) -> _Case:
        file, _, name = nodeid.partition("::")
        cases = self.suites.setdefault(file, {})
        return cases.setdefault(nodeid, _Case(name or file))

    @pytest.hookimpl
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        case = self._case(report.nodeid)
        case.machine = str(dict(report.user_properties).get("machine", case.machine))
        if report.skipped:
            if hasattr(report, "wasxfail"):
                case.directive = f"XFAIL {report.wasxfail}".rstrip()
            elif not case.failed:
                case.directive = f"SKIP {_skip_reason(report)}".rstrip()
            return
        if not report.failed:
            return
        case.failed = True
        case.diagnostics += report.longreprtext.splitlines()
        for title, text in report.sections:  # the test's kernel and backend log lines
            if title.startswith("roadtest "):
                case.diagnostics += [f"--- {title} ---", *text.splitlines()]
        limit = dict(report.user_properties).get("timeout")
        if limit is not None:
            case.directive = f"TIMEOUT {limit:g} seconds"
        elif report.when != "call" and not case.directive.startswith("ERROR"):
            crash = getattr(report.longrepr, "reprcrash", None)
            headline = str(getattr(crash, "message", "")).partition("\n")[0]
            case.directive = f"ERROR in {report.when}: {headline}".rstrip(": ")

    @pytest.hookimpl
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        write_atomically(self.path, self.render())

    @pytest.hookimpl
    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        terminalreporter.write_line(f"KTAP results: {self.path}")

    def render(self) -> str:
        lines = ["KTAP version 1", f"1..{len(self.suites)}"]
        for number, (file, cases) in enumerate(self.suites.items(), start=1):
            lines += [
                f"{_INDENT}KTAP version 1",
                f"{_INDENT}# Subtest: {_text(file)}",
                f"{_INDENT}1..{len(cases)}",
            ]
            for index, case in enumerate(cases.values(), start=1):
                if case.machine:
                    lines.append(f"{_INDENT}# machine: {printable(case.machine)}")
                lines += [f"{_INDENT}# {printable(line)}".rstrip() for line in case.diagnostics]
                result = "not ok" if case.failed else "ok"
                directive = f" # {_text(case.directive)}" if case.directive else ""
                lines.append(f"{_INDENT}{result} {index} {_text(case.name)}{directive}")
            failed = any(case.failed for case in cases.values())
            lines.append(f"{'not ok' if failed else 'ok'} {number} {_text(file)}")
        return "\n".join(lines) + "\n"
