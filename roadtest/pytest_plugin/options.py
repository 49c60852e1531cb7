"""roadtest's pytest options, and their checks: one line and exit 4 before any test runs."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from roadtest.backend.server import MAX_SOCKET_PATH, socket_paths
from roadtest.errors import RoadtestError
from roadtest.machine.base import TIME_MODES
from roadtest.pytest_plugin import examples, gdb


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


def ktap_path(value: str) -> Path:
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


def boot_args(value: str) -> list[str]:
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


def check_options(config: pytest.Config) -> None:
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
        (os.fsencode(p) for p in socket_paths(path / f"gw{max(last, xdist_worker()[1])}").values()),
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


def xdist_worker() -> tuple[str, int]:
    name = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
    index = int(name.removeprefix("gw")) if name.removeprefix("gw").isdigit() else 0
    return name, index
