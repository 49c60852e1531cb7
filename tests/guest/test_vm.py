"""`--vm qemu`: a whole `roadtest record` inside a QEMU VM. Its report and traces come back
to the host as from a host run; what else the run writes stays in the VM; no QEMU is left.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

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


def test_a_record_in_a_vm_brings_its_traces_back_and_nothing_else(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("host\n")
    tests = tmp_path / "tests"
    tests.mkdir()
    (tests / "test_in_vm.py").write_text(f"VICTIM = {str(victim)!r}\n" + TEST_FILE)
    golden = tmp_path / "golden"
    env = {**os.environ, "ROADTEST_CACHE": str(default_cache_dir())}
    record = subprocess.run(
        [*ROADTEST, "record", "--vm", "qemu", "--out", str(golden), "test_in_vm.py"]
        + ["-p", "no:cacheprovider"],
        cwd=tests,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    shown = f"--- stdout\n{record.stdout}\n--- stderr\n{record.stderr}"
    assert record.returncode == 0, shown
    # The VM's pytest report, as the host's would print it.
    assert "roadtest: in a VM: QEMU" in record.stdout, shown
    assert "1 passed" in record.stdout, shown
    traces = sorted(p.relative_to(golden).as_posix() for p in golden.rglob("*.rtrace"))
    assert traces == ["opt3001/test_lux_in_a_vm.rtrace"], shown
    assert victim.read_text() == "host\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["golden", "tests", "victim"]
    assert qemu_processes(str(default_cache_dir() / "runs")) == []
    # What the VM recorded is what the driver does on the host.
    replay = subprocess.run(
        [*ROADTEST, "replay", "--golden", str(golden), "-pno:cacheprovider"],
        cwd=tests,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert replay.returncode == 0, replay.stdout + replay.stderr
    assert "1 of 1 traces replayed without divergence" in replay.stdout
