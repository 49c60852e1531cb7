"""The fixtures: `roadtest_session` (the worker's guest session, session-scoped) and `guest`
(the same session, made ready for one test: its devicetree, its marks, its verdict)."""

from __future__ import annotations

import contextlib
import os
import warnings
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

import pytest

from roadtest.checkout import repo_root
from roadtest.errors import RoadtestError
from roadtest.guest.protocol import ProtocolError
from roadtest.kernel import default_cache_dir
from roadtest.machine.base import TimeMode
from roadtest.pytest_plugin import examples, gdb, tracecmd_capture, verdicts
from roadtest.pytest_plugin.backend_log import BACKEND_LOG
from roadtest.pytest_plugin.collection import collected
from roadtest.pytest_plugin.kernel_marks import MARK, outside_range
from roadtest.pytest_plugin.options import option_values, run_options, xdist_worker
from roadtest.pytest_plugin.stash import (
    CALL_FAILED,
    DEVICES,
    EXAMPLE_STATS,
    LAST_TEST,
    RUNNER,
    UNSUPPORTED,
)
from roadtest.pytest_plugin.verdict import VERDICT, TestVerdict
from roadtest.run_options import RunOptions
from roadtest.testing import coverage
from roadtest.testing.hooks import LiveHooks

if TYPE_CHECKING:
    from roadtest.machine.base import Machine
    from roadtest.testing.devices import Device
    from roadtest.testing.hooks import DeviceHooks
    from roadtest.testing.session import RoadtestSession

# Added to a replay divergence while the guest runs in basic time-travel mode.
REPLAY_TIMING_NOTE = (
    "note: the guest runs in basic time-travel mode, in which host load can change this "
    "sequence (runtime-PM autosuspend and kernel timers fire at different points when the "
    "host answers slowly): replay under --roadtest-time=sim, or re-run on an idle machine, "
    "before blaming the driver"
)


@pytest.fixture(scope="session")
def roadtest_session(request: pytest.FixtureRequest) -> Iterator[RoadtestSession]:
    from roadtest.backend.server import BackendStartError
    from roadtest.machine.base import GuestError

    try:
        session = open_session(request.config)
    except (RoadtestError, GuestError, BackendStartError) as err:
        # No guest for any test: one line, not the same error at the setup of every test.
        pytest.exit(f"roadtest: {err}", returncode=3)
    try:
        yield session
    finally:
        session.stop()


def open_session(
    config: pytest.Config,
    groups: Sequence[Sequence[Device]] | None = None,
    terminal: int | None = None,
) -> RoadtestSession:
    """The worker's guest session as the run's options say, booted (RoadtestError if it
    cannot be). `groups`: the sets of devices used together (default: each collected test
    module's); `terminal`: a host pty for an interactive shell in the guest (BootConfig)."""
    from roadtest.testing.session import RoadtestSession, default_workdir

    interactive = terminal is not None
    # A terminal's input reaches the guest at no time of the calendar: the shell's clock
    # is one a terminal can use (RunOptions.parse says so in one line otherwise).
    options = RunOptions.parse(option_values(config), interactive=True) if interactive else None
    options = options or run_options(config)
    worker, index = xdist_worker()
    cpu = options.cpu
    if cpu is None:
        # One per xdist worker, among the CPUs this process may use: a run started on a
        # pinned CPU (make test's second lane, a bisection's oracle) stays there.
        allowed = sorted(os.sched_getaffinity(0))
        cpu = allowed[index % len(allowed)]
    # The backend thread (started below, inheriting this) shares the guest's CPU: an I2C
    # round trip took half the time that way (bench/bench_foundation.py).
    os.sched_setaffinity(0, {cpu})
    cache = default_cache_dir()
    workdir = options.workdir / worker if options.workdir else default_workdir(cache, worker)
    if groups is None:
        groups = list(collected(config).values())
    machine = options.machine
    # A tree's build is brought up to date by the run's command (or the plugin's
    # configure), once: each test process boots it as it is.
    kernel = options.kernel(repo_root(), build=options.tree is None)
    session = RoadtestSession(
        kernel,
        [],
        workdir,
        groups=groups,
        machine=machine,
        cpu=cpu,
        time=options.time,
        boot_timeout=options.boot_timeout,
        hooks=_device_hooks(options, kernel.release),
        module_overrides=list(options.modules),
        boot_args=[*options.variant.boot_args, *options.boot_args],
        terminal=terminal,
        debugger=gdb.waiter(config) if options.gdb else None,
    )
    if options.modules_used is not None:
        session.modules_log = options.modules_used
    if options.coverage is not None:
        snapshots = coverage.Snapshots(options.coverage, kernel, worker)
        session.before_guest_ends.append(snapshots.take)
    try:
        session.start()
    except BaseException:
        session.stop()  # the backend thread, and a guest that started but did not answer
        raise
    return session


def _device_hooks(options: RunOptions, kernel_release: str) -> DeviceHooks | None:
    """What answers the devices: recorded models, golden traces, or (None) the models."""
    if options.record is not None:
        from roadtest.recorder.recording import RecordingHooks

        return RecordingHooks(options.record, kernel_release)
    if options.replay is not None:
        from roadtest.replayer.player import ReplayHooks

        return ReplayHooks(
            options.replay,
            options.replay_results,
            options.replay_tolerate_repeats,
            kernel_release,
        )
    return None


@pytest.fixture(autouse=True)
def roadtest_kernel_range(request: pytest.FixtureRequest) -> None:
    """A test marked roadtest_kernel(RANGE) runs only on a kernel in its range, whether it
    takes `guest` or reaches the session otherwise: first of its fixtures, before a guest
    boots for it. An unmarked test does not start a session here."""
    if request.node.get_closest_marker(MARK) is None:
        return
    session: RoadtestSession = request.getfixturevalue("roadtest_session")
    elsewhere = outside_range(request.node, session.kernel.release)
    if elsewhere is not None:
        request.config.stash.setdefault(UNSUPPORTED, []).append(request.node.nodeid)
        pytest.skip(elsewhere)  # counted in the terminal summary too: never silent


@pytest.fixture
def guest(
    request: pytest.FixtureRequest, roadtest_session: RoadtestSession
) -> Iterator[RoadtestSession]:
    session = roadtest_session
    node_id = request.node.nodeid
    start = f"roadtest: start {node_id}"
    guest = _guest_for(request.config, session, start)
    module = getattr(request, "module", None)
    declared = request.config.stash.get(DEVICES, {}).get(getattr(module, "__name__", ""), [])
    unsupported = session.machine_type.unsupported(any("interrupts" in d.dts for d in declared))
    if unsupported is None:
        unsupported = session.cannot_carry(declared)
    needs = request.node.get_closest_marker("roadtest_time")
    if unsupported is None and needs is not None and needs.args[0] != session.time:
        unsupported = f"needs --roadtest-time={needs.args[0]} (this run: {session.time})"
    if unsupported is not None:
        request.config.stash.setdefault(UNSUPPORTED, []).append(node_id)
        pytest.skip(unsupported)  # the terminal summary counts them too: never silent
    if not all(session.tree.has(device) for device in declared):
        # The module's devices went into another devicetree than the running guest's.
        session.require(*declared)
        guest = session.ensure_guest()
        guest.agent.kmsg(start)
    assert guest.console is not None
    test_verdict = TestVerdict(session, guest.console.mark(), len(BACKEND_LOG.records))
    request.node.stash[VERDICT] = test_verdict
    session.on_replaced = test_verdict.follow
    if session.time == TimeMode.TRAVEL and run_options(request.config).replay is not None:
        # A player's divergence, whether it fails the call (the driver's EIO) or shows
        # when the device is detached, gets the line.
        test_verdict.note = REPLAY_TIMING_NOTE
    problems_before = len(session.problems)
    session.test_id = node_id
    session.log_start = (guest, test_verdict.console_mark)
    test_verdict.pids = session.guest_pids()
    tracecmd_capture.start_test(request.config, guest)
    live = contextlib.ExitStack()
    hang = request.node.get_closest_marker("roadtest_hang_limit")
    if hang is not None:
        live.enter_context(session.hang_limit(float(hang.args[0])))
    if needs is not None and run_options(request.config).record is not None:
        # A timing test's I/O is its clock's (roadtest_time marker): a replay on another
        # clock could not play its trace, so a recording leaves it out; it runs live.
        live.enter_context(session.hooks_wrapped(lambda inner: LiveHooks()))
    handle = _hypothesis_handle(request.node)
    if handle is None:
        yield session
    else:
        runner = examples.ExampleRunner(
            session,
            node_id,
            lambda guest: TestVerdict(session, _console_mark(guest), len(BACKEND_LOG.records)),
            request.config.stash[EXAMPLE_STATS],
            None if run_options(request.config).gdb else run_options(request.config).hang_limit,
        )
        request.node.stash[RUNNER] = runner
        inner = handle.inner_test
        handle.inner_test = runner.wrap(inner)
        try:
            yield session
        finally:
            handle.inner_test = inner
        if session.machine is not None and session.machine is not test_verdict.machine:
            test_verdict.follow(session.machine)  # examples replaced the guest: report the last
    session.on_replaced = None
    if test_verdict.machine is not None:
        guest = test_verdict.machine  # another, if the test asked for a device its tree lacked
    assert guest.console is not None
    if request.session.exitstatus == pytest.ExitCode.INTERRUPTED:
        # Torn down after Ctrl-C/SIGTERM, outside any test: a failure raised here would
        # escape pytest.main as a traceback, and the guest was stopped mid-call anyway.
        session.detach_all()
        live.close()
        session.test_id = ""
        return
    # Quiesce before the verdict: nothing this test started may act during the next one.
    strays: list[str] = []
    if guest.alive:
        try:
            strays = session.kill_strays(test_verdict.pids)
        except (OSError, ProtocolError):
            pass  # the guest died meanwhile: reported below
    session.detach_all()
    live.close()
    device_problems = [str(p) for p in session.problems[problems_before:]]
    capture_problems = tracecmd_capture.finish_test(request.config, guest, node_id)
    session.test_id = ""
    # Every kernel line up to here reached the host: trouble so far is this test's.
    test_verdict.flush_console(f"roadtest: end {node_id}")
    if guest.alive:
        request.config.stash[LAST_TEST] = (node_id, guest.console.mark())
    if request.node.stash.get(CALL_FAILED, False):
        return  # the report already shows the logs; don't add an error on top
    failures: list[str] = []
    death = verdicts.guest_death(guest, test_verdict.console_mark)
    if test_verdict.timed_out is not None:
        death = str(verdicts.timed_out(guest, test_verdict.console_mark, test_verdict.timed_out))
    if death is not None:
        failures.append(death)
    errors = test_verdict.new_model_errors()
    model = verdicts.model_outcome(errors, test_verdict.note_for(errors))
    if model is not None:
        failures.append(f"{type(model).__name__}: {model}")
    if strays:
        failures.append(
            "the test left processes running in the guest (killed now; wait for what a "
            "test starts): " + "; ".join(strays)
        )
    failures += device_problems
    note = test_verdict.note_for(session.problems[problems_before:])
    if device_problems and note and model is None:
        failures.append(note)
    failures += capture_problems
    trouble = guest.console.trouble(test_verdict.console_mark)
    if trouble and death is None:
        failures.append("the guest kernel reported trouble:\n" + "\n".join(trouble))
    if failures:
        pytest.fail("\n".join(failures), pytrace=False)


def _hypothesis_handle(item: pytest.Item) -> Any:
    """The handle whose `inner_test` runs one example, for a Hypothesis test; else None."""
    handle = getattr(getattr(item, "obj", None), "hypothesis", None)
    return handle if hasattr(handle, "inner_test") else None


def _console_mark(guest: Machine) -> int:
    assert guest.console is not None
    return guest.console.mark()


def _guest_for(config: pytest.Config, session: RoadtestSession, start: str) -> Machine:
    """A live guest with `start` in its log. One that died after the last test ended (too
    late to fail that test) is replaced, with a warning naming that test."""
    guest = session.ensure_guest()
    try:
        guest.agent.kmsg(start)
        return guest
    except ProtocolError as exc:
        last, mark = config.stash.get(LAST_TEST, ("", 0))
        death = verdicts.guest_death(guest, mark, exc) or str(exc)
        warnings.warn(
            pytest.PytestWarning(f"the guest died after {last or 'the last test'} ended: {death}"),
            stacklevel=1,
        )
    guest = session.boot()
    guest.agent.kmsg(start)
    return guest
