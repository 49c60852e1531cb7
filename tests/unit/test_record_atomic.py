"""`roadtest record` switches golden traces in one step, stages outside them, and cleans up.

The kill tests run record in a forked child that SIGKILLs itself before its
n-th file-system change, for every n, then run the next record (whose tests
fail, so it must not change anything): the golden tree must then be the old
one or the new one, whole, with nothing else left next to it or in it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from roadtest.cli import main
from roadtest.recorder import record_command
from roadtest.recorder.record_command import record
from roadtest.trace.format import Header, write_trace_atomic

OLD = {
    "tps62864/test_a.rtrace": b"old a",
    "tps62864/test_b.rtrace": b"old b",
    "opt3001/test_x.rtrace": b"old x",  # a chip this run does not record
    "README": b"not a trace",
}
RECORDED = {
    "tps62864/test_a.rtrace": b"new a",
    "tps62864/test_b.rtrace": b"new b",
    "vcnl4000/test_c.rtrace": b"new c",  # a chip with no traces yet
}
NEW = {**OLD, **RECORDED}


def tree(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


def make_tree(root: Path, files: dict[str, bytes]) -> None:
    for name, data in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data)


def staging_of(args: list[str]) -> Path:
    (option,) = [a for a in args if a.startswith("--roadtest-record=")]
    return Path(option.split("=", 1)[1])


def fake_run(files: dict[str, bytes], status: int) -> Callable[[list[str]], int]:
    def run(args: list[str]) -> int:
        make_tree(staging_of(args), files)
        return status

    return run


def left_next_to(out: Path) -> list[str]:
    return sorted(p.name for p in out.parent.iterdir() if p != out)


MUTATING = ("mkdir", "rename", "replace", "link", "unlink", "rmdir", "symlink")


def killed_at(step: int, out: Path) -> bool:
    """Run a passing record in a child that dies by SIGKILL before file-system change `step`."""
    pid = os.fork()
    if pid == 0:
        try:
            count = 0

            def counted(real: Callable[..., Any]) -> Callable[..., Any]:
                def op(*args: Any, **kwargs: Any) -> Any:
                    nonlocal count
                    if count == step:
                        os.kill(os.getpid(), signal.SIGKILL)
                    count += 1
                    return real(*args, **kwargs)

                return op

            for name in MUTATING:
                setattr(os, name, counted(getattr(os, name)))
            exchange = getattr(record_command, "_exchange", None)
            if exchange is not None:
                record_command._exchange = counted(exchange)
            with open(os.devnull, "w") as null:
                sys.stdout = null
                status = record([], out, fake_run(RECORDED, 0))
            os._exit(status)
        finally:
            os._exit(99)
    _, wait_status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(wait_status):
        return True
    assert os.WEXITSTATUS(wait_status) == 0
    return False


def no_link(source: Any, target: Any) -> None:
    raise PermissionError(1, "Operation not permitted")


@pytest.fixture(params=["exchange", "two renames", "no hard links"])
def how(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    if request.param == "two renames":  # a file system without RENAME_EXCHANGE
        monkeypatch.setattr(record_command, "_exchange", lambda a, b: False)
    if request.param == "no hard links":
        monkeypatch.setattr(os, "link", no_link)
    yield request.param


def test_a_record_killed_at_any_step_leaves_the_old_or_the_new_tree(
    tmp_path: Path, how: str, capsys: pytest.CaptureFixture[str]
) -> None:
    outcomes = []
    step = 0
    while True:
        base = tmp_path / str(step)
        out = base / "traces"
        make_tree(out, OLD)
        killed = killed_at(step, out)
        # The next record starts by finishing or undoing what the killed one left.
        assert record([], out, fake_run({"tps62864/test_a.rtrace": b"failed"}, 1)) == 1
        got = tree(out)
        assert got in (OLD, NEW), f"killed before step {step}: a mixed tree {got}"
        assert left_next_to(out) == [], f"killed before step {step}"
        outcomes.append(got == NEW)
        if not killed:
            break
        step += 1
    assert outcomes[0] is False and outcomes[-1] is True
    assert step > 10  # it did get killed in the middle of the switch, many times


def test_a_passing_record_replaces_what_it_recorded_and_keeps_the_rest(
    tmp_path: Path, how: str, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "traces"
    make_tree(out, OLD)
    assert record([], out, fake_run(RECORDED, 0)) == 0
    assert tree(out) == NEW
    assert left_next_to(out) == []
    printed = capsys.readouterr().out
    assert all(f"recorded {out / name}" in printed for name in RECORDED)


def test_a_first_record_makes_the_directory(tmp_path: Path) -> None:
    out = tmp_path / "traces"
    assert record([], out, fake_run(RECORDED, 0)) == 0
    assert tree(out) == RECORDED
    assert left_next_to(out) == []


def test_the_tests_write_outside_the_golden_tree(tmp_path: Path) -> None:
    out = tmp_path / "traces"
    make_tree(out, OLD)
    seen: list[dict[str, bytes]] = []

    def run(args: list[str]) -> int:
        staging = staging_of(args)
        assert out not in staging.parents  # replay reads every file under out, hidden or not
        make_tree(staging, RECORDED)
        seen.append(tree(out))
        return 1

    assert record([], out, run) == 1
    assert seen == [OLD]
    assert tree(out) == OLD
    assert left_next_to(out) == []


def dead_pid() -> int:
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


def test_a_passing_record_removes_the_staging_of_dead_records(tmp_path: Path) -> None:
    out = tmp_path / "traces"
    make_tree(out, OLD)
    dead = dead_pid()
    make_tree(out / f".record-{dead}", RECORDED)  # where records staged before
    make_tree(tmp_path / f".traces.record-{dead}" / "staging", RECORDED)
    live = subprocess.Popen(["sleep", "60"])
    try:
        make_tree(tmp_path / f".traces.record-{live.pid}" / "staging", RECORDED)
        assert record([], out, fake_run(RECORDED, 0)) == 0
        assert tree(out) == NEW
        # A live record's staging is its own.
        assert left_next_to(out) == [f".traces.record-{live.pid}"]
    finally:
        live.kill()
        live.wait()


# SIGTERM and SIGINT, in a `roadtest record` process of its own.
RECORD_SCRIPT = """
import sys
import time
from pathlib import Path

import roadtest.cli as cli


def run(args):
    (option,) = [a for a in args if a.startswith("--roadtest-record=")]
    staging = Path(option.split("=", 1)[1])
    (staging / "tps62864").mkdir(parents=True)
    (staging / "tps62864" / "test_a.rtrace").write_bytes(b"new a")
    print("tests running", flush=True)
    try:
        time.sleep(120)
    except KeyboardInterrupt:
        if sys.argv[2] == "swallow":
            return 2  # what pytest.main does on KeyboardInterrupt
        raise
    return 0


cli.run_pytest = run
sys.exit(cli.main(["record", "--out", sys.argv[1]]))
"""


@pytest.mark.parametrize("swallow", ["swallow", "raise"])
@pytest.mark.parametrize(
    ("sig", "status", "message"),
    [
        (signal.SIGTERM, 143, "roadtest: terminated (SIGTERM)"),
        (signal.SIGINT, 130, "roadtest: interrupted"),
    ],
)
def test_a_signal_during_record_is_a_clean_stop(
    tmp_path: Path, sig: int, status: int, message: str, swallow: str
) -> None:
    out = tmp_path / "traces"
    make_tree(out, OLD)
    script = tmp_path / "record.py"
    script.write_text(RECORD_SCRIPT)
    proc = subprocess.Popen(
        [sys.executable, str(script), str(out), swallow],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline() == "tests running\n"
        proc.send_signal(sig)
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == status, stderr
    assert stderr.strip().splitlines()[-1] == message
    assert "Traceback" not in stderr
    assert tree(out) == OLD
    assert sorted(p.name for p in tmp_path.iterdir()) == ["record.py", "traces"]


def test_the_switch_defers_a_signal_until_it_is_done(tmp_path: Path) -> None:
    """Ctrl-C in the middle of the switch: the switch completes, then the command stops."""
    from roadtest import signals

    out = tmp_path / "traces"
    make_tree(out, OLD)
    real = record_command.switch

    def interrupted_switch(out: Path, staging: Path, work: Path) -> list[Path]:
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.01)  # the handler runs now, but must wait for the block's end
        return real(out, staging, work)

    previous = signals.install()
    try:
        record_command.switch = interrupted_switch
        with pytest.raises(KeyboardInterrupt):
            record([], out, fake_run(RECORDED, 0))
    finally:
        record_command.switch = real
        signals.restore(previous)
    assert tree(out) == NEW
    assert left_next_to(out) == []


def write_real_trace(path: Path, test: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    header = Header(kernel="k", test=test, address=0x48, compatible="ti,tps62864")
    write_trace_atomic(path, header, [])


def test_traces_of_tests_that_are_gone_are_kept_and_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "repo"
    (root / "tests").mkdir(parents=True)
    (root / "tests" / "test_x.py").write_text("def test_a(guest):\n    pass\n")
    out = tmp_path / "traces"
    write_real_trace(out / "tps62864" / "test_a.rtrace", "tests/test_x.py::test_a")
    write_real_trace(out / "tps62864" / "test_old.rtrace", "tests/test_x.py::test_old")
    write_real_trace(out / "opt3001" / "test_y.rtrace", "tests/test_gone.py::test_y")
    before = tree(out)
    assert record([], out, fake_run({"tps62864/test_a.rtrace": b"new a"}, 0), root) == 0
    assert tree(out) == {**before, "tps62864/test_a.rtrace": b"new a"}
    printed = capsys.readouterr().out.splitlines()
    # Only in the chip directories it recorded: the rest is not this run's business.
    assert printed[1:] == [
        f"roadtest record: {out / 'tps62864' / 'test_old.rtrace'}: its test no longer exists; "
        "delete it"
    ]


def test_replay_first_finishes_a_switch_a_kill_cut_in_two(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Killed between the two renames (no RENAME_EXCHANGE): the golden dir is not there."""
    out = tmp_path / "traces"
    work = tmp_path / f".traces.record-{dead_pid()}"
    write_real_trace(work / "new" / "tps62864" / "test_a.rtrace", "tests/nowhere.py::test_a")
    make_tree(work / "old", OLD)
    status = main(["replay", "--golden", str(out)])
    err = capsys.readouterr().err
    assert status == 2
    # It read the new tree (and stopped at its unknown test), not "no such directory".
    assert "tests/nowhere.py::test_a no longer exists" in err
    assert left_next_to(out) == []


def trace_bytes(
    tmp_path: Path, name: str, events: list[dict[str, Any]], kernel: str = "k"
) -> bytes:
    path = tmp_path / "made" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    header = Header(kernel=kernel, test="tests/test_x.py::test_a", address=0x48, compatible="c")
    write_trace_atomic(path, header, events)
    return path.read_bytes()


def reading(value: int, t: int, sim: int) -> dict[str, Any]:
    return {"kind": "marker", "what": "bind", "detail": value, "t": t, "sim": sim}


def test_a_trace_with_the_same_io_is_left_as_it_was(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Recorded again on a kernel that boots to another guest time: the same I/O at other
    times, and another creation time. The file stays byte for byte; one that changed is
    written, and so is one recorded on another kernel."""
    out = tmp_path / "traces"
    old_same = trace_bytes(tmp_path, "a", [reading(1, t=10, sim=100)])
    old_other = trace_bytes(tmp_path, "b", [reading(1, t=10, sim=100)])
    old_kernel = trace_bytes(tmp_path, "c", [reading(1, t=10, sim=100)])
    make_tree(out, {"chip/a.rtrace": old_same, "chip/b.rtrace": old_other})
    make_tree(out, {"chip/c.rtrace": old_kernel})
    time.sleep(0.01)  # another creation time in the header
    recorded = {
        "chip/a.rtrace": trace_bytes(tmp_path, "a2", [reading(1, t=99, sim=999)]),
        "chip/b.rtrace": trace_bytes(tmp_path, "b2", [reading(2, t=10, sim=100)]),
        "chip/c.rtrace": trace_bytes(tmp_path, "c2", [reading(1, t=10, sim=100)], kernel="k2"),
    }
    assert record([], out, fake_run(recorded, 0)) == 0
    assert tree(out) == {
        "chip/a.rtrace": old_same,
        "chip/b.rtrace": recorded["chip/b.rtrace"],
        "chip/c.rtrace": recorded["chip/c.rtrace"],
    }
    printed = capsys.readouterr().out.splitlines()
    assert printed == [
        f"recorded {out / 'chip' / 'b.rtrace'}",
        f"recorded {out / 'chip' / 'c.rtrace'}",
        "roadtest record: 1 trace unchanged (the same I/O), left as they were",
    ]
