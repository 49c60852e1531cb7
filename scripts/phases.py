#!/usr/bin/env python3
"""make test's phase table: each phase's wall time and status, printed at its end.

A build tool, not part of roadtest (the standard library only: it runs with plain
python3, before or without the venv).

    phases.py run [--file FILE] [--lane LANE] NAME -- COMMAND...
        print COMMAND (as make would) and run it; append "LANE NAME STATUS SECONDS START
        CPU" to FILE (nothing without --file, or with an empty one); exit with its status
    phases.py table FILE [--expect LANE:NAME...]
        print the table of FILE's phases, and each expected phase that did not run (its
        prerequisite failed); exit 1 if one failed or did not run

STATUS is `ok`, `exit=N` or `signal=N`; START is the time it started (epoch seconds);
CPU the CPU seconds (user and system) of the command and the processes it waited for
(wait4's rusage): on a machine of two CPUs, two lanes side by side can take at most two
CPU seconds a second, so the table's CPU column says which phases to make cheaper for
make test to end sooner. A record of five fields (no CPU) is read too.
A line "# started EPOCH" (make test writes it first, in shell: python3 may not be
installed yet) is the run's start. Two lanes append to FILE at once: each record is one
write to a file opened with O_APPEND, so records never interleave.
"""

from __future__ import annotations

import argparse
import fcntl
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from types import FrameType
from typing import IO

START_MARK = "# started"


@dataclass(frozen=True)
class Phase:
    lane: str
    name: str
    status: str
    seconds: float
    start: float  # epoch seconds
    cpu: float | None = None  # user and system seconds of the command's processes
    runs: int = 1  # the records folded into this one (fold)

    @property
    def failed(self) -> bool:
        return self.status != "ok"

    @property
    def end(self) -> float:
        return self.start + self.seconds

    def line(self) -> str:
        cpu = "" if self.cpu is None else f" {self.cpu:.1f}"
        return f"{self.lane} {self.name} {self.status} {self.seconds:.1f} {self.start:.1f}{cpu}\n"


def status_of(returncode: int) -> str:
    if returncode == 0:
        return "ok"
    if returncode < 0:
        return f"signal={-returncode}"
    return f"exit={returncode}"


def append(path: Path, phase: Phase) -> None:
    """One write, O_APPEND: whole records, whichever lane writes at the same time."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, phase.line().encode())
    finally:
        os.close(fd)


def wait_with_cpu(pid: int) -> tuple[int, float]:
    """Wait for child `pid`: its Popen-style return code (-N for signal N) and the CPU
    seconds, user and system, of it and of the descendants it waited for."""
    while True:
        try:
            _, status, usage = os.wait4(pid, 0)
            break
        except InterruptedError:
            continue
    return os.waitstatus_to_exitcode(status), usage.ru_utime + usage.ru_stime


def run(command: list[str], name: str, lane: str, path: Path | None) -> int:
    """Run `command` to its end and record it; its exit status (128+N for signal N).
    Recorded (make test, whose steps run side by side), its output is kept in a file and
    printed in one piece, headed by the command, when it ends: steps that end together
    print one after the other (a lock beside the record file), not line by line mixed."""
    out = tempfile.TemporaryFile() if path is not None else None
    if out is None:
        print(shlex.join(command), flush=True)
    start = time.time()
    began = time.monotonic()
    cpu: float | None = None
    try:
        child = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT if out else None)
    except OSError as e:
        print(f"phases.py: {name}: cannot run {command[0]}: {e.strerror}", file=sys.stderr)
        returncode = 127
    else:
        # Ctrl-C reaches the command from the terminal: wait for it to end and record
        # how it ended. SIGTERM (to this process only) is passed on.
        def forward(signum: int, frame: FrameType | None) -> None:
            child.send_signal(signum)

        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, forward)
        returncode, cpu = wait_with_cpu(child.pid)
    phase = Phase(lane, name, status_of(returncode), time.monotonic() - began, start, cpu)
    if path is not None:
        assert out is not None
        show(out, shlex.join(command), path)
        append(path, phase)
    return 128 - returncode if returncode < 0 else returncode


def show(out: IO[bytes], header: str, record: Path) -> None:
    """`header` and the output kept in `out` on stdout, under the record's lock."""
    record.parent.mkdir(parents=True, exist_ok=True)
    with open(record.with_name(record.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        sys.stdout.write(header + "\n")
        sys.stdout.flush()
        out.seek(0)
        shutil.copyfileobj(out, sys.stdout.buffer)
        sys.stdout.buffer.flush()


def parse(text: str) -> tuple[float | None, list[Phase]]:
    """The start time (if recorded) and the phases of a record file; bad lines skipped."""
    started: float | None = None
    phases: list[Phase] = []
    for line in text.splitlines():
        if line.startswith(START_MARK):
            try:
                started = float(line[len(START_MARK) :])
            except ValueError:
                pass
            continue
        fields = line.split()
        if len(fields) not in (5, 6):
            continue
        lane, name, status, seconds, start = fields[:5]
        try:
            cpu = float(fields[5]) if len(fields) == 6 else None
            phases.append(Phase(lane, name, status, float(seconds), float(start), cpu))
        except ValueError:
            continue
    return started, phases


def clock(seconds: float) -> str:
    """m:ss, or h:mm:ss from an hour."""
    s = round(seconds)
    h, s = divmod(s, 3600)
    m, s = divmod(s, 60)
    return f"{h}:{m:02}:{s:02}" if h else f"{m}:{s:02}"


def shared(phase: Phase, phases: list[Phase]) -> Phase | None:
    """The same phase in another lane that was running when this one started: both ran
    the same build (the first to take the build lock builds, the other waits for it)."""
    for other in phases:
        if (
            other.name == phase.name
            and other.lane != phase.lane
            and other.start <= phase.start < other.end
        ):
            return other
    return None


def fold(phases: list[Phase]) -> list[Phase]:
    """One row for a phase a lane ran more than once with the same status (each of its
    chains checks the kernel it needs): the first start, the longest time, the CPU of all."""
    folded: dict[tuple[str, str, str], Phase] = {}
    for p in sorted(phases, key=lambda p: p.start):
        first = folded.get((p.lane, p.name, p.status))
        if first is None:
            folded[(p.lane, p.name, p.status)] = p
            continue
        cpus = [c for c in (first.cpu, p.cpu) if c is not None]
        folded[(p.lane, p.name, p.status)] = replace(
            first,
            seconds=max(first.seconds, p.seconds),
            cpu=sum(cpus) if cpus else None,
            runs=first.runs + 1,
        )
    return list(folded.values())


def table(
    started: float | None, phases: list[Phase], now: float, expect: Sequence[tuple[str, str]] = ()
) -> tuple[str, bool]:
    """The table, and whether every phase passed and every expected (lane, name) ran.
    Lanes in the order they started, each lane's phases in the order they started, times
    from the run's start; an expected phase that did not run ends its lane's rows."""
    ran = {(p.lane, p.name) for p in phases}
    missing = [e for e in expect if e not in ran]
    if not phases and not missing:
        return "make test: no phase recorded\n", True
    origin = started if started is not None else min(p.start for p in phases)
    lanes: list[str] = []
    for p in sorted(phases, key=lambda p: p.start):
        if p.lane not in lanes:
            lanes.append(p.lane)
    lanes += [lane for lane, _ in missing if lane not in lanes]
    width = max(len("phase"), *(len(p.name) for p in phases), *(len(n) for _, n in missing))
    lane_width = max(len("lane"), *(len(lane) for lane in lanes))
    failed = [f"{p.lane}/{p.name}" for p in fold(phases) if p.failed]
    head = (
        f"{'lane':<{lane_width}}  {'phase':<{width}}  {'start':>7}  {'time':>7}  {'cpu':>7}  status"
    )
    rows = [f"make test: phases in {clock(now - origin)} (wall time)", head]
    rows_of = fold(phases)
    for lane in lanes:
        mine = sorted((p for p in phases if p.lane == lane), key=lambda p: p.start)
        for p in sorted((p for p in rows_of if p.lane == lane), key=lambda p: p.start):
            status = "ok" if not p.failed else f"FAILED ({p.status})"
            other = shared(p, phases)
            notes = [f"{p.runs} runs: each chain checks it"] if p.runs > 1 else []
            notes += [f"with {other.lane}'s: one built it, one waited"] if other else []
            note = f"  ({'; '.join(notes)})" if notes else ""
            cpu = "-" if p.cpu is None else clock(p.cpu)
            rows.append(
                f"{lane:<{lane_width}}  {p.name:<{width}}  {clock(p.start - origin):>7}"
                f"  {clock(p.seconds):>7}  {cpu:>7}  {status}{note}"
            )
        for _, name in (e for e in missing if e[0] == lane):
            rows.append(
                f"{lane:<{lane_width}}  {name:<{width}}  {'':>7}  {'':>7}  {'':>7}  not run"
            )
        if mine:
            span = max(p.end for p in mine) - min(p.start for p in mine)
            cpus = [p.cpu for p in mine if p.cpu is not None]
            lane_cpu = clock(sum(cpus)) if cpus else ""
            rows.append(
                f"{lane:<{lane_width}}  {'(lane)':<{width}}  {'':>7}  {clock(span):>7}"
                f"  {lane_cpu:>7}"
            )
    timed = [p.cpu for p in phases if p.cpu is not None]
    if timed:
        wall = now - origin
        rows.append(
            f"cpu: {clock(sum(timed))} in {clock(wall)}, {sum(timed) / wall:.2f} CPUs busy on "
            f"average of this machine's {os.cpu_count()} (the phases' processes)"
        )
    if failed:
        rows.append(f"FAILED: {', '.join(failed)}")
    if missing:
        rows.append(f"not run: {', '.join(f'{lane}/{name}' for lane, name in missing)}")
    if not failed and not missing:
        rows.append(f"all {len(rows_of)} phases passed")
    return "\n".join(rows) + "\n", not failed and not missing


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="phases.py", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p_run = sub.add_parser("run", help="run a command and record it")
    p_run.add_argument("--file", default="", help="the record file (none: record nothing)")
    p_run.add_argument("--lane", default="", help="the lane (default: -)")
    p_run.add_argument("name")
    p_run.add_argument("argv", nargs=argparse.REMAINDER, help="-- COMMAND...")
    p_table = sub.add_parser("table", help="print the table; exit 1 if a phase failed")
    p_table.add_argument("file", type=Path)
    p_table.add_argument("--expect", nargs="*", default=[], metavar="LANE:NAME")
    args = parser.parse_args(argv)

    if args.command == "run":
        command = args.argv[1:] if args.argv[:1] == ["--"] else args.argv
        if not command or " " in args.name or " " in args.lane:
            parser.error("run: a NAME and LANE without spaces, then -- COMMAND...")
        path = Path(args.file) if args.file else None
        return run(command, args.name, args.lane or "-", path)
    try:
        text = args.file.read_text()
    except FileNotFoundError:
        text = ""
    started, phases = parse(text)
    expect = [(e.partition(":")[0], e.partition(":")[2]) for e in args.expect]
    out, passed = table(started, phases, time.time(), expect)
    sys.stdout.write(out)
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
