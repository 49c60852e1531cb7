"""The x86_64 QEMU machine, booted: guests that do not boot or hang at boot, a crash in a
test, and what a run's report says about the machine. Every failure is one line or a
test failure with the console log, and leaves no QEMU process behind."""

from __future__ import annotations

from pathlib import Path

import pytest
from scaffold import OPT3001_SOURCE, own_cpu, run_pytest

from roadtest.arch.x86_64 import X86_64
from roadtest.checkout import repo_root
from roadtest.kernel import Kernel, cached_kernel
from roadtest.machine.base import BootConfig, GuestError
from roadtest.machine.qemu import QEMUGuest, find_qemu


@pytest.fixture(scope="module")
def kernel() -> Kernel:
    built = cached_kernel(repo_root(), target=X86_64)
    if built is None:
        pytest.fail("no x86_64 kernel: `roadtest build --machine x86_64` (make drivers does)")
    return built


def guest(kernel: Kernel, tmp_path: Path, **config: object) -> QEMUGuest:
    # On this test's CPU: make test runs the x86_64 checks on a CPU of their own.
    return QEMUGuest(
        BootConfig(image=kernel.image, workdir=tmp_path / "guest", cpu=own_cpu(), **config)  # type: ignore[arg-type]
    )


def assert_gone(machine: QEMUGuest, pid: int) -> None:
    assert machine.proc is None
    assert not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text()


def _pid_when_started(machine: QEMUGuest) -> list[int]:
    pids: list[int] = []
    original = machine.connect_channel

    def connect(deadline: float):  # type: ignore[no-untyped-def]
        assert machine.proc is not None
        pids.append(machine.proc.pid)
        return original(deadline)

    machine.connect_channel = connect  # type: ignore[method-assign]
    return pids


def test_a_guest_boots_and_powers_off(kernel: Kernel, tmp_path: Path) -> None:
    machine = guest(kernel, tmp_path)
    machine.start()
    assert machine.release == kernel.release
    assert machine.agent.read_file("/proc/sys/kernel/ostype") == b"Linux\n"
    machine.stop()
    assert machine.proc is None


def test_a_guest_that_cannot_mount_its_root_fails_with_the_reason(
    kernel: Kernel, tmp_path: Path
) -> None:
    # init, started from the initramfs, mounts the root (the last ROADTEST_ROOT_9P given
    # on the command line is the one init gets): it says why it could not.
    bad = "ROADTEST_ROOT_9P=no-such-share:trans=virtio,version=9p2000.L"
    machine = guest(kernel, tmp_path, extra_args=[bad])
    pids = _pid_when_started(machine)
    with pytest.raises(
        GuestError, match=r"did not boot \(roadtest init: .*mount 9p on /\.root: No such file"
    ) as err:
        machine.start()
    assert "\n" not in str(err.value)
    assert_gone(machine, pids[0])


def test_a_guest_that_hangs_at_boot_is_killed_at_its_limit(kernel: Kernel, tmp_path: Path) -> None:
    # Under TCG no guest reaches its agent in 0.2 s: what a hang looks like from the host.
    machine = guest(kernel, tmp_path, boot_timeout=0.2)
    pids = _pid_when_started(machine)
    with pytest.raises(GuestError, match="did not boot .*console: "):
        machine.start()
    assert_gone(machine, pids[0])


def test_an_image_qemu_cannot_load_is_one_line_with_qemus_reason(tmp_path: Path) -> None:
    image = tmp_path / "bzImage"
    image.write_text("not a kernel\n")
    machine = QEMUGuest(BootConfig(image=image, workdir=tmp_path / "guest", cpu=own_cpu()))
    # (QEMU checks the header for the initramfs first, and says so.)
    reason = r"qemu: (invalid kernel header|linux kernel too old to load a ram disk)"
    with pytest.raises(GuestError, match=rf"did not boot \(.*{reason}\)") as err:
        machine.start()
    assert "\n" not in str(err.value)


def test_a_crash_fails_its_test_and_the_report_names_the_machine(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(
        test_user=OPT3001_SOURCE
        + """
def test_crash(guest):
    guest.agent.write_file("/proc/sysrq-trigger", b"c")

def test_after(guest):
    with guest.bound(SENSOR) as dev:
        dev.model.result = 0x0001
        assert read_float(dev.path.only("iio:device*") / "in_illuminance_input") == 0.01
    assert guest.boots == 2
"""
    )
    ktap = pytester.path / "run.ktap"
    result = run_pytest(
        pytester,
        "--roadtest-machine=x86_64",
        f"--roadtest-ktap={ktap}",
        timeout=300,
        cpu=own_cpu(),
    )
    result.assert_outcomes(failed=1, passed=1)
    result.stdout.fnmatch_lines(["*Kernel panic*", "*console: *console.log*"])
    qemu = find_qemu().describe
    result.stdout.fnmatch_lines([f"roadtest machine: x86_64 under {qemu} (*)"])
    diagnostics = [line.strip() for line in ktap.read_text().splitlines() if "machine:" in line]
    assert len(diagnostics) == 2, ktap.read_text()
    assert all(d.startswith("# machine: QEMU x86_64 6.12") and qemu in d for d in diagnostics)
