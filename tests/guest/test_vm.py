"""`--vm qemu`: a run and a record inside a QEMU VM. The report, KTAP file and traces come
back to the host as from a host run; what else the run writes stays in the VM; no QEMU
process is left.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from roadtest.checkout import repo_root
from roadtest.kernel import default_cache_dir

ROADTEST = [sys.executable, "-m", "roadtest.cli"]

TEST_FILE = '''
from pathlib import Path

from roadtest.models.opt3001 import OPT3001
from roadtest.testing import I2CDevice, read_float

SENSOR = I2CDevice(
    compatible="ti,opt3001",
    model=OPT3001,
    dts="""
        light-sensor@$addr$ {
            compatible = "ti,opt3001";
            reg = <0x$addr$>;
        };
    """,
)


def test_lux_in_a_vm(guest):
    # The host's files are writable here (the VM's root is an overlay): the host's copy
    # must not change.
    Path(VICTIM).write_text("written in the VM\\n")
    with guest.bound(SENSOR) as dev:
        dev.model.result = 0x3456
        assert read_float(dev.path.only("iio:device*") / "in_illuminance_input") == 88.80
'''


def qemu_processes(marker: str) -> list[str]:
    found = []
    for entry in Path("/proc").iterdir():
        try:
            cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if "qemu-system-x86_64" in cmd and marker in cmd:
            found.append(cmd)
    return found


def roadtest(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "ROADTEST_CACHE": str(default_cache_dir())}
    return subprocess.run(
        [*ROADTEST, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600
    )


def shown(proc: subprocess.CompletedProcess[str]) -> str:
    return f"status {proc.returncode}\n--- stdout\n{proc.stdout}\n--- stderr\n{proc.stderr}"


def test_a_run_in_a_vm_reports_as_on_the_host_and_writes_nothing_else(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("host\n")
    tests = tmp_path / "tests"
    tests.mkdir()
    (tests / "test_in_vm.py").write_text(f"VICTIM = {str(victim)!r}\n" + TEST_FILE)
    ktap = tmp_path / "results" / "run.ktap"
    run = roadtest(
        [
            "run",
            "--vm",
            "qemu",
            f"--roadtest-ktap={ktap}",
            "test_in_vm.py",
            "-p",
            "no:cacheprovider",
        ],
        tests,
    )
    assert run.returncode == 0, shown(run)
    # The VM's pytest report, as the host's would print it, and its KTAP file.
    assert "roadtest: in a VM: QEMU" in run.stdout, shown(run)
    assert "1 passed" in run.stdout, shown(run)
    assert "ok 1 test_lux_in_a_vm" in ktap.read_text()
    # What the VM wrote elsewhere stayed in the VM.
    assert victim.read_text() == "host\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results", "tests", "victim"]
    assert sorted(p.name for p in tests.iterdir()) == ["test_in_vm.py"]
    assert qemu_processes(str(default_cache_dir() / "runs")) == []


def test_a_record_in_a_vm_gives_traces_the_host_replays(tmp_path: Path) -> None:
    golden = tmp_path / "golden"
    test = "tests/drivers/iio/light/test_opt3001.py"
    record = roadtest(["record", "--vm", "qemu", "--out", str(golden), test], repo_root())
    assert record.returncode == 0, shown(record)
    traces = sorted(p.relative_to(golden).as_posix() for p in golden.rglob("*.rtrace"))
    assert traces == ["opt3001/test_illuminance.rtrace"], shown(record)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["golden"]  # staging: gone
    # What the VM recorded is what the driver does on the host.
    replay = roadtest(["replay", "--golden", str(golden), "-pno:cacheprovider"], repo_root())
    assert replay.returncode == 0, shown(replay)
    assert "1 of 1 trace replayed without divergence" in replay.stdout
