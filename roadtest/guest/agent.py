"""The agent that runs inside the guest and performs the test's requests.

Every op is a plain function of msgpack-able arguments. An OSError raised by
an op goes back to the host with its errno; anything else is a bug in the
request or the agent, and goes back as EINVAL with the exception text so the
test fails with a message instead of the guest dying.
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import os
import select

from roadtest.guest import abi
from roadtest.guest.protocol import Channel, ProtocolError

TYPE_CHECKING = False  # not typing's: importing typing costs the guest ~60 ms of boot
if TYPE_CHECKING:
    import signal as _signal
    from collections.abc import Callable
    from typing import Any
else:
    import _signal  # built in; signal.py imports enum, which costs the guest's boot

_libc = ctypes.CDLL(None, use_errno=True)


def _syscall_number(name: str) -> int:
    """`name`'s number on the architecture this agent runs on (the guest's, not the host's)."""
    return abi.for_machine(os.uname().machine).syscall(name)


def _check(ret: int, what: str) -> int:
    if ret < 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")
    return ret


def read_file(path: str) -> bytes:
    """The whole file. Never blocks the agent: a file with nothing to read yet (a device
    node, or a sysfs attribute whose show() says -EAGAIN) raises OSError(EAGAIN)."""
    # Not FileIO.readall(): it returns None, not an error, when read(2) says EAGAIN.
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        chunks: list[bytes] = []
        while True:
            try:
                chunk = os.read(fd, 65536)
            except BlockingIOError:
                if chunks:  # what there is, of a file that never ends (a FIFO, a device)
                    break
                raise
            if not chunk:
                break
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def write_file(path: str, data: bytes) -> None:
    # One write() so that sysfs sees the whole value in a single store.
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


def open_(path: str, flags: int = os.O_RDONLY, mode: int = 0o644) -> int:
    return os.open(path, flags, mode)


def close(fd: int) -> None:
    os.close(fd)


def read(fd: int, size: int) -> bytes:
    return os.read(fd, size)


def pread(fd: int, size: int, offset: int) -> bytes:
    """read(2) at `offset`, leaving the file position alone: a sysfs attribute's re-read
    after poll() reported a change (read from 0 again, as kernfs asks)."""
    return os.pread(fd, size, offset)


def write(fd: int, data: bytes) -> int:
    return os.write(fd, data)


def ioctl(fd: int, request: int, arg: int | bytes = 0) -> dict[str, Any]:
    """Run ioctl(2); a bytes argument is passed as a mutable buffer and returned."""
    if isinstance(arg, bytes):
        buf = bytearray(arg)
        ret = fcntl.ioctl(fd, request, buf, True)
        return {"ret": ret, "buf": bytes(buf)}
    return {"ret": fcntl.ioctl(fd, request, arg), "buf": None}


def poll(fds: list[list[int]], timeout_ms: int) -> list[list[int]]:
    poller = select.poll()
    for fd, events in fds:
        poller.register(fd, events)
    return [[fd, revents] for fd, revents in poller.poll(timeout_ms)]


def listdir(path: str) -> list[str]:
    return sorted(os.listdir(path))


def walk(path: str) -> list[list[Any]]:
    """Every entry under `path`, symbolic links not followed: [relative path, kind (d, f,
    l, c: a directory, a regular file, a link, a character device), permission bits],
    parents before their children. One call for a tree a host would list entry by entry."""
    found: list[list[Any]] = []
    pending = [""]
    while pending:
        relative = pending.pop(0)
        try:
            entries = sorted(os.scandir(os.path.join(path, relative)), key=lambda e: e.name)
        except OSError:
            continue  # gone, or unreadable: the caller sees it missing
        for entry in entries:
            name = os.path.join(relative, entry.name)
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            kind = (
                "l" if entry.is_symlink() else "d" if entry.is_dir(follow_symlinks=False) else "f"
            )
            if kind == "f" and (st.st_mode & 0o170000) == 0o020000:
                kind = "c"
            found.append([name, kind, st.st_mode & 0o7777])
            if kind == "d":
                pending.append(name)
    return found


# include/uapi/linux/kcov.h: _IOR('c', 1, unsigned long), _IO('c', 100), _IO('c', 101).
_KCOV_INIT_TRACE = 0x80086301
_KCOV_ENABLE = 0x6364
_KCOV_DISABLE = 0x6365
_kcov: list[Any] = []  # [fd, mapping] while kcov_start()ed


def kcov_start(mode: int, words: int) -> None:
    """Collect KCOV for the agent's own task (what its next ops make the kernel do, in the
    code built with coverage): `mode` 0 for the PCs reached, 1 for the comparisons and
    their operands; room for `words` 64-bit words (Documentation/dev-tools/kcov.rst)."""
    kcov_stop()
    fd = os.open("/sys/kernel/debug/kcov", os.O_RDWR)
    try:
        fcntl.ioctl(fd, _KCOV_INIT_TRACE, words)
        # Not Python's mmap module: it refuses a mapping longer than the file's size, and
        # debugfs says 0.
        mmap = _libc.mmap
        mmap.restype = ctypes.c_void_p
        mmap.argtypes = [
            ctypes.c_void_p,
            ctypes.c_size_t,
            ctypes.c_int,
            ctypes.c_int,
            ctypes.c_int,
            ctypes.c_long,
        ]
        address = mmap(None, words * 8, 0x3, 0x1, fd, 0)  # PROT_READ|PROT_WRITE, MAP_SHARED
        if address is None or address == ctypes.c_void_p(-1).value:
            raise OSError(ctypes.get_errno(), "kcov_start: mmap of the KCOV area failed")
        fcntl.ioctl(fd, _KCOV_ENABLE, mode)
    except OSError:
        os.close(fd)
        raise
    ctypes.c_uint64.from_address(address).value = 0
    _kcov[:] = [fd, address, words, mode]


def kcov_stop() -> bytes:
    """What KCOV collected since kcov_start(), as the kernel wrote it (native 64-bit
    words: the count, then the records), and stop collecting; b"" if it was not on."""
    if not _kcov:
        return b""
    fd, address, size, mode = _kcov
    _kcov.clear()
    try:
        fcntl.ioctl(fd, _KCOV_DISABLE, 0)
        count = ctypes.c_uint64.from_address(address).value
        per_record = 4 if mode == 1 else 1  # a comparison's record: type, operands, PC
        words = min(count * per_record + 1, size)
        return ctypes.string_at(address, words * 8)
    finally:
        _libc.munmap(ctypes.c_void_p(address), ctypes.c_size_t(size * 8))
        os.close(fd)


def load_module(path: str, params: str = "") -> None:
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        _check(
            _libc.syscall(_syscall_number("finit_module"), fd, params.encode(), 0),
            f"finit_module({path})",
        )
    finally:
        os.close(fd)


def remove_module(name: str) -> None:
    _check(
        _libc.syscall(_syscall_number("delete_module"), name.encode(), os.O_NONBLOCK),
        f"delete_module({name})",
    )


def run(argv: list[str], limit: float | None = None) -> dict[str, Any]:
    """Run a program; `limit` is in guest time, which time-travel makes jump: the host's
    call timeout is the one that protects against hangs."""
    import subprocess  # costs ~60 ms of the guest's boot if imported up front

    proc = subprocess.run(argv, capture_output=True, timeout=limit, check=False)
    return {"rc": proc.returncode, "out": proc.stdout, "err": proc.stderr}


# The programs spawn() started, by pid, until reap() sees them end.
_spawned: dict[int, Any] = {}


def spawn(argv: list[str], tty: str, cwd: str, env: dict[str, str]) -> int:
    """Start a program in a session of its own with `tty` as its controlling terminal and
    its stdin, stdout and stderr (an interactive shell), and return its pid at once. `tty`
    may be a port that is no terminal (a virtio-serial port: a --vm run's output); the
    program then has none, and reads nothing."""
    import subprocess
    import termios

    fd = os.open(tty, os.O_RDWR | os.O_NOCTTY)
    terminal = os.isatty(fd)

    def take_terminal() -> None:
        # After setsid, in the child: take the tty even if a dead shell's session had it.
        if terminal:
            fcntl.ioctl(0, termios.TIOCSCTTY, 1)

    try:
        proc = subprocess.Popen(
            argv,
            stdin=fd if terminal else subprocess.DEVNULL,
            stdout=fd,
            stderr=fd,
            cwd=cwd,
            env=env,
            start_new_session=True,
            preexec_fn=take_terminal,
        )
    finally:
        os.close(fd)
    _spawned[proc.pid] = proc
    return int(proc.pid)


def reap(pid: int) -> int | None:
    """A spawned program's exit status once it ended (and it is forgotten), None while it runs."""
    proc = _spawned[pid]
    status: int | None = proc.poll()
    if status is not None:
        del _spawned[pid]
    return status


# Set by SIGCHLD (a child of ours ended) until serve() reaps: a look at the children
# before every request would cost a system call each, 25-55 us in UML as measured under
# load here (7-17 % of an agent ping).
_child_ended = False


def _note_child_ended(signum: int, frame: object) -> None:
    global _child_ended
    _child_ended = True


def reap_orphans() -> None:
    """Reap every child that ended and that no one here waits for: as PID 1 the agent is
    the parent of every process whose own parent ended (a test's `sleep &` once its shell
    exited), and a process killed then stays a zombie until its parent waits for it.

    Never a program of `spawn`'s (reap() gives its status), and never `run`'s, whose
    status subprocess waits for: `serve` calls this between requests, when no `run` is
    under way."""
    while True:
        try:
            # A look at one ended child, which stays a zombie (WNOWAIT).
            ended = os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:  # no children at all
            return
        if ended is None:
            return
        if ended.si_pid in _spawned:
            # waitid shows the same one each time: look past it, in /proc.
            _reap_listed_zombies()
            return
        _reap(ended.si_pid)


def _reap_listed_zombies() -> None:
    """Reap this process's zombie children that no one here waits for, found in /proc."""
    me = os.getpid()
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) in _spawned:
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as stat:
                # After "pid (comm) ": state ppid ...
                fields = stat.read().rpartition(b")")[2].split()
        except OSError:
            continue  # it ended and was reaped meanwhile
        if fields[:1] == [b"Z"] and int(fields[1]) == me:
            _reap(int(name))


def _reap(pid: int) -> None:
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:  # reaped already
        pass


def kmsg(text: str) -> None:
    """Put a line in the kernel log, so host-side events can be placed among the kernel's."""
    # The newline ends the record: without it printk keeps the record open for a
    # continuation, and neither the console nor /dev/kmsg readers see it until the
    # next message (which, with time-travel, can be long after).
    write_file("/dev/kmsg", text.encode() + b"\n")


def ping() -> None:
    return None


OPS: dict[str, Callable[..., Any]] = {
    "read_file": read_file,
    "write_file": write_file,
    "open": open_,
    "close": close,
    "read": read,
    "pread": pread,
    "write": write,
    "ioctl": ioctl,
    "poll": poll,
    "listdir": listdir,
    "load_module": load_module,
    "remove_module": remove_module,
    "walk": walk,
    "kcov_start": kcov_start,
    "kcov_stop": kcov_stop,
    "run": run,
    "spawn": spawn,
    "reap": reap,
    "kmsg": kmsg,
    "ping": ping,
}


def handle(request: dict[str, Any]) -> dict[str, Any]:
    args = dict(request)
    op = args.pop("op", None)
    func = OPS.get(op) if isinstance(op, str) else None
    if func is None:
        return {"errno": errno.EINVAL, "msg": f"unknown agent op {op!r}"}
    try:
        return {"r": func(**args)}
    except OSError as err:
        text = err.strerror or str(err)
        if err.filename is not None:
            text = f"{text}: {err.filename}"
        return {"errno": err.errno or errno.EIO, "msg": text}
    except Exception as err:  # a bad request must not take the guest down
        return {"errno": errno.EINVAL, "msg": f"{op}: {type(err).__name__}: {err}"}


def serve(channel: Channel, reap: bool = False) -> str:
    """Answer requests until the host asks to stop; returns the stop op's name. `reap`:
    before each request after a child ended, reap the children no one waits for
    (`reap_orphans`), as PID 1 must; not for an agent whose process has children of its
    own to wait for. Takes SIGCHLD's handler (in the main thread, then)."""
    global _child_ended
    if reap:
        _signal.signal(_signal.SIGCHLD, _note_child_ended)
        # SA_RESTART: an op's system call goes on after SIGCHLD, as without a handler.
        _signal.siginterrupt(_signal.SIGCHLD, False)
    while True:
        try:
            request = channel.recv()
        except ProtocolError:
            return "poweroff"
        if reap and _child_ended:
            _child_ended = False  # before: a child that ends while we reap sets it again
            reap_orphans()
        if request.get("op") in ("poweroff", "reboot"):
            channel.send({"r": None})
            return str(request["op"])
        channel.send(handle(request))
