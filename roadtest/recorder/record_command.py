"""`roadtest record`: run tests with live models and write their golden traces.

The output DIR is only ever the old tree or the complete new one, even after
SIGKILL. The tests write into `.<DIR>.record-<pid>/staging`, next to DIR and
outside it (replay reads every trace under DIR). After a passing run, `new`
beside it gets the whole new tree, hard links of DIR's files with the
recorded traces over them, and one rename(RENAME_EXCHANGE) swaps it with DIR.
Where the file system cannot exchange, DIR goes to `old` and `new` to DIR,
and `settle()` finishes that switch if a kill came between the two renames.
Every record and replay settles first: the work directories of dead
processes are finished or removed.

What a run replaces: the traces it wrote whose I/O changed. A trace with the same
I/O as the one in DIR (only its events' times differ: a new kernel boots to another
guest time) leaves that one as it was, so a re-recording changes what changed. Traces
it did not write stay, also those whose test is gone (record names them, for the user
to delete).
"""

from __future__ import annotations

import ctypes
import errno
import os
import re
import shutil
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from roadtest import signals
from roadtest.errors import RoadtestError

_AT_FDCWD = -100
_RENAME_EXCHANGE = 2
_WORK = re.compile(r"^\.(?P<out>.+)\.record-(?P<pid>\d+)$")
_OLD_STAGING = re.compile(r"^\.record-(?P<pid>\d+)$")  # inside DIR, before it moved out


def _shown(path: Path) -> str:
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def work_dir(out: Path, pid: int) -> Path:
    return out.parent / f".{out.name}.record-{pid}"


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[-1].split()[0] != "Z"  # a zombie is dead, only not reaped


def _exchange(a: Path, b: Path) -> bool:
    """Swap two directories in one step; False where the system or file system cannot."""
    renameat2 = getattr(ctypes.CDLL(None, use_errno=True), "renameat2", None)
    if renameat2 is None:
        return False
    renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p]
    renameat2.argtypes += [ctypes.c_uint]
    if renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
        return False
    raise OSError(err, os.strerror(err), str(a), None, str(b))


def _finish(out: Path, work: Path) -> None:
    """Complete or undo the switch of `work` (whose process is gone or done), then remove it."""
    new, old = work / "new", work / "old"
    if not out.exists() and new.is_dir() and old.is_dir():
        os.rename(new, out)  # the two-rename switch lost DIR between its steps: roll forward
    shutil.rmtree(work, ignore_errors=True)


def settle(out: Path) -> None:
    """Finish the switches and remove the staging that killed records of `out` left."""
    out = out.resolve()
    if out.parent.is_dir():
        for path in out.parent.iterdir():
            match = _WORK.match(path.name)
            if match and match["out"] == out.name and not _alive(int(match["pid"])):
                _finish(out, path)
    if out.is_dir():
        for path in out.iterdir():
            match = _OLD_STAGING.match(path.name)
            if match and path.is_dir() and not _alive(int(match["pid"])):
                shutil.rmtree(path, ignore_errors=True)


def _link_or_copy(source: str, target: str) -> None:
    # A link costs nothing, and the old tree's file is never written to (only replaced).
    try:
        os.link(source, target)
    except OSError:  # a file system without hard links
        shutil.copy2(source, target)


def same_io(old: Path, recorded: Path) -> bool:
    """Whether `recorded` holds what `old` holds but for when it was made and when its
    events came: the same test's device, on the same kernel, with the same I/O. (A new
    kernel's boot moves the guest's clock at every event; replay compares the I/O.)"""
    from roadtest.trace.decode import body
    from roadtest.trace.format import TraceError, load_trace

    try:
        old_header, old_events = load_trace(old)
        new_header, new_events = load_trace(recorded)
    except (TraceError, OSError):
        return False

    def io(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
        # As `roadtest trace diff` compares events, less the guest's time.
        return [{k: v for k, v in body(e).items() if k != "sim"} for e in events]

    same_header = replace(old_header, created=0.0) == replace(new_header, created=0.0)
    return same_header and io(old_events) == io(new_events)


def drop_unchanged(out: Path, staging: Path) -> list[Path]:
    """Take out of `staging` each trace with the same I/O as the one it would replace
    in `out`, which then stays as it was; return those of `out`."""
    unchanged = []
    for trace in sorted(staging.rglob("*.rtrace")):
        target = out / trace.relative_to(staging)
        if not trace.is_symlink() and target.is_file() and same_io(target, trace):
            trace.unlink()
            unchanged.append(target)
    return unchanged


def switch(out: Path, staging: Path, work: Path) -> list[Path]:
    """Make `out` the old tree with the traces under `staging` over it, in one step."""
    new = work / "new"
    if out.is_dir():
        shutil.copytree(out, new, symlinks=True, copy_function=_link_or_copy)
    else:
        new.mkdir()
    written = []
    for trace in sorted(staging.rglob("*.rtrace")):
        if trace.is_symlink() or not trace.is_file():
            continue  # the recorder writes files; anything else came from the guest (--vm)
        relative = trace.relative_to(staging)
        target = new / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(trace, target)  # replaces the link; the old tree's file is untouched
        written.append(out / relative)
    if not out.exists():
        os.rename(new, out)
    elif not _exchange(new, out):
        os.rename(out, work / "old")
        try:
            os.rename(new, out)
        except OSError:
            os.rename(work / "old", out)
            raise
    return written


def _gone_tests(out: Path, written: list[Path], root: Path) -> list[Path]:
    """Traces in the chip directories just recorded whose test no longer exists."""
    from roadtest.trace.format import TraceError, read_header
    from roadtest.trace.names import test_file

    gone = []
    for chip in sorted({p.parent for p in written}):
        for path in sorted(set(chip.glob("*.rtrace")) - set(written)):
            try:
                if test_file(root, read_header(path).test) is None:
                    gone.append(path)
            except (TraceError, RoadtestError):  # not ours to judge here: replay reports them
                continue
    return gone


def record(
    pytest_args: list[str],
    out: Path,
    run_pytest: Callable[[list[str]], int],
    root: Path | None = None,
) -> int:
    out = out.resolve()
    if out.exists() and not out.is_dir():
        raise RoadtestError(f"--out {out}: not a directory")
    out.parent.mkdir(parents=True, exist_ok=True)
    settle(out)
    work = work_dir(out, os.getpid())
    shutil.rmtree(work, ignore_errors=True)
    staging = work / "staging"
    staging.mkdir(parents=True)
    from roadtest.trace.format import write_failures

    failed_before = len(write_failures())
    try:
        status = run_pytest([f"--roadtest-record={staging}", *pytest_args])
        signals.check()  # pytest returns on SIGINT/SIGTERM: then nothing is switched
        unwritten = write_failures()[failed_before:]
        if status != 0 and unwritten:
            # Not "the tests did not pass": the disk is full (the run stopped at it).
            raise RoadtestError(f"{unwritten[0]}; the traces in {out} are unchanged")
        if status != 0:
            print(f"roadtest record: the tests did not pass; the traces in {out} are unchanged")
            return status
        if not any(staging.rglob("*.rtrace")):
            print("roadtest record: no test used an I2C or SPI device; nothing was recorded")
            return 1
        unchanged = drop_unchanged(out, staging)
        with signals.deferred():  # a signal now would only leave the user guessing
            try:
                written = switch(out, staging, work)
            except OSError as err:
                raise RoadtestError(
                    f"cannot put the new traces in place ({err}); {out} is unchanged"
                ) from None
            for target in written:
                print(f"recorded {_shown(target)}")
            if unchanged:
                n = len(unchanged)
                print(
                    f"roadtest record: {n} trace{'s' if n != 1 else ''} unchanged "
                    "(the same I/O), left as they were"
                )
        for path in _gone_tests(out, written + unchanged, root) if root is not None else []:
            print(f"roadtest record: {_shown(path)}: its test no longer exists; delete it")
        return 0
    finally:
        _finish(out, work)
