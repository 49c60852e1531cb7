"""The agent protocol end to end on the host: client -> channel -> agent ops -> reply.

Module loading is deliberately not exercised here: it would load into the
host's kernel. It is covered by the driver tests, inside the guest.
"""

from __future__ import annotations

import contextlib
import errno
import os
import select
import signal
import socket
import struct
import termios
import threading
from collections.abc import Iterator
from pathlib import Path

import msgpack
import pytest

from roadtest.guest import agent
from roadtest.guest.client import AgentClient, AgentTimeout
from roadtest.guest.protocol import LENGTH, MAX_MESSAGE, Channel, ProtocolError, decode, encode
from roadtest.testing.guestpath import GuestPath, NotNotified


@pytest.fixture
def client() -> Iterator[AgentClient]:
    host, guest = socket.socketpair()
    stop: list[str] = []
    thread = threading.Thread(target=lambda: stop.append(agent.serve(Channel(guest.fileno()))))
    thread.start()
    yield AgentClient(Channel(host.fileno()), timeout=5)
    try:
        AgentClient(Channel(host.fileno()), timeout=5).call("poweroff")
    except ProtocolError:
        pass
    thread.join(5)
    assert stop == ["poweroff"]
    host.close()
    guest.close()


def test_frames_round_trip_every_byte_value() -> None:
    message = {"op": "write", "data": bytes(range(256)), "n": -1, "s": "ü"}
    frame = encode(message)
    (size,) = LENGTH.unpack_from(frame)
    assert size == len(frame) - LENGTH.size
    assert decode(frame[LENGTH.size :]) == message


def test_message_split_across_reads_is_reassembled() -> None:
    r, w = os.pipe()
    frame = encode({"op": "ping"}) + encode({"op": "kmsg", "text": "x"})
    for byte in frame:
        os.write(w, bytes([byte]))
    channel = Channel(r)
    assert channel.recv() == {"op": "ping"}
    assert channel.recv() == {"op": "kmsg", "text": "x"}
    os.close(w)
    with pytest.raises(ProtocolError, match="closed"):
        channel.recv()
    os.close(r)


def test_garbage_and_oversized_messages_are_protocol_errors() -> None:
    with pytest.raises(ProtocolError):
        decode(b"\xc1")  # never used in msgpack
    with pytest.raises(ProtocolError, match="not a map"):
        decode(msgpack.packb([1, 2]))
    r, w = os.pipe()
    os.write(w, struct.pack("<I", MAX_MESSAGE + 1))
    with pytest.raises(ProtocolError, match="exceeds"):
        Channel(r).recv()
    os.close(r)
    os.close(w)


def test_files_and_directories(client: AgentClient, tmp_path: Path) -> None:
    path = tmp_path / "attr"
    path.write_bytes(b"")  # like a sysfs attribute, write_file writes an existing file
    client.write_file(str(path), b"42\n")
    assert path.read_bytes() == b"42\n"
    assert client.read_file(str(path)) == b"42\n"
    (tmp_path / "b").mkdir()
    assert client.listdir(str(tmp_path)) == ["attr", "b"]
    assert client.exists(str(path))
    assert not client.exists(str(tmp_path / "missing"))


def test_guest_errno_comes_back_as_oserror(client: AgentClient, tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError) as info:
        client.read_file(str(tmp_path / "missing"))
    assert info.value.errno == errno.ENOENT
    with pytest.raises(IsADirectoryError):
        client.read_file(str(tmp_path))
    with pytest.raises(OSError) as bad_fd:
        client.close(9999)
    assert bad_fd.value.errno == errno.EBADF


def test_a_file_with_nothing_to_read_yet_is_eagain(client: AgentClient, tmp_path: Path) -> None:
    """Like a hwmon attribute before its first conversion (show() returns -EAGAIN), or a
    device node with no data: an OSError with the guest's errno, and the agent never blocks."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    writer = os.open(fifo, os.O_RDWR | os.O_NONBLOCK)  # a writer exists, with nothing written
    try:
        with pytest.raises(OSError) as info:
            client.read_file(str(fifo))
        assert info.value.errno == errno.EAGAIN
        assert not isinstance(info.value, AgentTimeout)
        os.write(writer, b"1234\n")
        assert client.read_file(str(fifo)) == b"1234\n"
    finally:
        os.close(writer)  # ends a read that blocked, so the agent can stop


def test_unknown_op_and_bad_arguments_are_einval(client: AgentClient) -> None:
    with pytest.raises(OSError) as unknown:
        client.call("format_disk")
    assert unknown.value.errno == errno.EINVAL
    with pytest.raises(OSError) as bad:
        client.call("read_file", nonsense=1)
    assert bad.value.errno == errno.EINVAL
    client.ping()  # the agent survived both


def test_file_descriptor_ops(client: AgentClient, tmp_path: Path) -> None:
    path = tmp_path / "f"
    fd = client.open(str(path), os.O_RDWR | os.O_CREAT)
    assert client.write(fd, b"hello") == 5
    client.close(fd)
    fd = client.open(str(path))
    assert client.read(fd, 100) == b"hello"
    assert client.read(fd, 100) == b""
    assert client.pread(fd, 100, 0) == b"hello"  # from the start again (a sysfs re-read)
    assert client.pread(fd, 2, 3) == b"lo"
    assert client.read(fd, 100) == b""  # pread left the position at the end
    client.close(fd)


def test_ioctl_with_buffer_and_poll(client: AgentClient, tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    rfd = client.open(str(fifo), os.O_RDONLY | os.O_NONBLOCK)
    w = os.open(fifo, os.O_WRONLY)
    assert client.poll([(rfd, select.POLLIN)], 0) == []
    os.write(w, b"abc")
    assert client.poll([(rfd, select.POLLIN)], 1000) == [(rfd, select.POLLIN)]
    ret, buf = client.ioctl(rfd, termios.FIONREAD, bytes(4))
    assert ret == 0 and buf is not None and struct.unpack("i", buf)[0] == 3
    os.close(w)
    client.close(rfd)


def test_run_a_program(client: AgentClient) -> None:
    rc, out, err = client.run(["/bin/sh", "-c", "echo out; echo err >&2; exit 3"])
    assert (rc, out, err) == (3, b"out\n", b"err\n")


def test_silent_agent_times_out() -> None:
    host, guest = socket.socketpair()
    client = AgentClient(Channel(host.fileno()), timeout=0.05)
    with pytest.raises(AgentTimeout):
        client.ping()
    host.close()
    guest.close()


def test_a_call_cut_short_by_an_exception_breaks_the_channel(client: AgentClient) -> None:
    # A time limit or Ctrl-C raises in the middle of a call: its reply is still on its way,
    # so the next call would read it as its own.
    with pytest.raises(KeyboardInterrupt):
        with _interrupted_after(0.2):
            client.run(["/bin/sleep", "1"])
    with pytest.raises(ProtocolError, match="broken"):
        client.ping()


@contextlib.contextmanager
def _interrupted_after(seconds: float) -> Iterator[None]:
    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGALRM, interrupt)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def test_a_watch_without_a_notification_fails_naming_the_attribute(client: AgentClient) -> None:
    # The host's own sysfs: the same kernfs poll(2) as the guest's, and nothing notifies
    # this attribute.
    attribute = GuestPath(client, "/sys/devices/system/cpu/online")
    value = attribute.read_text().rstrip("\n")
    with attribute.watch() as watch:
        assert watch.value == value
        with pytest.raises(NotNotified) as failure:
            watch.wait(timeout=0.2)
    assert str(failure.value) == (
        f"no sysfs_notify on /sys/devices/system/cpu/online within 0.2 s (host time); "
        f"it still reads {value!r}"
    )


def test_a_spawned_program_leads_a_session_on_its_terminal(client: AgentClient) -> None:
    """What `roadtest shell` starts its shell with: the tty is the program's controlling
    terminal and its stdio, the program leads a new session, and reap() gives its status."""
    host, terminal = os.openpty()
    try:
        script = 'echo "$(tty) $$ $(cut -d" " -f6 /proc/$$/stat) $(cut -d" " -f7 /proc/$$/stat)"'
        pid = client.spawn(
            ["/bin/sh", "-c", script + "; exit 3"], os.ttyname(terminal), "/", {"PATH": "/bin"}
        )
        output = b""
        while b"\n" not in output:
            ready, _, _ = select.select([host], [], [], 10)
            assert ready, f"no output from the spawned program: {output!r}"
            output += os.read(host, 1024)
        tty_name, shell_pid, session, tty_nr = output.decode().split()
        assert tty_name == os.ttyname(terminal)
        assert int(shell_pid) == pid == int(session)  # a session leader
        assert int(tty_nr) == os.stat(terminal).st_rdev  # its controlling terminal (stat 7)
        status = client.reap(pid)
        for _ in range(100):
            if status is not None:
                break
            select.select([], [], [], 0.05)
            status = client.reap(pid)
        assert status == 3
    finally:
        os.close(host)
        os.close(terminal)


# Reaping: the agent is PID 1 in the guest, so every orphan becomes its child. Here, a
# process of its own made a child subreaper (prctl(2) PR_SET_CHILD_SUBREAPER) gets them
# as PID 1 does.

_SUBREAPER_AGENT = """
import ctypes, sys
from roadtest.guest import agent
from roadtest.guest.protocol import Channel
PR_SET_CHILD_SUBREAPER = 36
assert ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
agent.serve(Channel(int(sys.argv[1])), reap=True)
"""


@pytest.fixture
def pid1_agent() -> Iterator[tuple[AgentClient, int]]:
    """A client of an agent that is the parent of orphans, as PID 1 is; and its pid."""
    import subprocess
    import sys

    host, guest = socket.socketpair()
    proc = subprocess.Popen(
        [sys.executable, "-c", _SUBREAPER_AGENT, str(guest.fileno())], pass_fds=[guest.fileno()]
    )
    guest.close()
    client = AgentClient(Channel(host.fileno()), timeout=10)
    try:
        yield client, proc.pid
        client.call("poweroff")
        assert proc.wait(10) == 0
    finally:
        proc.kill()
        proc.wait()
        host.close()


def _state_and_parent(pid: int) -> tuple[str, int] | None:
    """A process's state letter and parent (proc(5), /proc/PID/stat), None once it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except FileNotFoundError:
        return None
    return fields[0], int(fields[1])


def _orphan(client: AgentClient, program: str) -> int:
    """`program` started in the background by a shell that exits at once: an orphan."""
    rc, out, _ = client.run(["/bin/sh", "-c", f"{program} >/dev/null 2>&1 & echo $!"])
    assert rc == 0
    return int(out)


def _parent(pid: int) -> int | None:
    state = _state_and_parent(pid)
    return None if state is None else state[1]


def _zombie(pid: int) -> bool:
    """Whether `pid` ends (as a zombie) within 5 s."""
    for _ in range(500):
        if (_state_and_parent(pid) or ("?",))[0] == "Z":
            return True
        select.select([], [], [], 0.01)
    return False


def _gone_after_requests(client: AgentClient, pid: int) -> bool:
    for _ in range(200):
        if _state_and_parent(pid) is None:
            return True
        client.ping()  # the agent reaps before each request
        select.select([], [], [], 0.01)
    return False


def test_a_killed_orphan_is_reaped_not_left_a_zombie(
    pid1_agent: tuple[AgentClient, int],
) -> None:
    client, agent_pid = pid1_agent
    stray = _orphan(client, "sleep 600")
    assert _parent(stray) == agent_pid  # the agent's child now
    rc, _, _ = client.run(["kill", "-KILL", str(stray)])  # what kill_strays does
    assert rc == 0
    assert _gone_after_requests(client, stray), _state_and_parent(stray)


def test_reaping_keeps_the_exit_statuses_run_and_reap_report(
    pid1_agent: tuple[AgentClient, int],
) -> None:
    client, agent_pid = pid1_agent
    # An orphan that ends while a run waits for its own program: the run's status is
    # its program's, and the orphan is reaped afterwards.
    early = _orphan(client, "sleep 0.1")
    assert client.run(["/bin/sh", "-c", "sleep 0.5; exit 7"])[0] == 7
    assert _gone_after_requests(client, early)
    # A spawned program that ended is a zombie the agent keeps for reap(), also while
    # orphans that ended after it (later children: waitid shows the spawned one first)
    # are reaped.
    host, terminal = os.openpty()
    try:
        spawned = client.spawn(["/bin/sh", "-c", "exit 5"], os.ttyname(terminal), "/", {})
        late = _orphan(client, "sleep 0.2")
        assert _parent(late) == agent_pid
        assert _zombie(spawned) and _zombie(late)  # both ended, the spawned one first
        assert _gone_after_requests(client, late)
        assert _state_and_parent(spawned) is not None  # still there, for reap()
        assert client.reap(spawned) == 5
        assert _state_and_parent(spawned) is None
    finally:
        os.close(host)
        os.close(terminal)
