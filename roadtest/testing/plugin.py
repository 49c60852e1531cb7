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
import warnings
from collections.abc import Generator, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from roadtest.backend.server import MAX_SOCKET_PATH, socket_paths
from roadtest.checkout import repo_root
from roadtest.errors import RoadtestError
from roadtest.fuzz import profiles
from roadtest.guest.protocol import ProtocolError
from roadtest.machine.base import TIME_MODES
from roadtest.replayer.failures import DamagedTrace, ReplayFailure
from roadtest.testing import coverage, examples, gdb, timeouts, tracecmd_capture, verdicts
from roadtest.testing.devices import Device, I2CDevice, PlatformDevice
from roadtest.testing.ktap import KtapReport

if TYPE_CHECKING:
    from roadtest.arch import Target
    from roadtest.backend.device import BackendError
    from roadtest.kernel import Variant
    from roadtest.machine.base import Machine
    from roadtest.testing.hooks import DeviceHooks
    from roadtest.testing.session import RoadtestSession

_KEY_LOG = pytest.StashKey["TestLog"]()
# The devices each collected test module declares, by module file: a group tests use together.
_DEVICES = pytest.StashKey[dict[str, list[Device]]]()
# Tests the machine cannot run as the host has it (MachineType.unsupported).
_UNSUPPORTED = pytest.StashKey[list[str]]()
_CALL_FAILED = pytest.StashKey[bool]()
_BOOT_ARGS = pytest.StashKey[list[str]]()  # --roadtest-bootargs, split
# The last test that ended with the guest alive, and the console position then.
_LAST_TEST = pytest.StashKey[tuple[str, int]]()
_RUNNER = pytest.StashKey["examples.ExampleRunner"]()  # a Hypothesis test's
EXAMPLE_STATS = pytest.StashKey["examples.ExampleStats"]()  # the run's, for `roadtest fuzz`

# Added to a replay divergence while the guest runs in basic time-travel mode.
REPLAY_TIMING_NOTE = (
    "note: the guest runs in basic time-travel mode, in which host load can change this "
    "sequence (runtime-PM autosuspend and kernel timers fire at different points when the "
    "host answers slowly): replay under --roadtest-time=sim, or re-run on an idle machine, "
    "before blaming the driver"
)


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


def _default_cache() -> Path:
    from roadtest.kernel import default_cache_dir

    return default_cache_dir()


# At import, before any plugin's pytest_configure may load one (--hypothesis-profile).
profiles.register(_default_cache())


class TestLog:
    def __init__(self, session: RoadtestSession, console_mark: int, backend_mark: int) -> None:
        self.session = session
        self.guest = session.guest
        self.console_mark = console_mark
        self.backend_mark = backend_mark
        self.errors_mark = len(session.backend.errors)
        self.problems_mark = len(session.problems)
        self.pids: set[int] = set()  # the guest's processes when the test started
        self.note = ""  # a line for what the models report (see REPLAY_TIMING_NOTE)
        self.timed_out: float | None = None  # the limit, once the test ran past it
        self.replay_problems: list[Exception] = []  # found at detach, under the test's own failure

    def follow(self, guest: Machine) -> None:
        """The session replaced the test's live guest with one whose devicetree has a device
        the test asked for: the test goes on in it (a crashed guest is never followed)."""
        assert guest.console is not None
        self.guest, self.console_mark = guest, guest.console.mark()
        self.pids = self.session.guest_pids()

    def flush_console(self, marker: str = "") -> None:
        """Make sure the kernel's lines so far reached the host, by waiting for a marker."""
        guest = self.guest
        if guest is None or guest.console is None or not guest.alive:
            return
        marker = marker or f"roadtest: report {self.console_mark}"
        try:
            guest.flush_console(marker, self.console_mark, timeout=2.0)
        except (OSError, ProtocolError):
            return

    def new_model_errors(self) -> list[BackendError]:
        """What the backend recorded since the last look (each error is reported once)."""
        errors = self.session.backend.errors[self.errors_mark :]
        self.errors_mark += len(errors)
        return errors

    def new_problems(self) -> list[Exception]:
        """The hooks' verdicts on devices detached since the last look (a replay's failure)."""
        problems = self.session.problems[self.problems_mark :]
        self.problems_mark += len(problems)
        return problems

    def note_for(self, problems: Sequence[object]) -> str:
        """The host-load note, unless every problem (a replay's failure, or a backend error
        holding one) is a damaged trace: host load cannot cause that."""

        def damaged(problem: object) -> bool:
            return isinstance(getattr(problem, "exception", problem), DamagedTrace)

        return self.note if self.note and not all(damaged(p) for p in problems) else ""

    def cause(self, exc: BaseException | None) -> BaseException | None:
        """What to report in place of `exc` (None: the test passed): a model's exception or
        the replay's divergence, or how the guest died; None when there is nothing better
        than `exc`."""
        if self.timed_out is not None and self.guest is not None:
            return verdicts.timed_out(self.guest, self.console_mark, self.timed_out)
        errors = self.new_model_errors()
        first = errors[0].exception if errors else None
        if exc is not None and isinstance(first, ReplayFailure) and first.in_unbind:
            # The test failed on its own, and so unbound early: the replay diverged after.
            self.replay_problems.append(first)
            errors = []
        outcome = verdicts.model_outcome(errors, self.note_for(errors))
        if outcome is not None:
            return outcome
        problems = self.new_problems()
        if exc is None and problems and isinstance(problems[0], ReplayFailure):
            return verdicts.replay_outcome(problems, self.note_for(problems))
        # Found when a device was detached (the driver stopped early): a test that failed
        # on its own stopped early itself, so its exception stays the headline.
        self.replay_problems += problems
        if self.guest is not None and exc is not None and verdicts.is_guest_death(exc):
            controller = self.session.backend.controller
            running = controller.running_for if controller is not None else 0.0
            death = verdicts.guest_death(self.guest, self.console_mark, exc, running)
            if death is not None:
                return verdicts.GuestDied(death)
        return None

    def kernel_lines(self) -> list[str]:
        if self.guest is None or self.guest.console is None:
            return []
        lines = self.guest.console.lines_since(self.console_mark)
        return [line for line in lines if examples.MARKER not in line]

    def backend_lines(self) -> list[str]:
        return _backend_log.records[self.backend_mark :]


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("roadtest")
    group.addoption(
        "--roadtest-cpu",
        type=int,
        default=None,
        help="host CPU for the guest and this test process (default: one per xdist worker, "
        "among the CPUs this process may use)",
    )
    group.addoption(
        "--roadtest-boot-timeout",
        type=float,
        default=30.0,
        metavar="SECONDS",
        help="host seconds a guest may take to boot to its agent (default: %(default)s)",
    )
    group.addoption(
        "--roadtest-hang-limit",
        type=float,
        default=examples.DEFAULT_HANG_LIMIT,
        metavar="SECONDS",
        help="host seconds an agent request of a Hypothesis example may take before the "
        "guest counts as hung, is killed, and the example fails (default: %(default)s)",
    )
    group.addoption(
        "--roadtest-hostile",
        action="store_true",
        help="hostile-device mode: in place of a test file's tests, one Hypothesis test per "
        "I2C device it declares, behind a device that lies (`roadtest fuzz --hostile`)",
    )
    group.addoption(
        "--roadtest-time",
        choices=TIME_MODES,
        default=None,
        help="the guest's clock: sim, simulated time that roadtest owns (runs repeat event "
        "for event; idle guests sleep); travel, UML's basic time-travel (skips idle time); "
        "real, the host's clock (driver delays take their real time) (default: sim on UML, "
        "real on QEMU machines, whose clock is the host's; travel for an interactive shell)",
    )
    group.addoption(
        "--roadtest-no-time-travel",
        action="store_true",
        help="the same as --roadtest-time=real",
    )
    group.addoption("--roadtest-workdir", default=None, help="where guests keep sockets and logs")
    group.addoption(
        "--roadtest-machine",
        default="um",
        metavar="NAME",
        help="the kind of guest to boot (default: um, User-Mode Linux)",
    )
    group.addoption(
        "--roadtest-module",
        action="append",
        default=[],
        metavar="KO",
        help="load this module (e.g. a driver built out of tree) in place of the kernel's "
        "module of the same name; may be repeated",
    )
    group.addoption(
        "--roadtest-kernel",
        default=None,
        metavar="DIR",
        help="boot this kernel build (laid out as a cache entry: build/, modules/, "
        "stamp.json; a `roadtest bisect` step's) in place of the cached one",
    )
    group.addoption(
        "--roadtest-modules-used",
        default=None,
        metavar="FILE",
        help="append the name of every module the tests load to FILE, one a line",
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
        "--roadtest-replay-tolerate-repeats",
        action="store_true",
        help="with --roadtest-replay: let a register read identical to the previous one be "
        "made once more or once less than recorded (the kernel's own reads race the test's "
        "when the guest's clock is not simulated); without it, replay is exact",
    )
    group.addoption(
        "--roadtest-trace-cmd",
        default=None,
        metavar="DIR",
        help="capture each test's i2c trace events with trace-cmd in the guest, into "
        "DIR/<test>.dat (for `roadtest import trace-cmd`)",
    )
    group.addoption(
        "--roadtest-bootargs",
        default="",
        metavar="ARGS",
        help="extra kernel arguments for every guest of the run, quoted as on a kernel "
        "command line, e.g. 'opt3001.dyndbg=+p trace_event=i2c:*' (module.param=value "
        "reaches the module when roadtest loads it, as modprobe does)",
    )
    group.addoption(
        "--roadtest-coverage",
        default=None,
        metavar="DIR",
        help="run a gcov kernel and report the line and branch coverage of the driver modules "
        "the tests loaded: a summary, DIR/index.html and DIR/coverage.lcov",
    )
    group.addoption(
        "--roadtest-sanitizers",
        action="store_true",
        help="run the sanitizer kernel (KASAN, kmemleak; `roadtest build --sanitizers`), "
        "whose reports fail the test that caused them",
    )
    group.addoption(
        "--roadtest-ktap",
        default=None,
        metavar="FILE",
        help="write the run's results to FILE in KTAP, the kernel's test-result format "
        "(one suite per test file; `kunit.py parse FILE` reads it)",
    )
    group.addoption(
        gdb.OPTION,
        action="store_true",
        help="wait, once each guest booted, until gdb is attached to its kernel (roadtest "
        "prints the command); no time limits then",
    )
    group.addoption(
        "--roadtest-replay-results",
        default=None,
        metavar="DIR",
        help="with --roadtest-replay: write each trace's outcome to DIR (for `roadtest replay`)",
    )


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> None:
    """The default time limit, set before pytest-timeout reads its settings (configure)."""
    if config.pluginmanager.hasplugin("timeout"):
        timeouts.set_default_limit(config, limits=not gdb.enabled(config))


def pytest_report_header(config: pytest.Config) -> list[str]:
    from roadtest.machine import registry

    machine = registry.get(config.getoption("--roadtest-machine"))
    return [f"roadtest machine: {machine.describe()}", f"roadtest time: {time_mode(config)}"]


def time_mode(config: pytest.Config, interactive: bool = False) -> str:
    """How the guest's clock runs (machine.base.TIME_MODES): real on a machine other than
    UML (QEMU's clock is the host's: only UML's can travel or be simulated), else as
    asked, else sim; `interactive` (a terminal in the guest, whose input sim cannot
    time) makes the default travel."""
    from roadtest.machine import registry

    if registry.get(config.getoption("--roadtest-machine")).name != "um":
        return "real"
    if config.getoption("--roadtest-no-time-travel"):
        return "real"
    mode: str | None = config.getoption("--roadtest-time")
    if mode is not None:
        return mode
    return "travel" if interactive else "sim"


def pytest_configure(config: pytest.Config) -> None:
    _check_options(config)
    config.addinivalue_line(
        "markers",
        "roadtest_time(mode): the test needs the guest's clock in this mode (sim: a model's "
        "datasheet timing); in another it is skipped, and the run's summary says so",
    )
    from hypothesis import settings

    # roadtest's quick profile unless a roadtest profile is loaded (`roadtest fuzz`) or
    # the run names one (--hypothesis-profile): not Hypothesis's own "default", nor the
    # "ci" it loads by itself when CI is set, which keep the health check that fails every
    # @given test using the function-scoped `guest` fixture.
    chosen = config.getoption("--hypothesis-profile", None)
    if not chosen and not settings.get_current_profile_name().startswith("roadtest-"):
        settings.load_profile(profiles.QUICK)
    config.stash[EXAMPLE_STATS] = examples.ExampleStats()
    if config.getoption("--roadtest-hostile"):
        from roadtest.testing import hostile

        hostile.check_hostile_options(config)
        config.pluginmanager.register(hostile.HostileCollection(), "roadtest-hostile")
    config.stash[_BOOT_ARGS] = _boot_args(config.getoption("--roadtest-bootargs"))
    if config.pluginmanager.hasplugin("timeout"):
        config.pluginmanager.register(
            timeouts.GuestTimeouts(
                lambda item: item.stash.get(_KEY_LOG, None), limits=not gdb.enabled(config)
            ),
            "roadtest-timeouts",
        )
    ktap = config.getoption("--roadtest-ktap")
    if ktap and not hasattr(config, "workerinput"):  # xdist's controller sees all reports
        config.pluginmanager.register(KtapReport(_ktap_path(ktap)), "roadtest-ktap")
    out = config.getoption("--roadtest-coverage")
    if out and not hasattr(config, "workerinput"):
        coverage.start(Path(out).absolute())
    logger = logging.getLogger("roadtest")
    logger.addHandler(_backend_log)
    if logger.level == logging.NOTSET:
        logger.setLevel(logging.INFO)


@pytest.hookimpl(trylast=True)
def pytest_terminal_summary(
    terminalreporter: pytest.TerminalReporter, config: pytest.Config
) -> None:
    """The tests this machine could not run; the coverage summary, once every guest has
    ended (xdist: on the controller)."""
    unsupported = config.stash.get(_UNSUPPORTED, [])
    if unsupported:
        terminalreporter.write_line(
            f"roadtest: {len(unsupported)} tests unsupported on this machine or in this "
            f"time mode (see their skip reasons, -rs), the first: {unsupported[0]}",
            yellow=True,
        )
    out = config.getoption("--roadtest-coverage")
    if not out or hasattr(config, "workerinput"):
        return
    from roadtest.kernel import cached_kernel

    terminalreporter.section("roadtest driver coverage")
    kernel = cached_kernel(repo_root(), variant=coverage.kernel_variant(repo_root()))
    if kernel is None:
        terminalreporter.write_line("no coverage kernel: no guest ran")
        return
    try:
        terminalreporter.write_line(coverage.report(Path(out).absolute(), kernel))
    except RoadtestError as err:
        terminalreporter.write_line(f"roadtest: {err}")


def _ktap_path(value: str) -> Path:
    """Where the KTAP results go: known to be writable before the run, not after it."""
    path = Path(value).absolute()
    if path.is_dir() or not os.access(path.parent, os.W_OK | os.X_OK):
        why = (
            "is a directory: give the results file's name"
            if path.is_dir()
            else "its directory is not writable or missing"
        )
        raise pytest.UsageError(f"roadtest: --roadtest-ktap {value}: {why}")
    return path


def _boot_args(value: str) -> list[str]:
    """--roadtest-bootargs as kernel arguments, split as the kernel splits its command line
    (on blanks outside double quotes; the quotes stay, for the kernel's own parser)."""
    args: list[str] = []
    word, quoted = "", False
    for char in value + " ":
        if char == '"':
            quoted = not quoted
        if char.isspace() and not quoted:
            if word:
                args.append(word)
            word = ""
        else:
            word += char
    what = f"roadtest: --roadtest-bootargs {value}"
    if quoted:
        raise pytest.UsageError(f"{what}: a double quote is not closed")
    if "--" in args:  # the kernel passes what follows it to init, not to itself
        raise pytest.UsageError(f"{what}: '--' ends the kernel's arguments")
    return args


def _check_options(config: pytest.Config) -> None:
    """Bad --roadtest-cpu, --roadtest-module, --roadtest-machine or --roadtest-workdir: one
    line and exit 4 before any test runs, not the same traceback in every test."""
    cpu = config.getoption("--roadtest-cpu")
    if cpu is not None:
        # Try it: the CPUs allowed are the cpuset's, which may be more than this process
        # runs on now (a roadtest run started from a pinned one may pick another CPU).
        current = os.sched_getaffinity(0)
        try:
            os.sched_setaffinity(0, {cpu})
        except (OSError, ValueError):
            raise pytest.UsageError(
                f"roadtest: --roadtest-cpu {cpu}: not a CPU this process may run on "
                f"(this machine has {os.cpu_count()}, numbered from 0)"
            ) from None
        os.sched_setaffinity(0, current)
    for module in config.getoption("--roadtest-module"):
        if not Path(module).is_file():
            why = "not a file" if Path(module).exists() else "no such file"
            raise pytest.UsageError(f"roadtest: --roadtest-module {module}: {why}")
    from roadtest.machine import registry

    try:
        machine = registry.get(config.getoption("--roadtest-machine"))
    except RoadtestError as err:
        raise pytest.UsageError(f"roadtest: --roadtest-machine: {err}") from None
    if config.getoption("--roadtest-time") == "sim" and machine.name != "um":
        raise pytest.UsageError(
            f"roadtest: --roadtest-time=sim needs a UML guest (UML's time-travel=ext), "
            f"not {machine.name}: use --roadtest-time=real"
        )
    gdb.check(config)
    if config.getoption("--roadtest-coverage") and config.getoption("--roadtest-sanitizers"):
        raise pytest.UsageError(
            "roadtest: --roadtest-coverage and --roadtest-sanitizers each run a kernel of "
            "their own: choose one"
        )
    kernel_dir = config.getoption("--roadtest-kernel")
    if kernel_dir and (
        config.getoption("--roadtest-coverage") or config.getoption("--roadtest-sanitizers")
    ):
        raise pytest.UsageError(
            "roadtest: --roadtest-kernel boots the kernel it names: it cannot be the "
            "coverage or sanitizer variant"
        )
    if kernel_dir and not (Path(kernel_dir) / "stamp.json").is_file():
        raise pytest.UsageError(
            f"roadtest: --roadtest-kernel {kernel_dir}: not a kernel build (no stamp.json)"
        )
    workdir = config.getoption("--roadtest-workdir")
    if workdir is None:
        return
    path = Path(workdir).absolute()
    what = f"roadtest: --roadtest-workdir {workdir}"
    if path.exists() and not path.is_dir():
        raise pytest.UsageError(f"{what}: not a directory")
    workers = config.getoption("numprocesses", None)  # xdist's -n, when xdist is loaded
    last = workers - 1 if isinstance(workers, int) and workers > 0 else 0
    longest = max(
        (os.fsencode(p) for p in socket_paths(path / f"gw{max(last, _worker()[1])}").values()),
        key=len,
    )
    if len(longest) > MAX_SOCKET_PATH:
        raise pytest.UsageError(
            f"{what}: too long for the guest's sockets ({os.fsdecode(longest)} is "
            f"{len(longest)} bytes, at most {MAX_SOCKET_PATH} fit a socket address)"
        )
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise pytest.UsageError(f"{what}: cannot create it: {err.strerror}") from None
    if not os.access(path, os.W_OK | os.X_OK):
        raise pytest.UsageError(f"{what}: not writable")


def declared_devices(module: types.ModuleType) -> list[Device]:
    """The devices a test module declares at module level, in order, each knowing its origin."""
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
    groups: dict[str, list[Device]] = {}
    for item in items:
        module = getattr(item, "module", None)
        if module is None or module.__name__ in groups:
            continue
        groups[module.__name__] = declared_devices(module)
    config.stash[_DEVICES] = groups


def collected(config: pytest.Config) -> dict[str, list[Device]]:
    """The devices each collected test module declares, by module name."""
    return config.stash.get(_DEVICES, {})


def _worker() -> tuple[str, int]:
    name = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
    index = int(name.removeprefix("gw")) if name.removeprefix("gw").isdigit() else 0
    return name, index


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
    from roadtest.machine import registry
    from roadtest.testing.session import RoadtestSession, default_workdir

    interactive = terminal is not None
    if interactive and time_mode(config, interactive) == "sim":
        # A terminal is a UML line, whose input reaches the guest at no time of the
        # calendar: a guest frozen between agent requests would never read it.
        raise RoadtestError(
            "--roadtest-time=sim has no interactive terminal (a UML line's input is not "
            "time-synchronised): use --roadtest-time=travel or real"
        )
    worker, index = _worker()
    cpu = config.getoption("--roadtest-cpu")
    if cpu is None:
        # One per xdist worker, among the CPUs this process may use: a run started on a
        # pinned CPU (make test's second lane, a bisection's oracle) stays there.
        allowed = sorted(os.sched_getaffinity(0))
        cpu = allowed[index % len(allowed)]
    # The backend thread (started below, inheriting this) shares the guest's CPU: an I2C
    # round trip took half the time that way (bench/bench_foundation.py).
    os.sched_setaffinity(0, {cpu})
    workdir_opt = config.getoption("--roadtest-workdir")
    cache = _default_cache()
    workdir = Path(workdir_opt) / worker if workdir_opt else default_workdir(cache, worker)
    if groups is None:
        groups = list(collected(config).values())
    coverage_dir = config.getoption("--roadtest-coverage")
    machine = registry.get(config.getoption("--roadtest-machine"))
    kernel_dir = config.getoption("--roadtest-kernel")
    if kernel_dir:
        from roadtest.kernel import kernel_in

        kernel = kernel_in(Path(kernel_dir).absolute(), machine.target)
    else:
        kernel = machine.build(repo_root(), _kernel_variant(config, machine.target))
    session = RoadtestSession(
        kernel,
        [],
        workdir,
        groups=groups,
        machine=machine,
        cpu=cpu,
        time=time_mode(config, interactive),
        boot_timeout=config.getoption("--roadtest-boot-timeout"),
        hooks=_device_hooks(config, kernel.release),
        module_overrides=[Path(p) for p in config.getoption("--roadtest-module")],
        boot_args=[*_variant_boot_args(config), *config.stash[_BOOT_ARGS]],
        terminal=terminal,
        debugger=gdb.waiter(config) if gdb.enabled(config) else None,
    )
    modules_used = config.getoption("--roadtest-modules-used")
    if modules_used:
        session.modules_log = Path(modules_used).absolute()
    if coverage_dir:
        snapshots = coverage.Snapshots(Path(coverage_dir).absolute(), kernel, worker)
        session.before_guest_ends.append(snapshots.take)
    try:
        session.start()
    except BaseException:
        session.stop()  # the backend thread, and a guest that started but did not answer
        raise
    return session


def _kernel_variant(config: pytest.Config, target: Target) -> Variant | None:
    """The kernel the run's options ask for: a variant, or None for the main kernel."""
    if config.getoption("--roadtest-coverage"):
        return coverage.kernel_variant(repo_root(), target)
    if config.getoption("--roadtest-sanitizers"):
        from roadtest.kernel import sanitizers

        return sanitizers.kernel_variant(repo_root(), target)
    return None


def _variant_boot_args(config: pytest.Config) -> tuple[str, ...]:
    """What the variant's guests need on their kernel command line (before the user's)."""
    if config.getoption("--roadtest-sanitizers"):
        from roadtest.kernel import sanitizers

        return sanitizers.BOOT_ARGS
    return ()


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
        tolerate = config.getoption("--roadtest-replay-tolerate-repeats")
        return ReplayHooks(Path(replay), Path(results) if results else None, tolerate)
    return None


@pytest.fixture
def guest(
    request: pytest.FixtureRequest, roadtest_session: RoadtestSession
) -> Iterator[RoadtestSession]:
    session = roadtest_session
    node_id = request.node.nodeid
    start = f"roadtest: start {node_id}"
    guest = _guest_for(request.config, session, start)
    module = getattr(request, "module", None)
    declared = request.config.stash.get(_DEVICES, {}).get(getattr(module, "__name__", ""), [])
    unsupported = session.machine_type.unsupported(any("interrupts" in d.dts for d in declared))
    needs = request.node.get_closest_marker("roadtest_time")
    if unsupported is None and needs is not None and needs.args[0] != session.time:
        unsupported = f"needs --roadtest-time={needs.args[0]} (this run: {session.time})"
    if unsupported is not None:
        request.config.stash.setdefault(_UNSUPPORTED, []).append(node_id)
        pytest.skip(unsupported)  # the terminal summary counts them too: never silent
    if not all(session.tree.has(device) for device in declared):
        # The module's devices went into another devicetree than the running guest's.
        session.require(*declared)
        guest = session.ensure_guest()
        guest.agent.kmsg(start)
    assert guest.console is not None
    test_log = TestLog(session, guest.console.mark(), len(_backend_log.records))
    request.node.stash[_KEY_LOG] = test_log
    session.on_replaced = test_log.follow
    if session.time == "travel" and request.config.getoption("--roadtest-replay"):
        # A player's divergence, whether it fails the call (the driver's EIO) or shows
        # when the device is detached, gets the line.
        test_log.note = REPLAY_TIMING_NOTE
    problems_before = len(session.problems)
    session.test_id = node_id
    session.log_start = (guest, test_log.console_mark)
    test_log.pids = session.guest_pids()
    tracecmd_capture.start_test(request.config, guest)
    handle = _hypothesis_handle(request.node)
    if handle is None:
        yield session
    else:
        runner = examples.ExampleRunner(
            session,
            node_id,
            lambda guest: TestLog(session, _console_mark(guest), len(_backend_log.records)),
            request.config.stash[EXAMPLE_STATS],
            None
            if gdb.enabled(request.config)
            else request.config.getoption("--roadtest-hang-limit"),
        )
        request.node.stash[_RUNNER] = runner
        inner = handle.inner_test
        handle.inner_test = runner.wrap(inner)
        try:
            yield session
        finally:
            handle.inner_test = inner
        if session.guest is not None and session.guest is not test_log.guest:
            test_log.follow(session.guest)  # examples replaced the guest: report the last
    session.on_replaced = None
    if test_log.guest is not None:
        guest = test_log.guest  # another, if the test asked for a device its tree lacked
    assert guest.console is not None
    if request.session.exitstatus == pytest.ExitCode.INTERRUPTED:
        # Torn down after Ctrl-C/SIGTERM, outside any test: a failure raised here would
        # escape pytest.main as a traceback, and the guest was stopped mid-call anyway.
        session.detach_all()
        session.test_id = ""
        return
    # Quiesce before the verdict: nothing this test started may act during the next one.
    strays: list[str] = []
    if guest.alive:
        try:
            strays = session.kill_strays(test_log.pids)
        except (OSError, ProtocolError):
            pass  # the guest died meanwhile: reported below
    session.detach_all()
    device_problems = [str(p) for p in session.problems[problems_before:]]
    capture_problems = tracecmd_capture.finish_test(request.config, guest, node_id)
    session.test_id = ""
    # Every kernel line up to here reached the host: trouble so far is this test's.
    test_log.flush_console(f"roadtest: end {node_id}")
    if guest.alive:
        request.config.stash[_LAST_TEST] = (node_id, guest.console.mark())
    if request.node.stash.get(_CALL_FAILED, False):
        return  # the report already shows the logs; don't add an error on top
    failures: list[str] = []
    death = verdicts.guest_death(guest, test_log.console_mark)
    if test_log.timed_out is not None:
        death = str(verdicts.timed_out(guest, test_log.console_mark, test_log.timed_out))
    if death is not None:
        failures.append(death)
    errors = test_log.new_model_errors()
    model = verdicts.model_outcome(errors, test_log.note_for(errors))
    if model is not None:
        failures.append(f"{type(model).__name__}: {model}")
    if strays:
        failures.append(
            "the test left processes running in the guest (killed now; wait for what a "
            "test starts): " + "; ".join(strays)
        )
    failures += device_problems
    note = test_log.note_for(session.problems[problems_before:])
    if device_problems and note and model is None:
        failures.append(note)
    failures += capture_problems
    trouble = guest.console.trouble(test_log.console_mark)
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
        last, mark = config.stash.get(_LAST_TEST, ("", 0))
        death = verdicts.guest_death(guest, mark, exc) or str(exc)
        warnings.warn(
            pytest.PytestWarning(f"the guest died after {last or 'the last test'} ended: {death}"),
            stacklevel=1,
        )
    guest = session.boot()
    guest.agent.kmsg(start)
    return guest


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    """A guest test's failure names its cause: the model's exception rather than the
    driver's EIO, how the guest died rather than a closed channel."""
    __tracebackhide__ = True  # the report shows the test's frames and the cause, not ours
    test_log = item.stash.get(_KEY_LOG, None)
    if test_log is None or _RUNNER in item.stash:
        return (yield)  # not a guest test, or a Hypothesis one: each example said its cause
    try:
        result = yield
    except (KeyboardInterrupt, pytest.exit.Exception, pytest.skip.Exception):
        raise  # the user's Ctrl-C, or the test's own decision
    except BaseException as exc:
        cause = test_log.cause(exc)
        if cause is None:
            raise
        raise cause from exc
    cause = test_log.cause(None)
    if cause is not None:
        raise cause
    return result


# Options a failing example's reproducer keeps: they change the kernel, modules or examples.
_REPRODUCED_OPTIONS = (
    "--roadtest-kernel",
    "--roadtest-module",
    "--roadtest-hostile",
    "--roadtest-sanitizers",
    "--roadtest-bootargs",
    "--roadtest-hang-limit",
    "--roadtest-no-time-travel",
    "--roadtest-time",
    "--hypothesis-profile",
    "--hypothesis-seed",
)


_FLAGS = ("--roadtest-hostile", "--roadtest-sanitizers", "--roadtest-no-time-travel")


def _reproducer(item: pytest.Item) -> str:
    """The command that runs `item` again as this run did (quoted for a shell)."""
    import shlex

    args = list(item.config.invocation_params.args)
    kept: list[str] = []
    for i, arg in enumerate(args):
        name = arg.partition("=")[0]
        if name in _REPRODUCED_OPTIONS:
            kept.append(arg)
            if "=" not in arg and i + 1 < len(args) and name not in _FLAGS:
                kept.append(args[i + 1])
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
            f"(the example database, {profiles.database_dir(_default_cache())}, keeps the "
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
        item.stash[_CALL_FAILED] = True
    results = item.config.getoption("--roadtest-replay-results")
    if results and report.failed:
        from roadtest.replayer.results import add_failed_test

        add_failed_test(Path(results), item.nodeid, _headline(report))
    test_log = item.stash.get(_KEY_LOG, None)
    if test_log is not None and test_log.guest is not None and report.when == "call":
        # Which machine the test ran on (junit's properties, KTAP's diagnostics).
        report.user_properties.append(("machine", test_log.guest.describe()))
    if test_log is None or not report.failed:
        return report
    runner = item.stash.get(_RUNNER, None)
    if runner is not None and report.when == "call":
        _report_examples(item, call, report, runner)
    if test_log.timed_out is not None:
        report.user_properties.append(("timeout", test_log.timed_out))  # KTAP's TIMEOUT
    test_log.flush_console()
    kernel = test_log.kernel_lines()
    backend = test_log.backend_lines()
    if test_log.replay_problems:
        report.sections.append(("roadtest replay", "\n".join(map(str, test_log.replay_problems))))
    report.sections.append(("roadtest kernel log", "\n".join(kernel) or "(no kernel messages)"))
    report.sections.append(("roadtest backend log", "\n".join(backend) or "(no backend messages)"))
    if test_log.guest is not None:
        report.sections.append(("roadtest guest", f"console: {test_log.guest.console_log}"))
    return report
