"""`--vm qemu`: what the VM writes stays in it but for its shares, and a record inside
the VM gives the report, KTAP file and traces a host run would; no QEMU process is left.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from roadtest.arch.x86_64 import X86_64
from roadtest.checkout import repo_root
from roadtest.kernel import cached_kernel, default_cache_dir
from roadtest.machine.base import BootConfig
from roadtest.machine.qemu import QEMUGuest

ROADTEST = [sys.executable, "-m", "roadtest.cli"]


def vm_processes(marker: str) -> list[str]:
    """QEMU processes of --vm VMs (their kernel command line asks for the overlay root)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if "qemu-system-x86_64" in cmd and "ROADTEST_ROOT_OVERLAY=1" in cmd and marker in cmd:
            found.append(cmd)
    return found


def roadtest(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "ROADTEST_CACHE": str(default_cache_dir())}
    return subprocess.run(
        [*ROADTEST, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600
    )


def shown(proc: subprocess.CompletedProcess[str]) -> str:
    return f"status {proc.returncode}\n--- stdout\n{proc.stdout}\n--- stderr\n{proc.stderr}"


def test_the_vms_writes_stay_in_the_vm_but_for_its_shares(tmp_path: Path) -> None:
    # A --vm run's VM, bare: root of the overlay, a writable share, the agent.
    kernel = cached_kernel(repo_root(), target=X86_64)
    assert kernel is not None, "build it: roadtest build --machine x86_64"
    victim, shared = tmp_path / "victim", tmp_path / "shared"
    victim.write_text("host\n")
    shared.mkdir()
    config = BootConfig(image=kernel.image, workdir=tmp_path / "vm", cpu=None, mem="512M")
    vm = QEMUGuest(config, shares=[shared], overlay=True)
    vm.start()
    try:
        script = f"""
            echo vm > {victim} && cat {victim}
            echo vm > {shared}/out
            mount -o remount,rw / ; echo vm > {tmp_path}/escaped
        """
        status, out, err = vm.agent.run(["/bin/sh", "-c", script])
    finally:
        vm.stop()
    assert out == b"vm\n", err  # the VM has a writable root: its own copy of the host's
    assert victim.read_text() == "host\n"
    assert (shared / "out").read_text() == "vm\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["shared", "victim", "vm"]
    assert vm_processes(str(tmp_path)) == []


def test_a_record_in_a_vm_gives_traces_the_host_replays(tmp_path: Path) -> None:
    golden, ktap = tmp_path / "golden", tmp_path / "results" / "run.ktap"
    test = "tests/drivers/iio/light/test_opt3001.py"
    args = ["--out", str(golden), f"--roadtest-ktap={ktap}", test]
    record = roadtest(["record", "--vm", "qemu", *args], repo_root())
    assert record.returncode == 0, shown(record)
    # The VM's pytest report, as the host's would print it, and its KTAP file.
    assert "roadtest: in a VM: QEMU" in record.stdout, shown(record)
    assert "1 passed" in record.stdout, shown(record)
    assert "ok 1 test_illuminance" in ktap.read_text()
    assert vm_processes(str(default_cache_dir() / "runs")) == []
    traces = sorted(p.relative_to(golden).as_posix() for p in golden.rglob("*.rtrace"))
    assert traces == ["opt3001/test_illuminance.rtrace"], shown(record)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["golden", "results"]  # no staging
    # What the VM recorded is what the driver does on the host.
    replay = roadtest(["replay", "--golden", str(golden), "-pno:cacheprovider"], repo_root())
    assert replay.returncode == 0, shown(replay)
    assert "1 of 1 trace replayed without divergence" in replay.stdout
