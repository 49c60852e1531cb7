"""PID 1 of the guest: prepare the system, then serve the host's agent requests.

Started by the kernel as `init=<python> -- -I -S <this file>`, with
ROADTEST_WORK (the run's work directory, the one writable host path),
ROADTEST_AGENT_TTY (the tty or port wired to the host's channel) and
ROADTEST_PYTHONPATH (where roadtest and msgpack are) in its environment;
on QEMU also ROADTEST_ROOT_9P (`tag:options`: started from an initramfs, init mounts
the host's root itself, see switch_root), ROADTEST_SHARES (`tag=path;...`: the 9p shares, the work
directory first, mounted at their host paths; UML's work dir is hostfs),
ROADTEST_POWER_OFF=reboot (QEMU's -no-reboot ends the machine at a reboot,
whatever the firmware offers) and, in a --vm run's VM, ROADTEST_ROOT_OVERLAY=1
(the read-only root under a tmpfs: a writable root whose writes stay here).
`-I -S` and an explicit path keep Python's start short: every file it looks
up is a hostfs round trip. PID 1 must never exit: whatever happens, it ends
by powering the guest off.
"""

from __future__ import annotations

import ctypes
import os
import sys
import termios
import time
import tty

if __name__ == "__main__":
    sys.path[0:1] = os.environ.get("ROADTEST_PYTHONPATH", "").split(":")

from roadtest.guest import agent  # noqa: E402
from roadtest.guest.protocol import BOOT_FAILED, Channel  # noqa: E402

_libc = ctypes.CDLL(None, use_errno=True)
_MS_RDONLY = 1
_MS_MOVE = 8192
_LINUX_REBOOT_CMD_POWER_OFF = 0x4321FEDC
_LINUX_REBOOT_CMD_RESTART = 0x01234567


def mount(source: str, target: str, fstype: str, flags: int = 0, data: str = "") -> None:
    if _libc.mount(source.encode(), target.encode(), fstype.encode(), flags, data.encode()) < 0:
        err = ctypes.get_errno()
        if err != 16:  # EBUSY: already mounted (devtmpfs is, with DEVTMPFS_MOUNT)
            raise OSError(err, f"mount {fstype} on {target}: {os.strerror(err)}")


def switch_root(root: str) -> None:
    """Mount the host's root (`tag:options`, 9p, read-only) over the initramfs this init
    started from and move into it, as switch_root(8) does: what init imported from the
    initramfs stays loaded, and everything after comes from the host's root."""
    tag, _, options = root.partition(":")
    os.mkdir("/.root")
    mount(tag, "/.root", "9p", _MS_RDONLY, options)
    os.chdir("/.root")
    mount(".", "/", "", _MS_MOVE)
    os.chroot(".")
    os.chdir("/")


def overlay_root() -> None:
    """Make the root the host's (read-only) under a tmpfs, and move into it."""
    mount("tmpfs", "/run", "tmpfs")
    for name in ("upper", "work", "root"):
        os.mkdir(f"/run/{name}")
    mount("overlay", "/run/root", "overlay", 0, "lowerdir=/,upperdir=/run/upper,workdir=/run/work")
    os.chdir("/run/root")
    os.chroot(".")
    os.chdir("/")


def mount_shares(shares: str) -> None:
    for share in shares.split(";"):
        tag, _, path = share.partition("=")
        os.makedirs(path, exist_ok=True)  # exists on the host: only the overlay may lack it
        mount(tag, path, "9p", 0, "trans=virtio,version=9p2000.L,msize=262144")


def prepare(work: str) -> None:
    root = os.environ.get("ROADTEST_ROOT_9P")
    if root:
        switch_root(root)
    if os.environ.get("ROADTEST_ROOT_OVERLAY") == "1":
        overlay_root()
    mount("proc", "/proc", "proc")
    mount("sysfs", "/sys", "sysfs")
    mount("devtmpfs", "/dev", "devtmpfs")
    mount("debugfs", "/sys/kernel/debug", "debugfs")
    mount("tracefs", "/sys/kernel/tracing", "tracefs")
    mount("tmpfs", "/run", "tmpfs")
    # The root is the host's, read-only; the work dir is the only writable host path.
    # The host's /tmp stays visible (tests put files there); scratch space is the work dir.
    shares = os.environ.get("ROADTEST_SHARES")
    if shares:
        mount_shares(shares)
    else:
        mount("none", work, "hostfs", 0, work)
    # UML keeps its memory in /dev/shm (a --vm run's guests; the sandbox mounts its own).
    os.makedirs("/dev/shm", exist_ok=True)
    os.makedirs(f"{work}/tmp", exist_ok=True)
    os.environ["TMPDIR"] = f"{work}/tmp"
    # Tests bind drivers themselves; a driver must not grab a device on module load (a
    # kernel without SPI has no spi bus).
    for bus in ("i2c", "platform", "spi"):
        if os.path.exists(f"/sys/bus/{bus}"):
            agent.write_file(f"/sys/bus/{bus}/drivers_autoprobe", b"0")
    # Every kernel message reaches the console, which the host keeps per test.
    agent.write_file("/proc/sys/kernel/printk", b"8")


def open_channel(path: str) -> Channel:
    fd = os.open(path, os.O_RDWR | os.O_NOCTTY)
    if not os.isatty(fd):
        return Channel(fd)  # a virtio-serial port: bytes as they are
    tty.setraw(fd)
    attrs = termios.tcgetattr(fd)
    attrs[1] &= ~termios.OPOST
    termios.tcsetattr(fd, termios.TCSANOW, attrs)
    return Channel(fd)


def power(op: str) -> None:
    os.sync()
    if os.environ.get("ROADTEST_POWER_OFF") == "reboot":
        op = "reboot"
    cmd = _LINUX_REBOOT_CMD_RESTART if op == "reboot" else _LINUX_REBOOT_CMD_POWER_OFF
    _libc.reboot(cmd)
    while True:  # reboot() does not return; never let PID 1 exit
        time.sleep(3600)


def main() -> None:
    op = "poweroff"
    ready = False
    try:
        work = os.environ["ROADTEST_WORK"]
        prepare(work)
        channel = open_channel(os.environ.get("ROADTEST_AGENT_TTY", "/dev/tty1"))
        channel.send({"ready": True, "release": os.uname().release})
        ready = True
        op = agent.serve(channel, reap=True)  # PID 1: every orphan becomes our child
    except BaseException as err:
        import traceback

        traceback.print_exc(file=sys.stderr)
        if not ready:  # the host's reason the guest did not boot (ProcessGuest)
            print(f"{BOOT_FAILED} {err}", file=sys.stderr)
        sys.stderr.flush()
    power(op)


if __name__ == "__main__":
    main()
