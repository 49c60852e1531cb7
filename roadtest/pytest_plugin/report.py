"""What a run reports: the header, the terminal summary, and a failing test's sections
(kernel and backend logs, the reproducer of a Hypothesis example); a trace that could not
be written (a full disk) stops the run after its test."""

from __future__ import annotations

from collections.abc import Generator
from pathlib import Path

import pytest

from roadtest.checkout import repo_root
from roadtest.errors import RoadtestError
from roadtest.fuzz import profiles
from roadtest.kernel import default_cache_dir
from roadtest.kernel.tree import open_tree
from roadtest.pytest_plugin import examples
from roadtest.pytest_plugin.options import run_options
from roadtest.pytest_plugin.stash import CALL_FAILED, RUNNER, UNSUPPORTED
from roadtest.pytest_plugin.verdict import VERDICT
from roadtest.testing import coverage
from roadtest.trace.format import TraceWriteError


def pytest_report_header(config: pytest.Config) -> list[str]:
    options = run_options(config)
    lines = [f"roadtest machine: {options.machine.describe()}", f"roadtest time: {options.time}"]
    if options.tree is not None:
        try:
            tree = open_tree(options.tree, options.machine.target).describe_line()
        except RoadtestError as err:
            tree = str(err)
        lines.append(f"roadtest tree: {tree}")
    return lines


@pytest.hookimpl(trylast=True)
def pytest_terminal_summary(
    terminalreporter: pytest.TerminalReporter, config: pytest.Config
) -> None:
    """The tests this machine could not run; the coverage summary, once every guest has
    ended (xdist: on the controller)."""
    unsupported = config.stash.get(UNSUPPORTED, [])
    if unsupported:
        terminalreporter.write_line(
            f"roadtest: {len(unsupported)} tests unsupported on this machine, in this "
            "time mode or on this kernel (see their skip reasons, -rs), the first: "
            f"{unsupported[0]}",
            yellow=True,
        )
    options = run_options(config)
    out = options.coverage
    if out is None or hasattr(config, "workerinput"):
        return
    terminalreporter.section("roadtest driver coverage")
    kernel = options.built_kernel(repo_root())
    if kernel is None:
        terminalreporter.write_line("no coverage kernel: no guest ran")
        return
    try:
        terminalreporter.write_line(coverage.report(out, kernel))
    except RoadtestError as err:
        terminalreporter.write_line(f"roadtest: {err}")


# Options a failing example's reproducer keeps: they change the kernel, modules or examples.
# Run options a failing example's reproducer keeps: they change the machine, the kernel,
# its modules or the examples (by RunOptions dest).
_REPRODUCED = {
    "roadtest_machine",
    "roadtest_kernel",
    "roadtest_tree",
    "roadtest_series",
    "roadtest_module",
    "roadtest_hostile",
    "roadtest_sanitizers",
    "roadtest_bootargs",
    "roadtest_hang_limit",
    "roadtest_no_time_travel",
    "roadtest_time",
}
_HYPOTHESIS_OPTIONS = ("--hypothesis-profile", "--hypothesis-seed")


def _reproducer(item: pytest.Item) -> str:
    """The command that runs `item` again as this run did (quoted for a shell)."""
    import shlex

    from roadtest import run_options

    values, rest = run_options.take(list(item.config.invocation_params.args))
    kept = run_options.as_arguments({d: v for d, v in values.items() if d in _REPRODUCED})
    for i, arg in enumerate(rest):
        name, eq, _ = arg.partition("=")
        if name in _HYPOTHESIS_OPTIONS:
            kept += [arg] if eq or i + 1 >= len(rest) else [arg, rest[i + 1]]
    return shlex.join(["roadtest", "run", item.nodeid, *kept])


def _report_examples(
    item: pytest.Item,
    call: pytest.CallInfo[None],
    report: pytest.TestReport,
    runner: examples.ExampleRunner,
) -> None:
    """A failing Hypothesis test's report: how to run its minimal example again, and for a
    failure that did not happen again (flaky), the kernel's lines of both runs."""
    from hypothesis import settings
    from hypothesis.errors import Flaky

    lines = [_reproducer(item)]
    current = settings()  # the loaded profile's values
    if current.database is not None:
        lines.append(
            f"(the example database, {profiles.database_dir(default_cache_dir())}, keeps the "
            "minimal example: Hypothesis tries it first)"
        )
    elif current.derandomize:
        lines.append("(this profile is derandomized: the same examples run again)")
    report.sections.append(("roadtest reproduce", "\n".join(lines)))
    if call.excinfo is not None and isinstance(call.excinfo.value, Flaky):
        report.sections.append(
            ("roadtest kernel log of the failing run", "\n".join(runner.failed_lines) or "(none)")
        )
        report.sections.append(
            ("roadtest kernel log of the passing re-run", "\n".join(runner.last_lines) or "(none)")
        )
    if runner.console_logs:
        report.sections.append(
            ("roadtest replaced guests", "console logs: " + ", ".join(runner.console_logs))
        )


def _trace_write_error(exc: BaseException | None) -> TraceWriteError | None:
    """The trace write that failed in `exc` or what it came from (a full disk), if any."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, TraceWriteError):
            return exc
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return None


def _headline(report: pytest.TestReport) -> str:
    """The failure's first line, as pytest's short summary shows it."""
    crash = getattr(report.longrepr, "reprcrash", None)
    text = crash.message if crash is not None else str(report.longrepr)
    where = "" if report.when == "call" else f" (in its {report.when})"
    return text.partition("\n")[0] + where


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if report.when == "call" and report.failed:
        item.stash[CALL_FAILED] = True
    unwritable = _trace_write_error(call.excinfo.value if call.excinfo else None)
    if unwritable is not None and not item.session.shouldstop:
        # A full disk fails every test after it the same way: one is enough.
        item.session.shouldstop = f"roadtest: {unwritable}"
    results = run_options(item.config).replay_results
    if results and report.failed:
        from roadtest.replayer.results import add_failed_test

        add_failed_test(Path(results), item.nodeid, _headline(report))
    elif results and report.skipped:
        from roadtest.replayer.results import add_skipped_test

        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        add_skipped_test(Path(results), item.nodeid, reason.removeprefix("Skipped: "))
    test_verdict = item.stash.get(VERDICT, None)
    if test_verdict is not None and test_verdict.machine is not None and report.when == "call":
        # Which machine the test ran on (junit's properties, KTAP's diagnostics).
        report.user_properties.append(("machine", test_verdict.machine.describe()))
    if test_verdict is None or not report.failed:
        return report
    runner = item.stash.get(RUNNER, None)
    if runner is not None and report.when == "call":
        _report_examples(item, call, report, runner)
    if test_verdict.timed_out is not None:
        report.user_properties.append(("timeout", test_verdict.timed_out))  # KTAP's TIMEOUT
    test_verdict.flush_console()
    kernel = test_verdict.kernel_lines()
    backend = test_verdict.backend_lines()
    if test_verdict.replay_problems:
        report.sections.append(
            ("roadtest replay", "\n".join(map(str, test_verdict.replay_problems)))
        )
    report.sections.append(("roadtest kernel log", "\n".join(kernel) or "(no kernel messages)"))
    report.sections.append(("roadtest backend log", "\n".join(backend) or "(no backend messages)"))
    if test_verdict.machine is not None:
        report.sections.append(("roadtest guest", f"console: {test_verdict.machine.console_log}"))
    return report
