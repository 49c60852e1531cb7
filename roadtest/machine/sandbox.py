"""Confine a guest's host process, then exec it: the run's work directory is all it can write.

    python3 -I -S sandbox.py --writable DIR [--writable DIR...] [--cpu N] -- PROGRAM [ARGS...]

The guest is untrusted. Root in a UML guest can remount hostfs read-write or
mount any host path, and kernel code in the guest (a driver under test, a
module a test loads) runs as the UML process and can make host system calls
directly. So the limit is enforced here, on the host, before PROGRAM starts:

- a private mount namespace in which every mount is read-only and nosuid, and
  each DIR is a read-write bind mount of itself; /dev/shm is a private tmpfs (UML
  keeps its memory file there, and it must not be the host's);
- private network and IPC namespaces (no host network, no abstract sockets);
- no capabilities: none effective, permitted, inheritable or ambient, an
  empty bounding set, and securebits that keep uid 0 from regaining any at
  exec; no_new_privs. So the mounts cannot be made writable again, even in a
  new user namespace, where they are locked.

The uid stays the caller's: hostfs checks access with access(2), which uses
the real uid, so under another uid the guest could not read the root-owned
cache it boots from. Without capabilities, uid 0 still owns root's files, but
every path to them is on a read-only mount.

A caller that is not root gets the same from a user namespace of its own.

Runs before PROGRAM with `-I -S` and the standard library only: it must not
import roadtest (the guest's Python path is not set up) and should cost little.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys

CLONE_NEWNS = 0x00020000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000

MS_NOSUID = 0x2
MS_NODEV = 0x4
MS_BIND = 0x1000
MS_REC = 0x4000
MS_PRIVATE = 1 << 18

AT_FDCWD = -100
AT_RECURSIVE = 0x8000
MOUNT_ATTR_RDONLY = 0x1
MOUNT_ATTR_NOSUID = 0x2
SYS_MOUNT_SETATTR = 442  # x86_64 and every architecture of the new syscall table

PR_SET_PDEATHSIG = 1
PR_CAPBSET_DROP = 24
PR_SET_SECUREBITS = 28
PR_SET_NO_NEW_PRIVS = 38
PR_CAP_AMBIENT = 47
PR_CAP_AMBIENT_CLEAR_ALL = 4
# NOROOT, NO_SETUID_FIXUP, KEEP_CAPS (off) and NO_CAP_AMBIENT_RAISE, each with its lock.
SECUREBITS = 0x01 | 0x02 | 0x04 | 0x08 | 0x20 | 0x40 | 0x80
LINUX_CAPABILITY_VERSION_3 = 0x20080522

_libc = ctypes.CDLL(None, use_errno=True)


class SandboxError(Exception):
    pass


def _check(result: int, what: str) -> None:
    if result < 0:
        err = ctypes.get_errno()
        raise SandboxError(f"{what}: {os.strerror(err)}")


class _MountAttr(ctypes.Structure):
    _fields_ = [
        ("attr_set", ctypes.c_uint64),
        ("attr_clr", ctypes.c_uint64),
        ("propagation", ctypes.c_uint64),
        ("userns_fd", ctypes.c_uint64),
    ]


def _set_mount_attrs(path: str, attr_set: int, attr_clr: int, recursive: bool) -> None:
    attr = _MountAttr(attr_set, attr_clr, 0, 0)
    flags = AT_RECURSIVE if recursive else 0
    _libc.syscall.restype = ctypes.c_long
    result = _libc.syscall(
        ctypes.c_long(SYS_MOUNT_SETATTR),
        ctypes.c_int(AT_FDCWD),
        ctypes.c_char_p(path.encode()),
        ctypes.c_uint(flags),
        ctypes.byref(attr),
        ctypes.c_size_t(ctypes.sizeof(attr)),
    )
    _check(result, f"mount_setattr {path}")


def _mount(source: str, target: str, fstype: str, flags: int, data: str = "") -> None:
    result = _libc.mount(
        source.encode(), target.encode(), fstype.encode(), ctypes.c_ulong(flags), data.encode()
    )
    _check(result, f"mount {fstype or source} on {target}")


def _enter_namespaces() -> None:
    namespaces = CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC
    if os.geteuid() == 0:
        _check(_libc.unshare(namespaces), "unshare")
        return
    uid, gid = os.getuid(), os.getgid()
    _check(_libc.unshare(namespaces | CLONE_NEWUSER), "unshare (user namespace)")
    for name, text in (
        ("setgroups", "deny"),
        ("uid_map", f"{uid} {uid} 1"),
        ("gid_map", f"{gid} {gid} 1"),
    ):
        with open(f"/proc/self/{name}", "w") as f:
            f.write(text)


def _confine_mounts(writable: list[str]) -> None:
    # Nothing done here may propagate back to the host's mounts.
    _mount("none", "/", "", MS_REC | MS_PRIVATE)
    _set_mount_attrs("/", MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID, 0, recursive=True)
    _mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777")
    for path in writable:
        _mount(path, path, "", MS_BIND)
        _set_mount_attrs(path, 0, MOUNT_ATTR_RDONLY, recursive=False)


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [
        ("effective", ctypes.c_uint32),
        ("permitted", ctypes.c_uint32),
        ("inheritable", ctypes.c_uint32),
    ]


def _drop_capabilities() -> None:
    _check(_libc.prctl(PR_SET_SECUREBITS, SECUREBITS, 0, 0, 0), "securebits")
    with open("/proc/sys/kernel/cap_last_cap") as f:
        last = int(f.read())
    for cap in range(last + 1):
        _check(_libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0), f"drop capability {cap}")
    _check(_libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0), "ambient capabilities")
    header = _CapHeader(LINUX_CAPABILITY_VERSION_3, 0)
    data = (_CapData * 2)()
    _check(_libc.capset(ctypes.byref(header), ctypes.byref(data)), "capset")
    _check(_libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")


def confine(writable: list[str]) -> None:
    """Confine this process (and all it will exec and fork) as the module says."""
    for path in writable:
        if not os.path.isdir(path):
            raise SandboxError(f"{path}: not a directory")
    if not os.path.isdir("/dev/shm"):
        raise SandboxError("/dev/shm is missing: it holds the guest's memory")
    _enter_namespaces()
    _confine_mounts([os.path.realpath(path) for path in writable])
    _drop_capabilities()


def _parse(argv: list[str]) -> tuple[list[str], int | None, list[str]]:
    writable: list[str] = []
    cpu = None
    args = iter(argv)
    for arg in args:
        if arg == "--writable":
            writable.append(next(args, ""))
        elif arg == "--cpu":
            cpu = int(next(args, ""))
        elif arg == "--":
            program = list(args)
            if writable and all(writable) and program:
                return writable, cpu, program
            break
        else:
            break
    raise SandboxError(
        "usage: sandbox.py --writable DIR [--writable DIR...] [--cpu N] -- PROGRAM [ARGS...]"
    )


def main(argv: list[str]) -> int:
    try:
        writable, cpu, program = _parse(argv)
        confine(writable)
        if cpu is not None:
            try:
                os.sched_setaffinity(0, {cpu})
            except OSError as err:
                raise SandboxError(f"cannot run on CPU {cpu}: {err.strerror}") from None
        # Set last: changing credentials clears it. The parent is the test process.
        _check(_libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0), "pdeathsig")
        os.environ["TMPDIR"] = "/dev/shm"
        os.execv(program[0], program)
    except (SandboxError, OSError, ValueError) as err:
        print(f"roadtest sandbox: {err}", file=sys.stderr)
    return 126


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
