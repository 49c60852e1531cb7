"""The pytest plugin (entry point `pytest11`): guests, devices and failure reports.

Fixtures:
  guest            the worker's guest session (booted on first use, rebooted
                   after a crash), with the test's kernel and backend logs kept
  roadtest_session the same object, session-scoped, for fixtures of your own
"""

from __future__ import annotations

import logging
import os
import types
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from roadtest.errors import RoadtestError
from roadtest.guest.protocol import ProtocolError
from roadtest.testing import tracecmd_capture
from roadtest.testing.devices import Device, I2CDevice, PlatformDevice

if TYPE_CHECKING:
    from roadtest.testing.hooks import DeviceHooks
    from roadtest.testing.session import RoadtestSession

_KEY_LOG = pytest.StashKey["TestLog"]()
_DEVICES = pytest.StashKey[list[Device]]()
_CALL_FAILED = pytest.StashKey[bool]()


class BackendLog(logging.Handler):
    """Keeps the backend's log records so a failing test can show its own."""

    def __init__(self) -> None:
        super().__init__(level=logging.DEBUG)
        self.records: list[str] = []
        self.setFormatter(
            logging.Formatter("%(relativeCreated)10.1f ms %(levelname)s %(name)s: %(message)s")
        )

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(self.format(record))


_backend_log = BackendLog()


class TestLog:
    def __init__(self, session: RoadtestSession, console_mark: int, backend_mark: int) -> None:
        self.session = session
        self.guest = session.guest
        self.console_mark = console_mark
        self.backend_mark = backend_mark

    def flush_console(self) -> None:
        """Make sure the kernel's lines so far reached the host, by waiting for a marker."""
        guest = self.guest
        if guest is None or guest.console is None or not guest.alive:
            return
        marker = f"roadtest: report {self.console_mark}"
        try:
            guest.agent.kmsg(marker)
        except (OSError, ProtocolError):
            return
        guest.console.wait_for(marker, self.console_mark, timeout=2.0)

    def kernel_lines(self) -> list[str]:
        if self.guest is None or self.guest.console is None:
            return []
        return self.guest.console.lines_since(self.console_mark)

    def backend_lines(self) -> list[str]:
        return _backend_log.records[self.backend_mark :]


def repo_root() -> Path:
    """The roadtest checkout: kernel-patches/ and the tests' config fragments live there."""
    env = os.environ.get("ROADTEST_ROOT")
    if env:
        return Path(env).resolve()
    return Path(__file__).resolve().parents[2]


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("roadtest")
    group.addoption(
        "--roadtest-cpu",
        type=int,
        default=None,
        help="host CPU for the guest and this test process (default: one per xdist worker)",
    )
    group.addoption(
        "--roadtest-no-time-travel",
        action="store_true",
        help="run the guest clock in real time (driver delays take their real time)",
    )
    group.addoption("--roadtest-workdir", default=None, help="where guests keep sockets and logs")
    group.addoption(
        "--roadtest-module",
        action="append",
        default=[],
        metavar="KO",
        help="load this module (e.g. a driver built out of tree) in place of the kernel's "
        "module of the same name; may be repeated",
    )
    group.addoption(
        "--roadtest-record",
        default=None,
        metavar="DIR",
        help="write a trace of every I2C device each test uses under DIR/<chip>/",
    )
    group.addoption(
        "--roadtest-replay",
        default=None,
        metavar="DIR",
        help="answer each device from its golden trace under DIR instead of its model",
    )
    group.addoption(
        "--roadtest-trace-cmd",
        default=None,
        metavar="DIR",
        help="capture each test's i2c trace events with trace-cmd in the guest, into "
        "DIR/<test>.dat (for `roadtest import trace-cmd`)",
    )
    group.addoption(
        "--roadtest-replay-results",
        default=None,
        metavar="DIR",
        help="with --roadtest-replay: write each trace's outcome to DIR (for `roadtest replay`)",
    )


def pytest_configure(config: pytest.Config) -> None:
    logger = logging.getLogger("roadtest")
    logger.addHandler(_backend_log)
    if logger.level == logging.NOTSET:
        logger.setLevel(logging.INFO)


def _declared_devices(module: types.ModuleType) -> list[Device]:
    found: list[Device] = []
    for name, value in vars(module).items():
        if isinstance(value, (I2CDevice, PlatformDevice)):
            if not value.origin:
                value.origin = f"{module.__name__}.{name}"
            found.append(value)
    return found


def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    devices: list[Device] = []
    seen: set[int] = set()
    for item in items:
        module = getattr(item, "module", None)
        if module is None or id(module) in seen:
            continue
        seen.add(id(module))
        devices.extend(_declared_devices(module))
    config.stash[_DEVICES] = devices


def _worker() -> tuple[str, int]:
    name = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
    index = int(name.removeprefix("gw")) if name.removeprefix("gw").isdigit() else 0
    return name, index


@pytest.fixture(scope="session")
def roadtest_session(request: pytest.FixtureRequest) -> Iterator[RoadtestSession]:
    from roadtest.kernel import default_cache_dir, ensure_kernel
    from roadtest.testing.session import RoadtestSession, default_workdir

    config = request.config
    worker, index = _worker()
    cpu = config.getoption("--roadtest-cpu")
    if cpu is None:
        cpu = index % (os.cpu_count() or 1)
    # The backend thread (started below, inheriting this) shares the guest's CPU: an I2C
    # round trip took half the time that way (bench/bench_foundation.py).
    os.sched_setaffinity(0, {cpu})
    workdir_opt = config.getoption("--roadtest-workdir")
    cache = default_cache_dir()
    workdir = Path(workdir_opt) / worker if workdir_opt else default_workdir(cache, worker)
    try:
        kernel = ensure_kernel(repo_root())
        session = RoadtestSession(
            kernel,
            config.stash.get(_DEVICES, []),
            workdir,
            cpu=cpu,
            time_travel=not config.getoption("--roadtest-no-time-travel"),
            hooks=_device_hooks(config, kernel.release),
            module_overrides=[Path(p) for p in config.getoption("--roadtest-module")],
        )
        session.start()
    except RoadtestError as err:
        pytest.exit(f"roadtest: {err}", returncode=3)
    try:
        yield session
    finally:
        session.stop()


def _device_hooks(config: pytest.Config, kernel_release: str) -> DeviceHooks | None:
    record = config.getoption("--roadtest-record")
    replay = config.getoption("--roadtest-replay")
    if record and replay:
        raise RoadtestError("--roadtest-record and --roadtest-replay cannot be used together")
    if record:
        from roadtest.recorder.recording import RecordingHooks

        return RecordingHooks(Path(record), kernel_release)
    if replay:
        from roadtest.replayer.player import ReplayHooks

        results = config.getoption("--roadtest-replay-results")
        return ReplayHooks(Path(replay), Path(results) if results else None)
    return None


@pytest.fixture
def guest(
    request: pytest.FixtureRequest, roadtest_session: RoadtestSession
) -> Iterator[RoadtestSession]:
    session = roadtest_session
    guest = session.ensure_guest()
    assert guest.console is not None
    test_log = TestLog(session, guest.console.mark(), len(_backend_log.records))
    request.node.stash[_KEY_LOG] = test_log
    errors_before = len(session.backend.errors)
    problems_before = len(session.problems)
    session.test_id = request.node.nodeid
    guest.agent.kmsg(f"roadtest: start {request.node.nodeid}")
    tracecmd_capture.start_test(request.config, guest)
    yield session
    session.detach_all()
    if request.session.exitstatus == pytest.ExitCode.INTERRUPTED:
        # Torn down after Ctrl-C/SIGTERM, outside any test: a failure raised here would
        # escape pytest.main as a traceback, and the guest was stopped mid-call anyway.
        session.test_id = ""
        return
    session.problems += tracecmd_capture.finish_test(request.config, guest, request.node.nodeid)
    session.test_id = ""
    if guest.alive:
        guest.agent.kmsg(f"roadtest: end {request.node.nodeid}")
    if request.node.stash.get(_CALL_FAILED, False):
        return  # the report already shows the logs; don't add an error on top
    model_errors = session.backend.errors[errors_before:]
    if model_errors:
        pytest.fail(
            "a model raised while serving the driver:\n" + "\n".join(str(e) for e in model_errors)
        )
    problems = session.problems[problems_before:]
    if problems:
        pytest.fail("\n".join(problems), pytrace=False)
    trouble = guest.console.trouble(test_log.console_mark)
    if trouble or not guest.alive:
        pytest.fail("the guest kernel reported trouble:\n" + "\n".join(trouble or ["guest died"]))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if report.when == "call" and report.failed:
        item.stash[_CALL_FAILED] = True
    test_log = item.stash.get(_KEY_LOG, None)
    if test_log is None or not report.failed:
        return report
    test_log.flush_console()
    kernel = test_log.kernel_lines()
    backend = test_log.backend_lines()
    report.sections.append(("roadtest kernel log", "\n".join(kernel) or "(no kernel messages)"))
    report.sections.append(("roadtest backend log", "\n".join(backend) or "(no backend messages)"))
    if test_log.guest is not None:
        report.sections.append(("roadtest guest", f"console: {test_log.guest.console_log}"))
    return report
