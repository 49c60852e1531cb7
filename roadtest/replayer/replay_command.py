"""`roadtest replay --golden DIR [selection]`: DIR's tests, with its traces in place of models.

The pytest run writes what it found into a results directory under the cache
(`<cache>/replay/run-*`), which the replay removes when it is done. A replay killed
with SIGKILL cannot remove its own, so each one holds an flock on its directory while
it lives, and the next replay removes those nobody holds: the kernel drops a dead
process's locks, whatever killed it, and a pid that was reused does not fool it.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from roadtest.errors import RoadtestError
from roadtest.replayer.failures import ReplayFailure
from roadtest.replayer.golden import scan_golden
from roadtest.replayer.results import Results, read_results
from roadtest.text import count, printable
from roadtest.trace.names import shown_id, test_file

_LINE_WIDTH = 600  # characters of one trace's line in the summary
# A test's headline that is a replay's own failure (ReplayDivergence, DamagedTrace).
_REPLAY_FAILURE = f"{ReplayFailure.__module__}."
_RESULTS_PREFIX = "run-"  # a results directory's name: run-<random>, under the cache's replay/


def _lock(path: Path, blocking: bool) -> int | None:
    """An fd of `path` (a directory or file) holding its exclusive flock; None if another
    process holds it and `blocking` is false."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB))
    except BlockingIOError:
        os.close(fd)
        return None
    except BaseException:
        os.close(fd)
        raise
    return fd


def _cannot_make(parent: Path, err: OSError) -> RoadtestError:
    return RoadtestError(
        f"cannot make the replay's results directory in {printable(str(parent))}: "
        f"{err.strerror or err}"
    )


@contextlib.contextmanager
def results_directory(parent: Path) -> Iterator[Path]:
    """A new, empty directory under `parent` for one replay's results, removed at the end;
    first removes those of replays that are gone (killed), however they ended."""
    # Held while cleaning up and while making ours: no other replay takes our new
    # directory for a dead one between its creation and its lock.
    try:
        parent.mkdir(parents=True, exist_ok=True)
        (parent / ".lock").touch()
        guard = _lock(parent / ".lock", blocking=True)
    except OSError as err:
        raise _cannot_make(parent, err) from None
    try:
        for stale in sorted(parent.glob(f"{_RESULTS_PREFIX}*")):
            try:
                held = _lock(stale, blocking=False)
            except OSError:  # gone meanwhile, or nothing we can open
                continue
            if held is not None:  # nobody holds it: its replay is gone
                shutil.rmtree(stale, ignore_errors=True)
                os.close(held)
        try:
            directory = Path(tempfile.mkdtemp(prefix=_RESULTS_PREFIX, dir=parent))
        except OSError as err:
            raise _cannot_make(parent, err) from None
        fd = _lock(directory, blocking=True)
    finally:
        assert guard is not None
        os.close(guard)
    try:
        yield directory
    finally:
        shutil.rmtree(directory, ignore_errors=True)
        if fd is not None:
            os.close(fd)


def _wanted(selection: list[str], root: Path) -> list[str]:
    """The selection as test ids relative to `root`; RoadtestError for a path outside it."""
    wanted = []
    for item in selection:
        file, sep, rest = item.partition("::")
        try:
            exists = bool(file) and Path(file).exists()
            resolved = Path(file).resolve() if exists else None
        except (OSError, ValueError) as err:
            raise RoadtestError(
                f"{shown_id(item)}: {getattr(err, 'strerror', None) or err}"
            ) from None
        if resolved is None:
            wanted.append(item)
        elif not resolved.is_relative_to(root):
            raise RoadtestError(
                f"{shown_id(item)}: not among these tests ({root}); select test files or node ids"
            )
        else:
            wanted.append(str(resolved.relative_to(root)) + sep + rest)
    return wanted


def tests_of(golden: Path, checkout: Path) -> tuple[Path, str]:
    """Whose tests the traces under `golden` are: a user's own, those of the directory
    beside a traces/ directory outside the checkout that `golden` is in or under (where
    `roadtest record` writes their traces, with ids relative to it): (that directory, "");
    otherwise roadtest's checkout's tests/: (checkout, "tests")."""
    where = golden.resolve()
    if not where.is_relative_to(checkout.resolve()):
        for folder in (where, *where.parents):
            if folder.name == "traces":
                return folder.parent, ""
    return checkout, "tests"


def replay(
    golden: Path,
    selection: list[str],
    checkout: Path,
    run_pytest: Callable[[list[str]], int],
    pytest_options: Sequence[str] = (),
    results_parent: Path | None = None,
) -> int:
    """Play the traces under `golden` (those of the tests in `selection`, else all) in a
    pytest run that also gets `pytest_options` (any of `roadtest run`'s). The run's results
    go under `results_parent` (default: the cache's replay/)."""
    if not golden.is_dir():
        raise RoadtestError(f"--golden {golden}: no such directory")
    root, tests_dir = tests_of(golden, checkout)
    if not tests_dir:  # a user's tests: their ids are relative to their directory
        pytest_options = [*pytest_options, f"--rootdir={root}"]
    index = scan_golden(golden)
    if not index.headers and not index.damaged:
        raise RoadtestError(f"--golden {golden}: no traces (*.rtrace) there")
    root = root.resolve()
    tests: dict[Path, str] = {}
    for path, header in index.headers.items():
        try:
            found = test_file(root, header.test, tests_dir)
        except RoadtestError as err:
            raise RoadtestError(f"{printable(str(path))}: {err}") from None
        if found is None:
            raise RoadtestError(
                f"{printable(str(path))}: its test {shown_id(header.test)} no longer exists: "
                "delete the trace, or record the test under its new name"
            )
        tests[path] = header.test
    wanted = _wanted(selection, root)
    if wanted:
        tests = {p: t for p, t in tests.items() if any(t.startswith(w) for w in wanted)}
        if not tests:
            raise RoadtestError(f"no trace under {golden} belongs to {' '.join(selection)}")
    # Every selected trace, played or not, in path order; the damaged ones only without a selection.
    listed = sorted([*tests, *([] if wanted else index.damaged)])
    played = {p: t for p, t in tests.items() if p not in index.shadowed}
    node_ids = sorted(
        {str(root / t.split("::", 1)[0]) + "::" + t.split("::", 1)[1] for t in played.values()}
    )
    results = Results({}, {})
    status = 0
    if node_ids:
        if results_parent is None:
            from roadtest.kernel.cache import default_cache_dir

            results_parent = default_cache_dir() / "replay"
        with results_directory(results_parent) as directory:
            status = run_pytest(
                [
                    *pytest_options,
                    f"--roadtest-replay={golden}",
                    f"--roadtest-replay-results={directory}",
                    *node_ids,
                ]
            )
            results = read_results(directory)
    failed = skipped = other_kernel = 0
    print(f"replay of {printable(str(golden))}:")
    for path in listed:
        entry = results.traces.get(str(path))
        problem = index.problem(path)
        shown_path = printable(str(path))
        test_failed = results.failed_tests.get(tests.get(path, ""))
        test_skipped = results.skipped_tests.get(tests.get(path, ""))
        versions = index.alternatives(path) if path in index.headers else [path]
        nearer = next((results.traces[str(p)] for p in versions if str(p) in results.traces), None)
        if entry is None and nearer is not None and path in versions:
            # One trace per kernel line: another one's kernel was nearer the replayed one.
            other_kernel += 1
            why = (
                f"recorded on {index.headers[path].kernel}; {nearer.path} is of the kernel "
                f"nearest {nearer.kernel}"
            )
            print(f"  {'-':<10} {shown_path}: {printable(why, _LINE_WIDTH)}")
            continue
        if path in index.damaged:
            verdict, why = "DAMAGED", problem
        elif problem:
            verdict, why = "NOT PLAYED", problem
        elif entry is None and test_skipped is not None and test_failed is None:
            # Not a divergence: the test does not run here (an SPI device on x86_64).
            skipped += 1
            why = f"its test was skipped: {test_skipped}"
            print(f"  {'SKIPPED':<10} {shown_path}: {printable(why, _LINE_WIDTH)}")
            continue
        elif entry is None:
            verdict = "NOT PLAYED"
            why = "its test did not attach the device"
            if test_failed is not None:
                why = f"its test failed before it attached the device: {test_failed}"
        elif entry.failure:
            verdict = "DAMAGED" if entry.damaged else "DIVERGED"
            why = entry.failure
            if test_failed is not None and _REPLAY_FAILURE not in test_failed:
                # A test that failed on its own stops early, and so does its driver.
                why += f" (its test failed: {test_failed})"
        elif test_failed is not None:
            # The driver's I/O matched the trace, but the test did not pass: say why.
            verdict = "FAILED"
            why = f"its I/O matched the trace, but its test failed: {test_failed}"
        else:
            kinds = ((entry.tolerated, "repeated read"), (entry.tolerated_unmasks, "unmask"))
            tolerated = [count(n, what) for n, what in kinds if n]
            extra = f" ({', '.join(tolerated)} tolerated)" if tolerated else ""
            if len(versions) > 1:
                extra += (
                    f" (recorded on {index.headers[path].kernel}: of {len(versions)} "
                    f"kernels' traces, the nearest {entry.kernel})"
                )
            print(f"  ok         {shown_path}: {count(entry.transfers, 'transfer')}{extra}")
            continue
        failed += 1
        print(f"  {verdict:<10} {shown_path}: {printable(why, _LINE_WIDTH)}")
    # Only "ok" counts: a trace whose test failed for another reason is not counted.
    played_ok = len(listed) - failed - skipped - other_kernel
    also = f" ({skipped} skipped with their tests)" if skipped else ""
    if other_kernel:
        also += f" ({count(other_kernel, 'trace')} of other kernels not played)"
    print(f"{played_ok} of {count(len(listed), 'trace')} replayed without divergence{also}")
    if failed:
        return 1
    return status
