"""The `roadtest` command: build the guest kernel, run driver tests."""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from roadtest import signals
from roadtest.checkout import repo_root
from roadtest.errors import RoadtestError, UsageError

if TYPE_CHECKING:
    from roadtest.run_options import RunOptions


def cmd_build(args: argparse.Namespace) -> int:
    from roadtest.kernel import build_main
    from roadtest.kernel.variants import COVERAGE, MAIN, SANITIZERS
    from roadtest.machine import registry

    try:
        machine = registry.get(args.machine)
    except RoadtestError as err:
        raise UsageError(str(err)) from None
    variant = COVERAGE if args.coverage else SANITIZERS if args.sanitizers else MAIN
    try:
        machine.check_variant(variant.name)
    except RoadtestError as err:
        raise UsageError(str(err)) from None
    if args.tree is not None:
        return build_tree(args)
    root = repo_root()
    target = machine.target
    if args.series is not None:
        raise UsageError("--series patches your tree: give --tree")
    return build_main(root, variant.build_variant(root, target), target, force=args.force)


def build_tree(args: argparse.Namespace) -> int:
    """`roadtest build --tree DIR`: the tree's kernel, brought up to date, as a run of the
    same options would build it."""
    import time

    from roadtest.run_options import RunOptions

    if args.force:
        raise UsageError("--force rebuilds the cache's kernel; a tree's build is incremental")
    options = RunOptions.parse(
        {
            "roadtest_machine": args.machine,
            "roadtest_tree": args.tree,
            "roadtest_series": args.series,
            "roadtest_sanitizers": args.sanitizers,
            "roadtest_coverage": "roadtest-coverage" if args.coverage else None,
        }
    )
    start = time.monotonic()
    kernel = options.kernel(repo_root(), build=True)
    took = time.monotonic() - start
    print(f"kernel {kernel.release} of {options.tree}: {took:.0f} s ({kernel.image})")
    return 0


def run_arguments(
    args: Sequence[str],
    *,
    extra: dict[str, object] | None = None,
    interactive: bool = False,
    selection: Sequence[str] = (),
) -> tuple[RunOptions, list[str]]:
    """A verb's arguments as its checked run options (UsageError, one line, otherwise) and
    pytest's arguments: roadtest's options in the plugin's spelling, then the rest."""
    from roadtest import run_options

    values, rest = run_options.take(args)
    values.update(extra or {})
    if "roadtest_config" not in values:
        values["roadtest_config"] = [str(d) for d in own_test_dirs([*rest, *selection])]
    options = run_options.RunOptions.parse(values, interactive=interactive)
    return options, [*run_options.as_arguments(values), *rest]


def driver_suite() -> Path:
    """The tests a command runs when given none: the checkout's driver suite."""
    from roadtest.checkout import default_tests

    suite = default_tests()
    if suite is None:
        raise UsageError("name the tests to run: an installed roadtest has no tests of its own")
    return suite


def default_traces(own: Sequence[Path]) -> Path:
    """Where `record` writes without --out: traces/ beside the user's own tests (`own`,
    their directories: own_test_dirs), else the checkout's traces/."""
    return own[0] / "traces" if own else repo_root() / "traces"


def own_test_dirs(args: Sequence[str]) -> list[Path]:
    """The directories of the tests named in `args` that are not roadtest's own (outside
    the checkout's tests/): a user's tests, whose *.config fragments the kernel takes."""
    ours = (repo_root() / "tests").resolve()
    dirs: list[Path] = []
    for arg in args:
        if arg.startswith("-"):
            continue
        path = Path(arg.split("::", 1)[0])
        if not path.exists():
            continue  # a -k expression, an option's value: not a test path
        top = path.resolve() if path.is_dir() else path.resolve().parent
        if top != ours and ours not in top.parents and top not in dirs:
            dirs.append(top)
    return dirs


def cmd_run(args: argparse.Namespace) -> int:
    return int(args.runner(list(args.pytest_args)))


def run_pytest(pytest_args: list[str]) -> int:
    """pytest on driver tests (default: tests/drivers), with the kernel built first."""
    options, pytest_args = run_arguments(pytest_args)
    # Build (or confirm) the kernel first, so its progress is not hidden behind pytest's
    # capture; unless the run boots a kernel build it names (a bisect step's).
    if options.kernel_dir is None:
        options.kernel(repo_root(), build=True)
    if not any(not a.startswith("-") for a in pytest_args):
        pytest_args = [*pytest_args, str(driver_suite())]
    from roadtest.pytest_plugin.main import pytest_main

    return pytest_main(pytest_args)


def cmd_record(args: argparse.Namespace) -> int:
    from roadtest.recorder.record_command import record
    from roadtest.run_options import writable_dir

    # Without arguments (argparse's path) there are no tests of the user's.
    out = str(default_traces([])) if args.out is None else args.out
    for arg in args.pytest_args:
        if arg.split("=", 1)[0] in ("--roadtest-record", "--roadtest-replay"):
            option = arg.split("=", 1)[0]
            raise UsageError(f"{option}: `roadtest record` writes the traces itself; use --out DIR")
    return record(list(args.pytest_args), writable_dir("--out", out), args.runner, repo_root())


def cmd_replay(args: argparse.Namespace) -> int:
    from roadtest.recorder.record_command import settle
    from roadtest.replayer.replay_command import replay

    if not args.golden:  # Path("") would be the current directory
        raise UsageError("--golden needs a directory")
    golden = Path(args.golden)
    for out in (golden, golden.parent):  # --golden traces, or traces/<chip>
        settle(out)  # a record killed while switching the tree: finish it before reading
    return replay(
        Path(args.golden), list(args.selection), repo_root(), args.runner, args.pytest_options
    )


def cmd_shell(args: argparse.Namespace) -> int:
    from roadtest.pytest_plugin.main import pytest_main
    from roadtest.shell.command import shell

    return shell(args.shell_args, driver_suite(), pytest_main)


def cmd_fuzz(args: argparse.Namespace) -> int:
    from roadtest.kernel import default_cache_dir
    from roadtest.pytest_plugin.fuzz_campaign import fuzz, parse_duration
    from roadtest.pytest_plugin.main import pytest_main

    if args.examples is not None and args.duration is not None:
        raise UsageError("--examples and --duration cannot be used together")
    duration = parse_duration(args.duration) if args.duration is not None else None
    root = repo_root()
    extra: dict[str, object] = {} if args.no_sanitizers else {"roadtest_sanitizers": True}
    if args.hostile:
        extra["roadtest_hostile"] = True
    options, pytest_options = run_arguments(
        args.pytest_options, extra=extra, selection=args.selection
    )
    return fuzz(
        args.selection,
        pytest_options,
        hostile=args.hostile,
        examples=args.examples,
        duration=duration,
        seed=args.seed,
        default_selection=root / "tests" / "drivers" if args.selection else driver_suite(),
        pytest_main=pytest_main,
        cache=default_cache_dir(),
        build_kernel=lambda: options.kernel(root, build=True),
    )


def cmd_bisect(args: argparse.Namespace) -> int:
    from roadtest.bisect.command import bisect
    from roadtest.kernel import default_cache_dir

    oracle = list(args.oracle)
    return bisect(
        tree=Path(args.tree) if args.tree else None,
        series=Path(args.series) if args.series else None,
        good=args.good,
        bad=args.bad,
        tests=[a for a in oracle if not a.startswith("-")],
        golden=Path(args.golden) if args.golden else None,
        options=[a for a in oracle if a.startswith("-")],
        json_log=Path(args.json) if args.json else None,
        repo_root=repo_root(),
        cache=default_cache_dir(),
    )


def cmd_import_trace_cmd(args: argparse.Namespace) -> int:
    from roadtest.recorder.tracecmd import command

    return command(args)


def cmd_import_sigrok(args: argparse.Namespace) -> int:
    from roadtest.recorder.sigrok import command

    return command(args)


def _address(text: str) -> int:
    try:
        return int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r} (e.g. 0x4c)") from None


def cmd_trace_show(args: argparse.Namespace) -> int:
    from roadtest.trace.commands import show

    return show(args.file, timeline=args.timeline, width=args.width)


def cmd_trace_diff(args: argparse.Namespace) -> int:
    from roadtest.trace.commands import diff

    return diff(args.a, args.b, timeline=args.timeline, width=args.width)


def cmd_trace_export(args: argparse.Namespace) -> int:
    from roadtest.trace.waves import export_command

    return export_command(args.vcd, args.file, args.clock)


def _hertz(text: str) -> int:
    try:
        value = float(text[:-1]) * 1000 if text.lower().endswith("k") else float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"not a frequency: {text!r} (e.g. 400000 or 400k)"
        ) from None
    if value != value or value < 1 or value > 1e12:  # nan, or nothing a bus runs at
        raise argparse.ArgumentTypeError(f"not a clock: {text!r}")
    return round(value)


class _Parser(argparse.ArgumentParser):
    """argparse, whose errors are roadtest's usage errors: one line, exit status 4."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


def parser() -> argparse.ArgumentParser:
    from roadtest.kernel.cli import FORCE_HELP
    from roadtest.run_options import help_text

    RUN_OPTIONS_HELP = help_text()  # noqa: N806 (one text, for the verbs that run tests)
    top = _Parser(
        prog="roadtest",
        description="Test real Linux drivers in a User-Mode Linux guest against Python models.",
    )
    sub = top.add_subparsers(dest="command", required=True, metavar="COMMAND")
    build = sub.add_parser(
        "build", help="build the guest kernel, or confirm the cached one is current"
    )
    which = build.add_mutually_exclusive_group()
    which.add_argument(
        "--coverage", action="store_true", help="the gcov variant that `run --coverage` uses"
    )
    which.add_argument(
        "--sanitizers",
        action="store_true",
        help="the KASAN and kmemleak variant that `run --sanitizers` (and fuzzing) uses",
    )
    build.add_argument(
        "--machine",
        default="um",
        metavar="NAME",
        help="the machine whose kernel to build: um (default) or x86_64 (QEMU)",
    )
    build.add_argument("--force", action="store_true", help=FORCE_HELP)
    build.add_argument(
        "--tree",
        metavar="DIR",
        help="your own kernel tree: built out of tree in the cache (the tree is only read), "
        "incrementally, with those of roadtest's patches that apply to it; or a kernel "
        "source tarball, or an installed Debian package's name (linux-source-6.1)",
    )
    build.add_argument(
        "--series", metavar="FILE", help="with --tree: your own patches too (a quilt series)"
    )
    build.set_defaults(func=cmd_build)
    run = sub.add_parser(
        "run",
        help="run driver tests (arguments go to pytest; default: tests/drivers)",
        description="Run driver tests with pytest: roadtest's run options (below) and --vm "
        "qemu (the whole run inside a QEMU VM; record and replay take it too) are roadtest's; "
        "every other argument is pytest's (its options follow roadtest's here).",
        epilog=RUN_OPTIONS_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    run.add_argument(
        "pytest_args", nargs=argparse.REMAINDER, help="pytest arguments, e.g. -k opt3001 -n 2"
    )
    run.set_defaults(func=cmd_run)
    record = sub.add_parser(
        "record",
        help="run tests with live models and write their traces (default: into traces/)",
        description="Run tests with live models, recording every I2C transfer, GPIO request "
        "and interrupt of each device into DIR/<chip>/<test>.rtrace. The traces replace the "
        "old ones only if every test passed. Other arguments go to pytest.",
        epilog=RUN_OPTIONS_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    record.add_argument(
        "--out",
        metavar="DIR",
        help="where the traces go (default: traces/ beside your own tests, or roadtest's)",
    )
    record.add_argument("pytest_args", nargs=argparse.REMAINDER, help="pytest arguments")
    record.set_defaults(func=cmd_record)
    fuzz = sub.add_parser(
        "fuzz",
        help="run Hypothesis properties (or hostile devices) long and random",
        description="Run the @given tests of the selection (default: tests/drivers) in the "
        "roadtest-fuzz profile, on the sanitizer kernel (KASAN, kmemleak), with a progress "
        "line and a summary per property. Exit status "
        "1 on any failure, with the command that reproduces it. Options it does not know "
        "are pytest's and roadtest run's, in their --opt=VALUE form.",
        epilog=RUN_OPTIONS_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    fuzz.add_argument("selection", nargs="*", help="test files, directories or node ids")
    fuzz.add_argument(
        "--hostile",
        action="store_true",
        help="no property needed: each I2C and SPI device the selection declares, behind a device "
        "that lies, bound, exercised and unbound",
    )
    fuzz.add_argument("--examples", type=int, metavar="N", help="examples per property")
    fuzz.add_argument(
        "--duration", metavar="TIME", help="run rounds of examples for this long (90s, 10m, 1h)"
    )
    fuzz.add_argument("--seed", type=int, metavar="S", help="the random seed (of the first round)")
    fuzz.add_argument(
        "--no-sanitizers",
        action="store_true",
        help="run on the main kernel, not the sanitizer kernel (faster; blind to KASAN "
        "reports and leaks)",
    )
    fuzz.set_defaults(func=cmd_fuzz, pytest_options=[])
    replay = sub.add_parser(
        "replay",
        help="run the tests of golden traces with the traces in place of the models",
        description="Run the test of every trace under --golden DIR (or those of SELECTION) "
        "with a player of the trace in place of the device's model: the driver's I/O must be "
        "the recorded sequence. Exit status 1 on any divergence. Any option of `roadtest "
        "run` is taken too, as --option=VALUE.",
        epilog=RUN_OPTIONS_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    replay.add_argument("--golden", required=True, metavar="DIR")
    replay.add_argument("selection", nargs="*", help="test files or node ids to replay")
    replay.set_defaults(func=cmd_replay, pytest_options=[])
    bisect = sub.add_parser(
        "bisect",
        help="find the commit (or the patch of a series) that changed a driver's behaviour",
        description="Find the first commit of a kernel git tree (--tree), or the first patch "
        "of a series applied to the distribution's source (--series), at which the oracle "
        "fails: the tests given after --, or the golden traces of --golden DIR (those of "
        "the tests after --, if any). Each step builds the UML kernel incrementally (only "
        "the modules under test when nothing else changed) and boots only when its kernel "
        "and modules differ from those of a step already decided. Your tree is never "
        "checked out: the bisection runs in a clone in the cache. Exit status 0 when the "
        "first bad commit is found. Options after -- (in --opt=VALUE form) go to the "
        "oracle's `roadtest run`.",
    )
    which_mode = bisect.add_mutually_exclusive_group(required=True)
    which_mode.add_argument("--tree", metavar="DIR", help="a kernel git tree (git mode)")
    which_mode.add_argument(
        "--series", metavar="FILE", help="a quilt series file of patches (series mode)"
    )
    bisect.add_argument(
        "--good",
        metavar="REV",
        help="a commit where the oracle passes (series mode: a number of patches applied, "
        "or the last patch applied; default 0)",
    )
    bisect.add_argument(
        "--bad",
        metavar="REV",
        help="a later commit where it fails (series mode: default all the patches)",
    )
    bisect.add_argument("--golden", metavar="DIR", help="replay these golden traces")
    bisect.add_argument("--json", metavar="FILE", help="write the steps' log here")
    bisect.add_argument("oracle", nargs="*", help="tests (and roadtest run options)")
    bisect.set_defaults(func=cmd_bisect)
    from roadtest.sweep.command import register as register_sweep

    register_sweep(sub)
    shell = sub.add_parser(
        "shell",
        help="a guest with a test's devices bound: its shell, and their models in Python",
        description="Boot a guest with the devices of SELECTION bound (a test file or "
        "directory: the devices its modules declare; a test FILE::NAME: those it uses; a "
        "device: a compatible such as ti,opt3001, or opt3001), and open a Python prompt "
        "holding their models: set what the hardware senses there, and switch to the "
        "guest's shell with shell() (Ctrl-] comes back) to watch the driver react. "
        "Ctrl-D or exit() powers the guest off. Any option of `roadtest run` is taken too, "
        "as --option=VALUE.",
        epilog=RUN_OPTIONS_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    shell.add_argument("selection", nargs="+", help="test files, tests or devices")
    shell.set_defaults(func=cmd_shell)
    trace = sub.add_parser(
        "trace",
        help="show or compare recorded traces (*.rtrace)",
        description="Show or compare recorded traces (*.rtrace).",
    )
    trace_sub = trace.add_subparsers(dest="trace_command", required=True, metavar="COMMAND")
    show = trace_sub.add_parser(
        "show",
        help="print a trace, one event a line",
        description="Print a trace's header and its events, one a line: seq, time since the "
        "first event, and the event decoded to register level where the model's registers "
        "are known.",
    )
    show.add_argument("file", help="the trace (*.rtrace)")
    show.add_argument(
        "--timeline",
        action="store_true",
        help="draw the transfers, GPIO lines, interrupts and markers on a time axis instead",
    )
    show.add_argument(
        "--width",
        type=int,
        default=None,
        metavar="N",
        help="the timeline's width in characters (default: the terminal's)",
    )
    show.set_defaults(func=cmd_trace_show)
    diff = trace_sub.add_parser(
        "diff",
        help="compare two traces event by event",
        description="Compare two traces event by event, in order, ignoring seq and timestamps: "
        "print the first difference with the events around it and how many events differ. "
        "A is taken as expected and B as actual. The device (bus, compatible, register "
        "width) must match; a different address (the session assigns them per run), kernel, "
        "test or model is shown but not compared. Exit status: 0 identical, 1 different, "
        "2 unreadable input.",
    )
    diff.add_argument("a", help="the expected trace")
    diff.add_argument("b", help="the actual trace")
    diff.add_argument(
        "--timeline",
        action="store_true",
        help="draw both on one time axis, the first difference pointed at (^)",
    )
    diff.add_argument("--width", type=int, default=None, metavar="N", help="its width")
    diff.set_defaults(func=cmd_trace_diff)
    export = trace_sub.add_parser(
        "export",
        help="write a trace as the bus would be on its wires (a VCD for PulseView, GTKWave)",
        description="Write a value change dump of the trace: I2C as SCL and SDA (START, address "
        "and R/W, ACK or NACK, data, repeated START, STOP, with UM10204's timing at the "
        "clock), SPI as SCLK, MOSI, MISO and the chip select in the transfers' mode, every "
        "GPIO line and interrupt as a signal of its own, at the trace's (simulated) times.",
    )
    export.add_argument("--vcd", required=True, metavar="FILE", help="the dump to write")
    export.add_argument(
        "--clock",
        type=_hertz,
        default=100_000,
        metavar="HZ",
        help="the I2C bus clock (default 100000, Standard-mode; up to 1000000, Fast-mode "
        "Plus; 400k is Fast-mode), and the SPI clock of transfers that name none",
    )
    export.add_argument("file", help="the trace (*.rtrace)")
    export.set_defaults(func=cmd_trace_export)
    importing = sub.add_parser(
        "import",
        help="make golden traces from captures of real hardware",
        description="Make golden traces from captures of real hardware.",
    )
    import_sub = importing.add_subparsers(dest="import_command", required=True, metavar="FORMAT")
    tracecmd = import_sub.add_parser(
        "trace-cmd",
        help="the i2c events of a trace-cmd capture, as a golden trace",
        description="Convert the i2c_write/i2c_read/i2c_reply/i2c_result events of one "
        "adapter and address, from a trace.dat (`trace-cmd record -e i2c`) or a saved "
        "`trace-cmd report` text, into a golden trace that `roadtest replay` plays with no "
        "model.",
    )
    tracecmd.add_argument("--input", required=True, metavar="FILE", help="trace.dat or report")
    tracecmd.add_argument(
        "--addr", required=True, type=_address, help="the device's address, e.g. 0x4c"
    )
    tracecmd.add_argument("--compatible", required=True, help="its compatible, e.g. ti,opt3001")
    tracecmd.add_argument(
        "--test", required=True, metavar="NODEID", help="the pytest test the trace replays for"
    )
    tracecmd.add_argument(
        "--device",
        default="",
        metavar="ORIGIN",
        help="the test module's device variable (e.g. test_opt3001.SENSOR); without it the "
        "trace serves the test's device of this compatible",
    )
    tracecmd.add_argument(
        "--adapter",
        type=int,
        default=None,
        metavar="N",
        help="the adapter, i2c-N (default: the only one with traffic at the address)",
    )
    tracecmd.add_argument(
        "--model",
        default="",
        metavar="MODULE:CLASS",
        help="a model whose REG_* names decode the trace (the trace still has no model)",
    )
    tracecmd.add_argument(
        "--regbytes", type=int, default=None, help="register width (default: the model's, or 0)"
    )
    tracecmd.add_argument("--byteorder", choices=("little", "big"), default=None)
    tracecmd.add_argument("-o", "--out", required=True, metavar="FILE.rtrace")
    tracecmd.set_defaults(func=cmd_import_trace_cmd)
    sigrok = import_sub.add_parser(
        "sigrok",
        help="one device's I2C transfers in a logic analyzer's capture, as a golden trace",
        description="Decode SCL and SDA of a logic analyzer's capture (a sigrok session file "
        ".sr, a value change dump, or any input sigrok-cli reads) with sigrok-cli's I2C "
        "decoder, after removing the spikes a device's input filter would, and write one "
        "device's transfers (repeated STARTs joining the messages of one transfer, a NACKed "
        "message failed) as a golden trace that `roadtest replay` plays with no model. A "
        "capture that does not decode cleanly is an error, and nothing is written.",
    )
    sigrok.add_argument("capture", help="the capture: board.sr, board.vcd, ...")
    sigrok.add_argument(
        "--channels",
        metavar="scl=NAME,sda=NAME",
        help="the capture's channels of SCL and SDA (default: those named SCL and SDA, "
        "else D0 and D1)",
    )
    sigrok.add_argument(
        "-I",
        "--input-format",
        metavar="FORMAT",
        help="sigrok-cli's input format and its options, e.g. csv:samplerate=4000000 "
        "(default: sigrok-cli's own choice; a .vcd is read as a value change dump)",
    )
    sigrok.add_argument(
        "--addr",
        type=_address,
        default=None,
        help="the device's address, e.g. 0x4c (default: the only device with transfers)",
    )
    sigrok.add_argument("--compatible", required=True, help="its compatible, e.g. ti,opt3001")
    sigrok.add_argument(
        "--test", required=True, metavar="NODEID", help="the pytest test the trace replays for"
    )
    sigrok.add_argument(
        "--device",
        default="",
        metavar="ORIGIN",
        help="the test module's device variable (e.g. test_opt3001.SENSOR); without it the "
        "trace serves the test's device of this compatible",
    )
    sigrok.add_argument(
        "--spike-filter",
        type=int,
        default=50,
        metavar="NS",
        help="remove pulses narrower than this from SCL and SDA first (default 50, the "
        "I2C-bus specification's tSP; 0: none)",
    )
    sigrok.add_argument(
        "--model",
        default="",
        metavar="MODULE:CLASS",
        help="a model whose REG_* names decode the trace (the trace still has no model)",
    )
    sigrok.add_argument(
        "--regbytes", type=int, default=None, help="register width (default: the model's, or 0)"
    )
    sigrok.add_argument("--byteorder", choices=("little", "big"), default=None)
    sigrok.add_argument(
        "-o",
        "--out",
        required=True,
        metavar="DIR|FILE.rtrace",
        help="a golden directory (the trace goes to DIR/<chip>/<test>.rtrace, where replay "
        "finds it) or the trace's own file name",
    )
    sigrok.set_defaults(func=cmd_import_sigrok)
    return top


def _take_option(args: list[str], name: str, default: str | None) -> tuple[list[str], str | None]:
    """Remove `name VALUE` / `name=VALUE` from args that otherwise all go to pytest."""
    rest: list[str] = []
    value = default
    it = iter(args)
    for arg in it:
        if arg == name:
            value = next(it, "")
            if not value or value.startswith("-"):  # not the next option taken as its value
                raise UsageError(f"{name} needs a value")
        elif arg.startswith(name + "="):
            value = arg.split("=", 1)[1]
        else:
            rest.append(arg)
    return rest, value


def vm_pytest(pytest_args: list[str]) -> int:
    """run_pytest inside a QEMU VM (`--vm qemu`): what run, record and replay run there."""
    from roadtest.arch.x86_64 import X86_64
    from roadtest.kernel import default_cache_dir, ensure_kernel
    from roadtest.testing.session import default_workdir
    from roadtest.vm.command import run_in_vm

    root = repo_root()
    cache = default_cache_dir()

    def build_kernels() -> Path:
        ensure_kernel(root)  # the UML kernel the run boots in the VM
        return ensure_kernel(root, target=X86_64).image

    return run_in_vm(
        pytest_args, cache=cache, workdir=default_workdir(cache, "vm"), build_kernels=build_kernels
    )


def _run_help() -> int:
    """`roadtest run --help`: its own help, roadtest's run options, then pytest's options."""
    from roadtest.pytest_plugin.main import pytest_main

    with contextlib.suppress(SystemExit):
        parser().parse_args(["run", "--help"])
    print("\npytest's own options (`pytest --help`):\n", flush=True)
    return pytest_main(["--help"])


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    previous = signals.install()
    try:
        runner: Callable[[list[str]], int] = run_pytest
        if argv[:1] in (["run"], ["record"], ["replay"]) and not {"-h", "--help"} & set(argv):
            from roadtest.vm.command import take_vm

            rest, vm = take_vm(argv[1:])
            if vm is not None:
                argv, runner = [argv[0], *rest], vm_pytest
        helping = bool({"-h", "--help"} & set(argv[1:2]))
        if argv[:1] == ["run"] and helping:
            return _run_help()
        if argv[:1] == ["run"] and argv[1:] and not helping:
            # Everything after `run` is pytest's but roadtest's run options (argparse would
            # eat pytest's options).
            run_arguments(argv[1:])  # checked now: a bad option is one line, before a build
            args = argparse.Namespace(func=cmd_run, pytest_args=argv[1:])
        elif argv[:1] == ["replay"] and argv[1:] and not helping:
            # roadtest's run options in any spelling; other options are pytest's, in their
            # --opt=VALUE form, since a word alone is a test to replay.
            rest, golden = _take_option(argv[1:], "--golden", "")
            _, rest = run_arguments(rest)
            options = [a for a in rest if a.startswith("-")]
            selection = [a for a in rest if not a.startswith("-")]
            args = argparse.Namespace(
                func=cmd_replay, golden=golden, selection=selection, pytest_options=options
            )
        elif argv[:1] == ["shell"] and not {"-h", "--help"} & set(argv[1:]):
            # Like replay's: options in their --opt=VALUE form, words select devices.
            _, rest = run_arguments(argv[1:], interactive=True)
            args = argparse.Namespace(func=cmd_shell, shell_args=rest)
        elif argv[:1] == ["record"] and argv[1:] and not helping:
            rest, out = _take_option(argv[1:], "--out", None)
            _, pytest_args = run_arguments(rest)
            own = own_test_dirs(pytest_args)
            out = str(default_traces(own)) if out is None else out
            if own and not any(a.startswith("--rootdir") for a in rest):
                # A user's own tests' traces name them relative to their directory, where
                # replay finds them again (beside traces/), whatever directory this ran in.
                rest = [*rest, f"--rootdir={own[0]}"]
            args = argparse.Namespace(func=cmd_record, pytest_args=rest, out=out)
        elif argv[:1] == ["bisect"] and "--" in argv:
            # After --: the oracle's tests and options, none of them bisect's own.
            cut = argv.index("--")
            args = parser().parse_args(argv[:cut])
            args.oracle = argv[cut + 1 :]
        elif argv[:1] == ["fuzz"]:
            from roadtest import run_options

            # roadtest's run options first (in any spelling: argparse would take a value
            # given apart for a test to fuzz), then fuzz's own; the rest is pytest's.
            values, rest = run_options.take(argv[1:])
            args, unknown = parser().parse_known_args(["fuzz", *rest])
            args.pytest_options = [*run_options.as_arguments(values), *unknown]
        else:
            args = parser().parse_args(argv)
        args.runner = runner
        status: int = args.func(args)
        signals.check()  # pytest swallows KeyboardInterrupt: replay printed its summary
    except UsageError as err:
        print(f"roadtest: {err}", file=sys.stderr)
        return 4  # pytest's usage error
    except RoadtestError as err:
        print(f"roadtest: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"roadtest: {signals.describe()}", file=sys.stderr)
        return signals.exit_status()
    finally:
        signals.restore(previous)
    return status


if __name__ == "__main__":
    sys.exit(main())
