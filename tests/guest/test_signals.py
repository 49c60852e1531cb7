"""`roadtest run`, `record` and `replay` stopped by a signal, or losing their guest.

Each case starts the command as a user would (its own process group, as a
shell gives it), waits until the guest runs a long test (its start marker
in the console log), then sends Ctrl-C (SIGINT to the group), SIGTERM or
SIGKILL to roadtest, or SIGKILL to the UML guest, and checks what is left:
no process of the run (by its work directory in their command line, or in
the guest's session), no staging (a SIGKILLed record's is removed by the
next run's start), and the golden traces as they were.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from scaffold import leftovers, other_cpu, processes

from roadtest.checkout import repo_root
from roadtest.kernel import default_cache_dir

ROOT = repo_root()
CHIP = "tps62864"
TEST = "tests/drivers/regulator/test_tps62864.py::test_every_voltage_step"  # ~1.5 s of I/O
TIMEOUT = 300.0  # generous: only there so that nothing hangs


def wait_until(what: str, ready: Callable[[], bool], proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + TIMEOUT
    while not ready():
        if proc.poll() is not None:
            pytest.fail(f"roadtest ended (status {proc.returncode}) before {what}")
        if time.monotonic() > deadline:
            pytest.fail(f"no {what} within {TIMEOUT} s")
        time.sleep(0.05)


def tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


ACTIONS = ["SIGINT", "SIGTERM", "SIGKILL", "guest SIGKILL"]
CASES = [
    *(
        pytest.param(c, "um", a, id=f"{a}-{c}")
        for c in ("run", "record", "replay")
        for a in ACTIONS
    ),
    # A QEMU guest is one confined host process too: Ctrl-C and SIGKILL leave no QEMU.
    *(pytest.param("run", "x86_64", a, id=f"{a}-run-x86_64") for a in ("SIGINT", "SIGKILL")),
]


@pytest.mark.parametrize(("command", "machine", "action"), CASES)
def test_a_stopped_command_leaves_no_process_staging_or_changed_trace(
    tmp_path: Path, command: str, machine: str, action: str
) -> None:
    golden = tmp_path / "golden"
    shutil.copytree(ROOT / "traces" / CHIP, golden / CHIP)
    before = tree(golden)
    work = tmp_path / "work"
    env = {
        **os.environ,
        "ROADTEST_CACHE": str(default_cache_dir()),
        # replay takes no pytest options of its own; this reaches all three commands.
        "PYTEST_ADDOPTS": f"--roadtest-workdir={work} --roadtest-cpu={other_cpu()} "
        "-p no:cacheprovider",
    }
    args = {
        "run": ["run", f"--machine={machine}", TEST],
        "record": ["record", "--out", str(golden), f"--machine={machine}", TEST],
        "replay": ["replay", "--golden", str(golden), f"--machine={machine}", TEST],
    }[command]
    out_path, err_path = tmp_path / "stdout", tmp_path / "stderr"
    with out_path.open("wb") as out, err_path.open("wb") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "roadtest.cli", *args],
            cwd=ROOT,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=err,
            start_new_session=True,  # a process group of its own, as a shell's job
        )
    sessions: set[int] = set()
    try:
        console = work / "gw0" / "guest-1" / "console.log"
        marker = f"roadtest: start {TEST}"
        wait_until(
            "the test's start in the console",
            lambda: console.exists() and marker in console.read_text(errors="replace"),
            proc,
        )
        guests = [
            pid
            for pid, (cmd, ppid, _) in processes().items()
            if ppid == proc.pid and str(work) in cmd
        ]
        assert len(guests) == 1, guests
        # UML (or QEMU) runs in a session of its own, with all its processes.
        sessions = {guests[0]}
        if action == "SIGINT":
            os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C in a terminal does
        elif action == "SIGTERM":
            proc.send_signal(signal.SIGTERM)
        elif action == "SIGKILL":
            proc.kill()
        else:
            os.kill(guests[0], signal.SIGKILL)
        status = proc.wait(timeout=TIMEOUT)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    stdout, stderr = out_path.read_text(), err_path.read_text()
    shown = f"status {status}\n--- stdout\n{stdout}\n--- stderr\n{stderr}"

    # No process of the run is left (a SIGKILLed roadtest's guest goes by PDEATHSIG).
    deadline = time.monotonic() + 30
    while leftovers(work, sessions) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert leftovers(work, sessions) == [], shown

    if action == "SIGKILL":
        assert status == -signal.SIGKILL
        staged = [p.name for p in tmp_path.iterdir() if p.name.startswith(".golden.record-")]
        if command == "record":
            from roadtest.recorder.record_command import settle

            assert staged == [f".golden.record-{proc.pid}"]
            settle(golden)  # what the next record or replay does first
    else:
        assert "Traceback" not in stdout + stderr, shown
        assert "INTERNALERROR" not in stdout + stderr, shown
        if action == "guest SIGKILL":
            assert status not in (0, 130, 143), shown
        else:
            expected = {"SIGINT": (130, "interrupted"), "SIGTERM": (143, "terminated (SIGTERM)")}
            code, message = expected[action]
            assert status == code, shown
            assert stderr.strip().splitlines()[-1] == f"roadtest: {message}", shown
        if command == "replay":  # the summary of what was played, even when interrupted
            assert "replayed without divergence" in stdout, shown
    assert sorted(p.name for p in tmp_path.iterdir()) == ["golden", "stderr", "stdout", "work"]
    assert tree(golden) == before, shown
