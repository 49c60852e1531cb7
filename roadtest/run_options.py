"""What a run of driver tests is asked to do: one option table, and one typed, checked value.

`OPTIONS` is the one table of roadtest's run options. The pytest plugin declares them
to pytest from it; the CLI's verbs (`run`, `record`, `replay`, `fuzz`, `shell`, `--vm`)
take them out of their arguments with it (`take`), in every spelling the table allows
(`--roadtest-machine NAME`, `--roadtest-machine=NAME`, `--machine NAME`...), and list them
in their `--help`. `RunOptions.parse` makes them one frozen value and checks every
combination once: a bad one is a `UsageError`, one line, before anything is built.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import textwrap
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from roadtest.errors import RoadtestError, UsageError
from roadtest.kernel.build import Kernel, cached_kernel, kernel_in, tree_kernel
from roadtest.kernel.source import read_series_file
from roadtest.kernel.tree import open_tree, tree_argument
from roadtest.kernel.variants import COVERAGE, MAIN, SANITIZERS, KernelVariant
from roadtest.machine import registry
from roadtest.machine.base import TIME_MODES, MachineType, TimeMode

# Host seconds an agent request of a Hypothesis example may take before the guest counts as
# hung (a driver waits on hardware in guest time, which time-travel skips: seconds of host
# time are a hang, not a slow device). `agent.run` and `guest.sleep` pass their own.
DEFAULT_HANG_LIMIT = 10.0
DEFAULT_BOOT_TIMEOUT = 30.0

Kind = Literal["flag", "value", "int", "float", "append"]


@dataclass(frozen=True)
class Option:
    """One run option: `name` is pytest's spelling; `short`, the CLI verbs' other spelling
    (a flag there when `short_value` is set: it stands for `name=short_value`)."""

    name: str
    kind: Kind
    help: str
    metavar: str | None = None
    short: str | None = None
    short_value: str | None = None
    choices: tuple[str, ...] | None = None

    @property
    def dest(self) -> str:
        return self.name.removeprefix("--").replace("-", "_")

    @property
    def takes_value(self) -> bool:
        return self.kind != "flag"

    def spellings(self) -> tuple[str, ...]:
        return (self.name,) if self.short is None else (self.name, self.short)


OPTIONS: tuple[Option, ...] = (
    Option(
        "--roadtest-machine",
        "value",
        "the kind of guest to boot: " + ", ".join(registry.names()) + " (default: um, "
        "User-Mode Linux; x86_64 is an x86_64 kernel under QEMU)",
        metavar="NAME",
        short="--machine",
    ),
    Option(
        "--roadtest-time",
        "value",
        "the guest's clock: sim, simulated time that roadtest owns (runs repeat event for "
        "event; idle guests sleep); travel, UML's basic time-travel (skips idle time); "
        "real, the host's clock (driver delays take their real time) (default: the "
        "machine's first: sim on UML, real on QEMU machines, whose clock is the host's; "
        "travel for an interactive shell)",
        choices=TIME_MODES,
    ),
    Option("--roadtest-no-time-travel", "flag", "the same as --roadtest-time=real"),
    Option(
        "--roadtest-coverage",
        "value",
        "run a gcov kernel and report the line and branch coverage of the driver modules "
        "the tests loaded: a summary, DIR/index.html and DIR/coverage.lcov (`--coverage`: "
        "into roadtest-coverage/)",
        metavar="DIR",
        short="--coverage",
        short_value="roadtest-coverage",
    ),
    Option(
        "--roadtest-sanitizers",
        "flag",
        "run the sanitizer kernel (KASAN, kmemleak; `roadtest build --sanitizers`), whose "
        "reports fail the test that caused them",
        short="--sanitizers",
    ),
    Option(
        "--roadtest-cpu",
        "int",
        "host CPU for the guest and this test process (default: one per xdist worker, "
        "among the CPUs this process may use)",
        metavar="N",
    ),
    Option(
        "--roadtest-boot-timeout",
        "float",
        f"host seconds a guest may take to boot to its agent (default: {DEFAULT_BOOT_TIMEOUT:g})",
        metavar="SECONDS",
    ),
    Option(
        "--roadtest-hang-limit",
        "float",
        "host seconds an agent request of a Hypothesis example may take before the guest "
        f"counts as hung, is killed, and the example fails (default: {DEFAULT_HANG_LIMIT:g})",
        metavar="SECONDS",
    ),
    Option(
        "--roadtest-hostile",
        "flag",
        "hostile-device mode: in place of a test file's tests, one Hypothesis test per I2C "
        "device it declares, behind a device that lies (`roadtest fuzz --hostile`)",
    ),
    Option("--roadtest-workdir", "value", "where guests keep sockets and logs", metavar="DIR"),
    Option(
        "--roadtest-module",
        "append",
        "load this module (e.g. a driver built out of tree) in place of the kernel's module "
        "of the same name; may be repeated",
        metavar="KO",
    ),
    Option(
        "--roadtest-kernel",
        "value",
        "boot this kernel build (laid out as a cache entry: build/, modules/, stamp.json; a "
        "`roadtest bisect` step's) in place of the cached one",
        metavar="DIR",
    ),
    Option(
        "--roadtest-tree",
        "value",
        "build and boot your own kernel tree (out of tree, in the cache: the tree is only "
        "read, uncommitted changes included; incrementally, a changed driver in seconds), "
        "with those of roadtest's patches that apply to it; or a kernel source tarball, or "
        "an installed Debian package's name (linux-source-6.1), unpacked once in the cache",
        metavar="DIR",
        short="--tree",
    ),
    Option(
        "--roadtest-series",
        "value",
        "with --roadtest-tree: your own patches too, a quilt series file (applied after "
        "roadtest's; each must apply)",
        metavar="FILE",
        short="--series",
    ),
    Option(
        "--roadtest-config",
        "append",
        "every *.config under DIR (not hidden, nor in a git or kernel tree below it) is a "
        "config fragment of the run's kernel, after roadtest's own (default, from the "
        "roadtest command: the directories of the tests "
        "it was given outside roadtest's checkout); may be repeated",
        metavar="DIR",
    ),
    Option(
        "--roadtest-modules-used",
        "value",
        "append the name of every module the tests load to FILE, one a line",
        metavar="FILE",
    ),
    Option(
        "--roadtest-record",
        "value",
        "write a trace of every I2C and SPI device each test uses under DIR/<chip>/",
        metavar="DIR",
    ),
    Option(
        "--roadtest-replay",
        "value",
        "answer each device from its golden trace under DIR instead of its model",
        metavar="DIR",
    ),
    Option(
        "--roadtest-replay-tolerate-repeats",
        "flag",
        "with --roadtest-replay: let a register read identical to the previous one be made "
        "once more or once less than recorded (the kernel's own reads race the test's when "
        "the guest's clock is not simulated); without it, replay is exact",
    ),
    Option(
        "--roadtest-replay-results",
        "value",
        "with --roadtest-replay: write each trace's outcome to DIR (for `roadtest replay`)",
        metavar="DIR",
    ),
    Option(
        "--roadtest-leave-replayed",
        "value",
        "leave out the tests that have a golden trace under DIR: those `roadtest replay "
        "--golden DIR` runs on this machine, driver I/O checked (make test's x86_64 lane)",
        metavar="DIR",
    ),
    Option(
        "--roadtest-trace-cmd",
        "value",
        "capture each test's i2c trace events with trace-cmd in the guest, into "
        "DIR/<test>.dat (for `roadtest import trace-cmd`)",
        metavar="DIR",
    ),
    Option(
        "--roadtest-bootargs",
        "value",
        "extra kernel arguments for every guest of the run, quoted as on a kernel command "
        "line, e.g. 'opt3001.dyndbg=+p trace_event=i2c:*' (module.param=value reaches the "
        "module when roadtest loads it, as modprobe does)",
        metavar="ARGS",
    ),
    Option(
        "--roadtest-ktap",
        "value",
        "write the run's results to FILE in KTAP, the kernel's test-result format (one suite "
        "per test file; `kunit.py parse FILE` reads it)",
        metavar="FILE",
    ),
    Option(
        "--roadtest-gdb",
        "flag",
        "wait, once each guest booted, until gdb is attached to its kernel (roadtest prints "
        "the command); no time limits then",
    ),
)

# The trees (and their variant and target) this process has brought up to date, and their
# builds: a run's command builds its tree, and the test session in the same process then
# boots that build, even if the tests' config fragments changed meanwhile (a build that
# waited 20 minutes for the cache's lock saw others edit them: the session's own key then
# named no build).
_trees_built: dict[tuple[str, str, str], Kernel] = {}

BY_SPELLING = {spelling: o for o in OPTIONS for spelling in o.spellings()}
BY_DEST = {o.dest: o for o in OPTIONS}


def take(args: Sequence[str]) -> tuple[dict[str, object], list[str]]:
    """Roadtest's run options out of a verb's arguments, by dest (as RunOptions.parse takes
    them), and the arguments that are not (pytest's, in their order). UsageError for an
    option that needs a value and has none."""
    values: dict[str, object] = {}
    rest: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        spelling, eq, inline = arg.partition("=")
        option = BY_SPELLING.get(spelling) if spelling.startswith("--") else None
        i += 1
        if option is None:
            rest.append(arg)
            continue
        short_flag = spelling == option.short and option.short_value is not None
        value: object
        if short_flag or not option.takes_value:
            if eq:
                raise UsageError(f"{spelling} takes no value (given {arg!r})")
            value = option.short_value if short_flag else True
        elif eq:
            value = inline
        else:
            if i >= len(args) or args[i].startswith("-"):
                raise UsageError(f"{spelling} needs a value")
            value = args[i]
            i += 1
        if option.kind == "append":
            current = values.setdefault(option.dest, [])
            assert isinstance(current, list)
            current.append(value)
        else:
            values[option.dest] = value
    return values, rest


def as_arguments(values: Mapping[str, object]) -> list[str]:
    """`values` (by dest, as `take` gives them) in pytest's spelling, `--name=VALUE`."""
    out: list[str] = []
    for dest, value in values.items():
        option = BY_DEST[dest]
        if option.kind == "flag":
            if value:
                out.append(option.name)
        elif option.kind == "append":
            assert isinstance(value, list)
            out += [f"{option.name}={v}" for v in value]
        elif value is not None:
            out.append(f"{option.name}={value}")
    return out


def help_text() -> str:
    """The options as a verb's --help lists them."""
    lines = ["roadtest's run options (`--NAME VALUE` or `--NAME=VALUE`):"]
    for o in OPTIONS:
        names = ", ".join(o.spellings())
        value = f" {o.metavar or 'VALUE'}" if o.takes_value else ""
        if o.choices:
            value = " {" + ",".join(o.choices) + "}"
        lines.append(f"  {names}{value}")
        lines += textwrap.wrap(o.help, 88, initial_indent=" " * 6, subsequent_indent=" " * 6)
    return "\n".join(lines)


def _number(option: str, value: object, kind: type[int] | type[float]) -> float | int | None:
    if value is None:
        return None
    try:
        return kind(str(value)) if not isinstance(value, kind) else value
    except ValueError:
        raise UsageError(f"{option} {value}: not a number") from None


def boot_args(value: str) -> tuple[str, ...]:
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
    what = f"--roadtest-bootargs {value}"
    if quoted:
        raise UsageError(f"{what}: a double quote is not closed")
    if "--" in args:  # the kernel passes what follows it to init, not to itself
        raise UsageError(f"{what}: '--' ends the kernel's arguments")
    return tuple(args)


def writable_dir(option: str, value: str) -> Path:
    """`value` as a directory that exists (made now) and can be written to: known before
    any test runs, not as an OSError after each of them."""
    if not value:
        raise UsageError(f"{option} needs a directory")
    path = Path(value).absolute()
    try:
        if path.exists() and not path.is_dir():
            raise UsageError(f"{option} {value}: not a directory")
        path.mkdir(parents=True, exist_ok=True)
        os.rmdir(tempfile.mkdtemp(prefix=".roadtest-probe-", dir=path))  # writable, even as root
    except OSError as err:
        raise UsageError(f"{option} {value}: {err.strerror or err}") from None
    return path


def _writable_file(option: str, value: str) -> Path:
    """`value` as a file the run can write (its directory made now)."""
    path = Path(value).absolute()
    if path.is_dir():
        raise UsageError(f"{option} {value}: is a directory: give the results file's name")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise UsageError(f"{option} {value}: cannot make its directory: {err.strerror}") from None
    if not os.access(path.parent, os.W_OK | os.X_OK):
        raise UsageError(f"{option} {value}: its directory is not writable")
    return path


def _module(value: str) -> Path:
    path = Path(value)
    if not path.is_file():
        why = "not a file" if path.exists() else "no such file"
        raise UsageError(f"--roadtest-module {value}: {why}")
    try:
        with path.open("rb") as f:
            magic = f.read(4)
    except OSError as err:
        raise UsageError(f"--roadtest-module {value}: {err.strerror}") from None
    if magic != b"\x7fELF":
        raise UsageError(f"--roadtest-module {value}: not a kernel module (not an ELF file)")
    return path.absolute()


def _cpu(cpu: int) -> int:
    # Try it: the CPUs allowed are the cpuset's, which may be more than this process runs
    # on now (a roadtest run started from a pinned one may pick another CPU).
    current = os.sched_getaffinity(0)
    try:
        os.sched_setaffinity(0, {cpu})
    except (OSError, ValueError):
        raise UsageError(
            f"--roadtest-cpu {cpu}: not a CPU this process may run on (this machine has "
            f"{os.cpu_count()}, numbered from 0)"
        ) from None
    os.sched_setaffinity(0, current)
    return cpu


@dataclass(frozen=True)
class RunOptions:
    """A run's options, checked: what every part of roadtest reads instead of argv."""

    machine: MachineType
    time: TimeMode
    variant: KernelVariant
    cpu: int | None = None
    boot_timeout: float = DEFAULT_BOOT_TIMEOUT
    hang_limit: float = DEFAULT_HANG_LIMIT
    hostile: bool = False
    workdir: Path | None = None
    modules: tuple[Path, ...] = ()
    kernel_dir: Path | None = None  # a prebuilt kernel (a cache entry) to boot instead
    tree: Path | None = None  # the user's kernel tree, built in the cache (kernel/tree.py)
    series: Path | None = None  # the user's patches for it, a quilt series file
    config_dirs: tuple[Path, ...] = ()  # a user's tests' directories: their *.config
    modules_used: Path | None = None
    record: Path | None = None
    replay: Path | None = None
    replay_tolerate_repeats: bool = False
    replay_results: Path | None = None
    leave_replayed: Path | None = None  # a golden directory: its traces' tests are left out
    trace_cmd: Path | None = None
    boot_args: tuple[str, ...] = ()  # the user's, split (the variant's come first)
    coverage: Path | None = None
    ktap: Path | None = None
    gdb: bool = False

    def kernel(self, root: Path, *, build: bool) -> Kernel:
        """The kernel this run boots: the build --roadtest-kernel names; the user's tree's
        (`build`: brought up to date first, once per process; otherwise as last built);
        or the cache's kernel of the variant (built if the cache has no current one)."""
        target = self.machine.target
        if self.kernel_dir is not None:
            return kernel_in(self.kernel_dir, target)
        variant = self.variant.build_variant(root, target, self.config_dirs)
        if self.tree is None:
            return self.machine.build(root, variant)
        tree = open_tree(self.tree, target)
        series = [] if self.series is None else read_series_file(self.series)
        fresh = (tree.key, self.variant.name, target.name)
        if build and fresh in _trees_built:
            return _trees_built[fresh]
        kernel = tree_kernel(root, tree, variant=variant, target=target, series=series, build=build)
        if build:
            _trees_built[fresh] = kernel
        return kernel

    def built_kernel(self, root: Path) -> Kernel | None:
        """The kernel this run boots if it is built already, else None: nothing is built
        (the run's summary, after its guests)."""
        if self.kernel_dir is not None or self.tree is not None:
            try:
                return self.kernel(root, build=False)
            except RoadtestError:
                return None
        target = self.machine.target
        variant = self.variant.build_variant(root, target, self.config_dirs)
        return cached_kernel(root, variant=variant, target=target)

    @classmethod
    def parse(
        cls, values: Mapping[str, object], *, interactive: bool = False, workers: int = 0
    ) -> RunOptions:
        """The options from `values` (by dest; missing ones take their defaults), checked;
        UsageError, one line, for the first problem. `interactive`: the run opens a
        terminal in the guest (roadtest shell); `workers`: pytest-xdist's -n."""

        def text(dest: str) -> str | None:
            value = values.get(dest)
            return None if value is None or value is False else str(value)

        try:
            machine = registry.get(text("roadtest_machine") or registry.DEFAULT)
        except RoadtestError as err:
            raise UsageError(str(err)) from None
        asked = text("roadtest_time")
        if values.get("roadtest_no_time_travel"):
            if asked not in (None, TimeMode.REAL):
                raise UsageError(f"--roadtest-no-time-travel and --roadtest-time={asked}")
            asked = TimeMode.REAL
        if asked is not None and asked not in TIME_MODES:
            raise UsageError(f"--roadtest-time={asked}: one of {', '.join(TIME_MODES)}")
        try:
            time = machine.time_mode(None if asked is None else TimeMode(asked), interactive)
        except RoadtestError as err:
            raise UsageError(str(err)) from None
        coverage = text("roadtest_coverage")
        sanitizers = bool(values.get("roadtest_sanitizers"))
        if coverage is not None and sanitizers:
            raise UsageError(
                "--roadtest-coverage and --roadtest-sanitizers each run a kernel of their "
                "own: choose one"
            )
        variant = COVERAGE if coverage is not None else SANITIZERS if sanitizers else MAIN
        try:
            machine.check_variant(variant.name)
        except RoadtestError as err:
            raise UsageError(str(err)) from None
        kernel_dir = text("roadtest_kernel")
        if kernel_dir is not None:
            if not variant.is_main:
                raise UsageError(
                    "--roadtest-kernel boots the kernel it names: it cannot be the "
                    f"{variant.name} variant"
                )
            if not (Path(kernel_dir) / "stamp.json").is_file():
                raise UsageError(
                    f"--roadtest-kernel {kernel_dir}: not a kernel build (no stamp.json)"
                )
        tree, series = text("roadtest_tree"), text("roadtest_series")
        if tree is not None and kernel_dir is not None:
            raise UsageError("--roadtest-tree and --roadtest-kernel each name the kernel to boot")
        if series is not None:
            if tree is None:
                raise UsageError("--roadtest-series patches your tree: give --roadtest-tree")
            if not Path(series).is_file():
                raise UsageError(f"--roadtest-series {series}: no such file")
        config_given = values.get("roadtest_config") or []
        assert isinstance(config_given, Iterable)
        config_dirs = tuple(Path(str(d)).absolute() for d in config_given)
        for directory in config_dirs:
            if not directory.is_dir():
                raise UsageError(f"--roadtest-config {directory}: no such directory")
        record, replay = text("roadtest_record"), text("roadtest_replay")
        hostile = bool(values.get("roadtest_hostile"))
        if record is not None and replay is not None:
            raise UsageError("--roadtest-record and --roadtest-replay cannot be used together")
        if hostile and (record is not None or replay is not None):
            raise UsageError("--roadtest-hostile cannot record or replay: its devices lie")
        if replay is not None and not Path(replay).is_dir():
            why = "not a directory" if Path(replay).exists() else "no such directory"
            raise UsageError(f"--roadtest-replay {replay}: {why}")
        leave_replayed = text("roadtest_leave_replayed")
        if leave_replayed is not None and not Path(leave_replayed).is_dir():
            why = "not a directory" if Path(leave_replayed).exists() else "no such directory"
            raise UsageError(f"--roadtest-leave-replayed {leave_replayed}: {why}")
        trace_cmd = text("roadtest_trace_cmd")
        ktap = text("roadtest_ktap")
        gdb = bool(values.get("roadtest_gdb"))
        if gdb:
            _check_gdb(machine, workers)
        cpu = _number("--roadtest-cpu", values.get("roadtest_cpu"), int)
        boot_timeout = _number(
            "--roadtest-boot-timeout", values.get("roadtest_boot_timeout"), float
        )
        hang_limit = _number("--roadtest-hang-limit", values.get("roadtest_hang_limit"), float)
        modules_given = values.get("roadtest_module") or []
        assert isinstance(modules_given, Iterable)
        workdir = text("roadtest_workdir")
        results = text("roadtest_replay_results")
        modules_used = text("roadtest_modules_used")
        return cls(
            machine=machine,
            time=time,
            variant=variant,
            cpu=None if cpu is None else _cpu(int(cpu)),
            boot_timeout=DEFAULT_BOOT_TIMEOUT if boot_timeout is None else float(boot_timeout),
            hang_limit=DEFAULT_HANG_LIMIT if hang_limit is None else float(hang_limit),
            hostile=hostile,
            workdir=None if workdir is None else _workdir(workdir, workers),
            modules=tuple(_module(str(m)) for m in modules_given),
            kernel_dir=None if kernel_dir is None else Path(kernel_dir).absolute(),
            tree=None if tree is None else tree_argument(tree),
            series=None if series is None else Path(series).absolute(),
            config_dirs=tuple(dict.fromkeys(config_dirs)),
            modules_used=None if modules_used is None else Path(modules_used).absolute(),
            record=None if record is None else Path(record),
            # As given: the player names its traces by it, and replay's summary reads them so.
            replay=None if replay is None else Path(replay),
            replay_tolerate_repeats=bool(values.get("roadtest_replay_tolerate_repeats")),
            replay_results=None if results is None else Path(results),
            leave_replayed=None if leave_replayed is None else Path(leave_replayed),
            trace_cmd=None
            if trace_cmd is None
            else writable_dir("--roadtest-trace-cmd", trace_cmd),
            boot_args=boot_args(text("roadtest_bootargs") or ""),
            coverage=None if coverage is None else Path(coverage).absolute(),
            ktap=None if ktap is None else _writable_file("--roadtest-ktap", ktap),
            gdb=gdb,
        )


def _check_gdb(machine: MachineType, workers: int) -> None:
    if workers:
        raise UsageError(f"--roadtest-gdb: one guest at a time; drop -n {workers} (pytest-xdist)")
    if not machine.gdb:
        able = ", ".join(n for n in registry.names() if registry.get(n).gdb)
        raise UsageError(
            f"--roadtest-gdb: gdb cannot attach to a {machine.name} guest "
            f"(--roadtest-machine {able or 'none'} can)"
        )
    if shutil.which("gdb") is None:
        raise UsageError("--roadtest-gdb: gdb not found: apt-get install gdb")


def _workdir(value: str, workers: int) -> Path:
    """--roadtest-workdir: a directory (made now) whose guests' socket paths fit a socket
    address, for every xdist worker."""
    from roadtest.backend.server import MAX_SOCKET_PATH, socket_paths

    path = Path(value).absolute()
    what = f"--roadtest-workdir {value}"
    if path.exists() and not path.is_dir():
        raise UsageError(f"{what}: not a directory")
    last = max(workers - 1, 0, _worker_index())
    longest = max((os.fsencode(p) for p in socket_paths(path / f"gw{last}").values()), key=len)
    if len(longest) > MAX_SOCKET_PATH:
        raise UsageError(
            f"{what}: too long for the guest's sockets ({os.fsdecode(longest)} is "
            f"{len(longest)} bytes, at most {MAX_SOCKET_PATH} fit a socket address)"
        )
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise UsageError(f"{what}: cannot create it: {err.strerror}") from None
    if not os.access(path, os.W_OK | os.X_OK):
        raise UsageError(f"{what}: not writable")
    return path


def xdist_worker() -> tuple[str, int]:
    """This process's pytest-xdist worker: its name and index (gw0 without xdist)."""
    name = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
    index = int(name.removeprefix("gw")) if name.removeprefix("gw").isdigit() else 0
    return name, index


def _worker_index() -> int:
    return xdist_worker()[1]
