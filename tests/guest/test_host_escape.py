"""The guest is untrusted: root in it must not write to the host outside the run's work dir.

Each test makes an escape attempt from inside the guest, as root, and checks
the host: the target is untouched. The targets are in a host directory of
this test (tmp_path), writable on the host, so only the sandbox can stop the
write. One positive control shows that the work directory stays writable.
The file runs on every machine (`make test` runs it on x86_64 too): the hostfs
attempts are UML's, the 9p ones QEMU's, the rest are both's.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Iterator
from pathlib import Path

import pytest

from roadtest.machine.process import ProcessGuest
from roadtest.machine.qemu import QEMUGuest
from roadtest.machine.uml import UMLGuest
from roadtest.testing import RoadtestSession


@pytest.fixture
def uml(guest: RoadtestSession) -> RoadtestSession:
    if not isinstance(guest.machine, UMLGuest):
        pytest.skip("hostfs is UML's: this machine's guest has no hostfs to mount")
    return guest


@pytest.fixture
def qemu(guest: RoadtestSession) -> RoadtestSession:
    if not isinstance(guest.machine, QEMUGuest):
        pytest.skip("9p shares are QEMU's: a UML guest has none")
    return guest


def sh(guest: RoadtestSession, script: str) -> tuple[int, str]:
    status, out, err = guest.agent.run(["/bin/sh", "-c", script])
    return status, (out + err).decode(errors="replace")


@pytest.fixture
def target(tmp_path: Path) -> Iterator[Path]:
    """A host directory open to every writer on the host, and a file in it."""
    tmp_path.chmod(0o777)
    (tmp_path / "victim").write_text("host\n")
    (tmp_path / "victim").chmod(0o644)
    yield tmp_path


def assert_untouched(target: Path) -> None:
    assert sorted(p.name for p in target.iterdir()) == ["victim"]
    assert (target / "victim").read_text() == "host\n"
    assert (target / "victim").stat().st_mode & 0o7777 == 0o644


def workdir(guest: RoadtestSession) -> Path:
    assert guest.machine is not None
    return guest.machine.workdir


def test_the_work_directory_is_writable(guest: RoadtestSession) -> None:
    status, out = sh(guest, f"echo from-guest > {workdir(guest)}/written")
    assert status == 0, out
    assert (workdir(guest) / "written").read_text() == "from-guest\n"


def test_remounting_the_root_read_write_gives_no_host_write(
    guest: RoadtestSession, target: Path
) -> None:
    t = shlex.quote(str(target))
    script = f"""
        mount -o remount,rw / || exit 90
        echo escaped > {t}/escaped
        echo escaped > {t}/victim
        chmod 4777 {t}/victim
        mkdir {t}/dir
        mknod {t}/node c 1 3
        ln -s /etc/passwd {t}/link
        mv {t}/victim {t}/moved
        rm -f {t}/victim
    """
    try:
        status, out = sh(guest, script)
        assert status != 90, f"the guest could not even try: {out}"
    finally:
        sh(guest, "mount -o remount,ro /")
    assert "Read-only file system" in out
    assert_untouched(target)


def test_hostfs_mounts_of_host_paths_give_no_host_write(uml: RoadtestSession, target: Path) -> None:
    guest = uml
    t = shlex.quote(str(target))
    parent = shlex.quote(f"{workdir(guest)}/..")
    script = f"""
        mkdir -p /run/h1 /run/h2 /run/h3
        mount -t hostfs none /run/h1 -o {t} || exit 90
        echo escaped > /run/h1/escaped
        echo escaped > /run/h1/victim
        mount -t hostfs none /run/h2 -o {t}/../{target.name} && echo escaped > /run/h2/dotdot
        mount -t hostfs none /run/h3 -o {parent} && echo escaped > /run/h3/escaped
        cat /run/h3/escaped 2>/dev/null
        umount /run/h1 /run/h2 /run/h3
    """
    status, out = sh(guest, script)
    assert status != 90, f"the guest could not mount: {out}"
    assert_untouched(target)
    assert not (workdir(guest).parent / "escaped").exists()


def test_links_out_of_the_work_directory_give_no_host_write(
    uml: RoadtestSession, target: Path
) -> None:
    guest = uml
    # Through one hostfs mount of the host's whole root, so that the guest's own VFS
    # sees a single filesystem and leaves the links to the host.
    w = shlex.quote(f"/run/all{workdir(guest)}")
    t = shlex.quote(f"/run/all{target}")
    script = f"""
        mkdir -p /run/all
        mount -t hostfs none /run/all -o / || exit 90
        ln -s {shlex.quote(str(target))}/victim {w}/to-victim && echo escaped > {w}/to-victim
        ln {t}/victim {w}/hardlink && echo escaped >> {w}/hardlink
        mv {t}/victim {w}/moved
        umount /run/all
    """
    try:
        status, out = sh(guest, "mount -o remount,rw / && " + script)
        assert status != 90, f"the guest could not mount: {out}"
    finally:
        sh(guest, "mount -o remount,ro /")
    assert_untouched(target)


def test_host_proc_and_sys_are_not_writable(uml: RoadtestSession) -> None:
    guest = uml
    # Harmless if it ever got through: dropping clean caches.
    script = """
        mkdir -p /run/hp
        mount -t hostfs none /run/hp -o /proc/sys/vm || exit 90
        echo 1 > /run/hp/drop_caches; status=$?
        umount /run/hp
        exit $status
    """
    status, out = sh(guest, script)
    assert status not in (0, 90), out
    assert "Read-only file system" in out


def test_9p_shares_give_no_host_write_outside_the_work_directory(
    qemu: RoadtestSession, target: Path
) -> None:
    # Out of the work share by `..`, through links made in it, and a second mount of a
    # share (a virtio 9p channel serves one mount: EBUSY). QEMU's root share is readonly.
    t = shlex.quote(str(target))
    w = shlex.quote(str(workdir(qemu)))
    script = f"""
        mount -o remount,rw / 2>&1
        echo escaped > {w}/../escaped
        ln -s {t}/victim {w}/to-victim || exit 90
        echo escaped > {w}/to-victim
        ln {t}/victim {w}/hardlink
        mkdir -p /run/r && mount -t 9p fs1 /run/r -o trans=virtio,version=9p2000.L
        echo escaped > {t}/victim
    """
    try:
        status, out = sh(qemu, script)
        assert status != 90, f"the guest could not even try: {out}"
    finally:
        sh(qemu, "rm -f " + shlex.quote(f"{workdir(qemu)}/to-victim") + "; mount -o remount,ro /")
    assert "Read-only file system" in out
    assert_untouched(target)
    assert not (workdir(qemu).parent / "escaped").exists()


def test_the_guest_process_has_no_privilege_on_the_host(guest: RoadtestSession) -> None:
    """Kernel code in a UML guest runs as this host process, and a QEMU guest's escape
    would run as QEMU: it must not be able to undo the read-only mounts, whatever system
    call it makes."""
    assert isinstance(guest.machine, ProcessGuest) and guest.machine.proc is not None
    pid = guest.machine.proc.pid
    status = dict(
        line.split(":\t", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines()
    )
    for field in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"):
        assert int(status[field], 16) == 0, field
    assert status["NoNewPrivs"].strip() == "1"
    for ns in ("mnt", "net", "ipc"):
        assert os.readlink(f"/proc/{pid}/ns/{ns}") != os.readlink(f"/proc/self/ns/{ns}"), ns
    writable = []
    for line in Path(f"/proc/{pid}/mountinfo").read_text().splitlines():
        fields = line.split()
        mount_point, options = fields[4], fields[5].split(",")
        if "rw" in options:
            writable.append(mount_point)
    assert sorted(writable) == sorted(["/dev/shm", str(workdir(guest))])
