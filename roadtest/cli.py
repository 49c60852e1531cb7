"""The `roadtest` command: build the guest kernel, run driver tests."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from roadtest.errors import RoadtestError

if TYPE_CHECKING:
    from roadtest.recorder import Decoder, Header


def _repo_root() -> Path:
    from roadtest.testing.plugin import repo_root

    return repo_root()


_XDIST_OPTIONS = {"--numprocesses", "--dist", "--tx", "-d", "--looponfail", "-f"}


def cmd_build(args: argparse.Namespace) -> int:
    from roadtest.kernel import build_main

    return build_main(_repo_root())


def cmd_run(args: argparse.Namespace) -> int:
    return run_pytest(list(args.pytest_args))


def run_pytest(pytest_args: list[str]) -> int:
    """pytest on driver tests (default: tests/drivers), with the kernel built first."""
    import pytest

    from roadtest.kernel import ensure_kernel

    # Build (or confirm) the kernel first, so its progress is not hidden behind pytest's capture.
    ensure_kernel(_repo_root())
    if not any(not a.startswith("-") for a in pytest_args):
        pytest_args = [*pytest_args, str(_repo_root() / "tests" / "drivers")]
    # Hypothesis' pytest plugin imports all of Hypothesis up front: ~0.9 s of every run here.
    # @given tests work without it; ROADTEST_HYPOTHESIS_PLUGIN=1 keeps it (for its options).
    if os.environ.get("ROADTEST_HYPOTHESIS_PLUGIN") != "1":
        pytest_args = ["-p", "no:hypothesispytest", *pytest_args]
    # Loading xdist costs ~0.15 s; only load it when the run asks for workers.
    wants_xdist = any(a.split("=")[0] in _XDIST_OPTIONS or a[:2] == "-n" for a in pytest_args)
    if not wants_xdist and not os.environ.get("PYTEST_ADDOPTS"):
        pytest_args = ["-p", "no:xdist", *pytest_args]
    return int(pytest.main(pytest_args))


def cmd_record(args: argparse.Namespace) -> int:
    from roadtest.recorder.record_command import record

    return record(list(args.pytest_args), Path(args.out), run_pytest)


def cmd_replay(args: argparse.Namespace) -> int:
    from roadtest.replayer.replay_command import replay

    return replay(Path(args.golden), list(args.selection), _repo_root(), run_pytest)


def cmd_import_trace_cmd(args: argparse.Namespace) -> int:
    from roadtest.recorder.tracecmd import command

    return command(args)


def _address(text: str) -> int:
    try:
        return int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r} (e.g. 0x4c)") from None


_TRACE_CONTEXT = 3  # events shown before and after the first difference


def _trace_title(path: str, header: Header) -> list[str]:
    import datetime

    created = datetime.datetime.fromtimestamp(header.created).isoformat(" ", "seconds")
    lines = [
        f"# {path}: {header.compatible} at {header.bus} {header.address:#04x}, "
        f"model {header.model or '(none)'}, regbytes {header.regbytes} {header.byteorder}",
        f"# kernel {header.kernel}, test {header.test}, recorded {created}",
    ]
    lines += [f"# {key}: {value!r}" for key, value in header.extra.items()]
    return lines


def cmd_trace_show(args: argparse.Namespace) -> int:
    from roadtest.recorder import Decoder, read_trace

    header, events = read_trace(args.file)
    decoder = Decoder(header)
    try:
        print("\n".join(_trace_title(args.file, header)))
        start: int | None = None
        for event in events:
            start = event["t"] if start is None else start
            ms = (event["t"] - start) / 1e6
            print(f"{event['seq']:6d} {ms:10.3f} ms  {decoder.describe(event)}")
        sys.stdout.flush()
    except BrokenPipeError:  # `roadtest trace show x | head`: not an error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0


def cmd_trace_diff(args: argparse.Namespace) -> int:
    """Compare two traces event by event (A as expected, B as actual); 0 same, 1 differ."""
    from collections import deque
    from itertools import zip_longest

    from roadtest.recorder import Decoder, read_trace
    from roadtest.recorder.decode import body

    header_a, events_a = read_trace(args.a)
    header_b, events_b = read_trace(args.b)
    dec_a, dec_b = Decoder(header_a), Decoder(header_b)
    out: list[str] = []
    # The device must be the same one; the kernel, test and model may differ (shown only).
    device_differs = False
    for key in ("bus", "address", "compatible", "regbytes", "byteorder", "kernel", "test", "model"):
        va, vb = getattr(header_a, key), getattr(header_b, key)
        if va != vb:
            # The address is where the session put the device: it depends on which
            # tests a run collected, not on the driver.
            identity = key in ("bus", "compatible", "regbytes", "byteorder")
            device_differs |= identity
            shown = f"{va:#04x} vs {vb:#04x}" if key == "address" else f"{va!r} vs {vb!r}"
            out.append(f"header: {key} {shown}" + ("" if identity else " (not compared)"))
    before: deque[tuple[int, dict[str, Any]]] = deque(maxlen=_TRACE_CONTEXT)
    first: list[str] = []
    after = 0
    differing = count_a = count_b = 0
    for index, (x, y) in enumerate(zip_longest(events_a, events_b)):
        count_a += x is not None
        count_b += y is not None
        same = x is not None and y is not None and body(x) == body(y)
        differing += not same
        if not first and same:
            assert x is not None
            before.append((index, x))
        elif not first:
            first = [f"first difference at event {index}:"]
            first += [f"    {i:6d}  {dec_a.describe(e)}" for i, e in before]
            first += _diff_pair(index, x, y, args.a, args.b, dec_a, dec_b)
            if x is not None and y is not None:
                first.append(f"    => {dec_b.describe_expected_actual(x, y)}")
        elif after < _TRACE_CONTEXT:
            after += 1
            if same:
                assert x is not None
                first.append(f"    {index:6d}  {dec_a.describe(x)}")
            else:
                first += _diff_pair(index, x, y, args.a, args.b, dec_a, dec_b)
    out += first
    if not differing and not device_differs:
        out.append(f"identical: {count_a} events")
        print("\n".join(out))
        return 0
    out.append(
        f"{differing} of {max(count_a, count_b)} events differ ({args.a}: {count_a} events, "
        f"{args.b}: {count_b})"
    )
    print("\n".join(out))
    return 1


def _diff_pair(
    index: int,
    x: dict[str, Any] | None,
    y: dict[str, Any] | None,
    path_a: str,
    path_b: str,
    dec_a: Decoder,
    dec_b: Decoder,
) -> list[str]:
    line_a = dec_a.describe(x) if x is not None else f"(end of {path_a})"
    line_b = dec_b.describe(y) if y is not None else f"(end of {path_b})"
    return [f"-   {index:6d}  {line_a}", f"+   {index:6d}  {line_b}"]


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(
        prog="roadtest",
        description="Test real Linux drivers in a User-Mode Linux guest against Python models.",
    )
    sub = top.add_subparsers(dest="command", required=True, metavar="COMMAND")
    build = sub.add_parser(
        "build", help="build the guest kernel, or confirm the cached one is current"
    )
    build.set_defaults(func=cmd_build)
    run = sub.add_parser(
        "run",
        help="run driver tests (arguments go to pytest; default: tests/drivers)",
        description="Run driver tests with pytest; every argument is passed to pytest.",
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
    )
    record.add_argument("--out", default=str(_repo_root() / "traces"), metavar="DIR")
    record.add_argument("pytest_args", nargs=argparse.REMAINDER, help="pytest arguments")
    record.set_defaults(func=cmd_record)
    replay = sub.add_parser(
        "replay",
        help="run the tests of golden traces with the traces in place of the models",
        description="Run the test of every trace under --golden DIR (or those of SELECTION) "
        "with a player of the trace in place of the device's model: the driver's I/O must be "
        "the recorded sequence. Exit status 1 on any divergence.",
    )
    replay.add_argument("--golden", required=True, metavar="DIR")
    replay.add_argument("selection", nargs="*", help="test files or node ids to replay")
    replay.set_defaults(func=cmd_replay)
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
    show.set_defaults(func=cmd_trace_show)
    diff = trace_sub.add_parser(
        "diff",
        help="compare two traces event by event",
        description="Compare two traces event by event, in order, ignoring seq and timestamps: "
        "print the first difference with the events around it and how many events differ. "
        "A is taken as expected and B as actual. The device (bus, address, compatible, "
        "register width) must match; a different kernel, test or model is shown but not "
        "compared. Exit status: 0 identical, 1 different, 2 unreadable input.",
    )
    diff.add_argument("a", help="the expected trace")
    diff.add_argument("b", help="the actual trace")
    diff.set_defaults(func=cmd_trace_diff)
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
    return top


def _take_option(args: list[str], name: str, default: str) -> tuple[list[str], str]:
    """Remove `name VALUE` / `name=VALUE` from args that otherwise all go to pytest."""
    rest: list[str] = []
    value = default
    it = iter(args)
    for arg in it:
        if arg == name:
            value = next(it, "")
            if not value:
                raise RoadtestError(f"{name} needs a value")
        elif arg.startswith(name + "="):
            value = arg.split("=", 1)[1]
        else:
            rest.append(arg)
    return rest, value


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) > 1 and argv[0] == "run" and argv[1] not in ("-h", "--help"):
        # Everything after `run` is pytest's, options first included (argparse would eat them).
        args = argparse.Namespace(func=cmd_run, pytest_args=argv[1:])
    elif len(argv) > 1 and argv[0] == "record" and argv[1] not in ("-h", "--help"):
        rest, out = _take_option(argv[1:], "--out", str(_repo_root() / "traces"))
        args = argparse.Namespace(func=cmd_record, pytest_args=rest, out=out)
    else:
        args = parser().parse_args(argv)
    try:
        status: int = args.func(args)
    except RoadtestError as err:
        print(f"roadtest: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("roadtest: interrupted", file=sys.stderr)
        return 130
    return status


if __name__ == "__main__":
    sys.exit(main())
