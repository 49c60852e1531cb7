"""scripts/phases.py, make test's phase table: each step recorded with its lane, status and
wall time, whatever it exits with; the table lists every phase and says which failed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from roadtest.checkout import repo_root

SCRIPTS = repo_root() / "scripts"
sys.path.insert(0, str(SCRIPTS))

import phases  # noqa: E402  (a build tool in scripts/, not part of the package)
from phases import Phase  # noqa: E402


def script(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPTS / "phases.py"), *args],
        capture_output=True,
        text=True,
        check=False,
    )


def test_run_records_the_command_and_passes_its_status_on(tmp_path: Path) -> None:
    record = tmp_path / "run" / "phases"
    ok = script("run", f"--file={record}", "--lane=um", "lint", "--", "true")
    bad = script(
        "run", f"--file={record}", "--lane=x86_64", "x86_64-run", "--", "sh", "-c", "exit 3"
    )
    assert (ok.returncode, bad.returncode) == (0, 3)
    assert ok.stdout == "true\n"  # echoed, as make would
    assert bad.stdout == "sh -c 'exit 3'\n"
    _, recorded = phases.parse(record.read_text())
    assert [(p.lane, p.name, p.status) for p in recorded] == [
        ("um", "lint", "ok"),
        ("x86_64", "x86_64-run", "exit=3"),
    ]
    assert all(0 <= p.seconds < 30 for p in recorded)


def test_run_records_a_command_killed_by_a_signal(tmp_path: Path) -> None:
    record = tmp_path / "phases"
    done = script("run", f"--file={record}", "hostile", "--", "sh", "-c", "kill -TERM $$")
    assert done.returncode == 128 + 15
    _, recorded = phases.parse(record.read_text())
    assert [(p.lane, p.name, p.status) for p in recorded] == [("-", "hostile", "signal=15")]


def test_run_of_a_missing_command_is_a_failed_phase(tmp_path: Path) -> None:
    record = tmp_path / "phases"
    done = script("run", f"--file={record}", "unit", "--", str(tmp_path / "nonexistent"))
    assert done.returncode == 127
    assert "cannot run" in done.stderr
    assert "exit=127" in record.read_text()


def test_run_records_the_cpu_time_of_the_processes_the_command_waited_for(
    tmp_path: Path,
) -> None:
    """A grandchild that burns 0.3 s of CPU is counted (its parent shell waited for it);
    a command that sleeps takes next to none: the CPU column is not wall time."""
    record = tmp_path / "phases"
    burn = "import time\nwhile time.process_time() < 0.3:\n    pass\n"
    script("run", f"--file={record}", "busy", "--", "sh", "-c", f"{sys.executable} -c '{burn}'")
    script("run", f"--file={record}", "idle", "--", "sleep", "0.3")
    _, (busy, idle) = phases.parse(record.read_text())
    assert busy.cpu is not None and busy.cpu >= 0.3
    assert idle.cpu is not None and idle.cpu < 0.2 and idle.seconds >= 0.3


def test_recorded_steps_side_by_side_print_their_output_in_one_piece_each(
    tmp_path: Path,
) -> None:
    """make test's chains run steps at the same time: each step's output comes out whole,
    headed by its command, when it ends; not line by line mixed with the other's."""
    record = tmp_path / "phases"
    shown = tmp_path / "shown"
    loops = {name: f"for i in 1 2 3; do echo {name}$i; sleep 0.1; done" for name in ("A", "B")}
    with shown.open("ab") as out:
        runs = [
            subprocess.Popen(
                [sys.executable, str(SCRIPTS / "phases.py"), "run", f"--file={record}", name]
                + ["--", "sh", "-c", loop],
                stdout=out,
            )
            for name, loop in loops.items()
        ]
        assert [r.wait() for r in runs] == [0, 0]
    lines = shown.read_text().splitlines()
    for name, loop in loops.items():
        at = lines.index(f"sh -c '{loop}'")
        assert lines[at + 1 : at + 4] == [f"{name}1", f"{name}2", f"{name}3"]


def test_run_without_a_file_records_nothing(tmp_path: Path) -> None:
    done = script("run", "--file=", "lint", "--", "true")
    assert done.returncode == 0
    assert list(tmp_path.iterdir()) == []


def test_the_table_lists_each_lane_in_order_with_its_failures() -> None:
    t0 = 1_000_000.0
    text = (
        f"# started {t0}\n"
        f"um lint ok 41.0 {t0 + 1} 40.0\n"
        f"x86_64 kernel ok 250.0 {t0 + 2} 480.0\n"
        f"um unit ok 35.0 {t0 + 42} 70.0\n"
        f"um kernel ok 175.0 {t0 + 77}\n"  # waited for the x86_64 lane's build; no CPU
        f"x86_64 x86_64-run exit=1 400.0 {t0 + 300} 300.0\n"
        "garbage line\n"
    )
    started, recorded = phases.parse(text)
    assert started == t0 and len(recorded) == 5
    out, passed = phases.table(started, recorded, now=t0 + 754)
    assert not passed
    lines = out.splitlines()
    assert lines[0] == "make test: phases in 12:34 (wall time)"
    assert lines[1].split() == ["lane", "phase", "start", "time", "cpu", "status"]
    body = [line.split()[:6] for line in lines[2:-2]]
    assert body == [
        ["um", "lint", "0:01", "0:41", "0:40", "ok"],
        ["um", "unit", "0:42", "0:35", "1:10", "ok"],
        ["um", "kernel", "1:17", "2:55", "-", "ok"],
        ["um", "(lane)", "4:11", "1:50"],
        ["x86_64", "kernel", "0:02", "4:10", "8:00", "ok"],
        ["x86_64", "x86_64-run", "5:00", "6:40", "5:00", "FAILED"],
        ["x86_64", "(lane)", "11:38", "13:00"],
    ]
    assert "with x86_64's: one built it, one waited" in lines[4]
    assert "(exit=1)" in lines[7]
    # 890 CPU seconds in 754 s of wall time: 1.18 CPUs busy on average.
    assert lines[-2].startswith("cpu: 14:50 in 12:34, 1.18 CPUs busy")
    assert lines[-1] == "FAILED: x86_64/x86_64-run"


def test_a_phase_each_chain_of_a_lane_ran_is_one_row() -> None:
    t0 = 1_000_000.0
    recorded = [
        Phase("um", "kernel", "ok", 3.0, t0 + 5, 1.0),
        Phase("um", "kernel", "ok", 2.0, t0 + 5.5, 0.5),
        Phase("um", "lint", "ok", 60.0, t0 + 9, 50.0),
        Phase("um", "kernel-sanitizers", "ok", 1.0, t0 + 70, 0.2),
        Phase("um", "kernel-sanitizers", "exit=2", 1.0, t0 + 80, 0.2),
    ]
    out, passed = phases.table(t0, recorded, now=t0 + 100)
    assert not passed
    rows = [line.split()[:3] for line in out.splitlines()[2:] if line.startswith("um ")]
    assert rows == [
        ["um", "kernel", "0:05"],
        ["um", "lint", "0:09"],
        ["um", "kernel-sanitizers", "1:10"],
        ["um", "kernel-sanitizers", "1:20"],  # not folded: another status
        ["um", "(lane)", "1:16"],
    ]
    assert "(2 runs: each chain checks it)" in out.splitlines()[2]
    assert out.splitlines()[-1] == "FAILED: um/kernel-sanitizers"


def test_a_table_that_passed() -> None:
    recorded = [Phase("um", "lint", "ok", 3600 + 62, 0.0)]
    out, passed = phases.table(None, recorded, now=4000.0)
    assert passed
    assert "1:01:02" in out and out.endswith("all 1 phases passed\n")


def test_the_table_command_exits_1_on_a_failed_phase(tmp_path: Path) -> None:
    record = tmp_path / "phases"
    record.write_text("# started 100\num lint ok 1.0 101\num unit exit=2 1.0 102\n")
    done = script("table", str(record))
    assert done.returncode == 1 and "FAILED: um/unit" in done.stdout
    record.write_text("# started 100\num lint ok 1.0 101\n")
    assert script("table", str(record)).returncode == 0
    missing = script("table", str(tmp_path / "none"))
    assert missing.returncode == 0 and "no phase recorded" in missing.stdout


def test_an_expected_phase_that_did_not_run_fails_the_table() -> None:
    recorded = [
        Phase("um", "kernel-coverage", "exit=2", 10.0, 5.0),
        Phase("um", "hostile", "ok", 10.0, 15.0),
    ]
    expect = [("um", "drivers"), ("um", "hostile"), ("x86_64", "guest-lane2")]
    out, passed = phases.table(0.0, recorded, now=30.0, expect=expect)
    assert not passed
    rows = [line.split() for line in out.splitlines()]
    assert ["um", "drivers", "not", "run"] in rows
    assert ["x86_64", "guest-lane2", "not", "run"] in rows
    assert out.endswith("FAILED: um/kernel-coverage\nnot run: um/drivers, x86_64/guest-lane2\n")
    out, passed = phases.table(0.0, recorded[1:], now=30.0, expect=[("um", "hostile")])
    assert passed
