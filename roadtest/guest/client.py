"""Host side of the agent channel: the calls a test makes into the guest."""

from __future__ import annotations

import os
import select
from typing import Any

from roadtest.guest.protocol import Channel, ProtocolError


class AgentTimeout(ProtocolError):
    """The guest did not answer in time: it hangs or is busy forever."""


class AgentClient:
    """Synchronous calls into the guest agent; an errno from the guest raises OSError."""

    def __init__(self, channel: Channel, timeout: float | None = 30.0) -> None:
        self.channel = channel
        # A call's limit in host seconds; None: no call ever times out, whatever limit it
        # asks for (a debugger may hold the guest for as long as its user likes).
        self.timeout = timeout
        # After a timeout or a broken stream, replies can no longer be matched to requests.
        self.broken = False

    def _recv(self, timeout: float | None) -> dict[str, Any]:
        if not self.channel.has_buffered():
            ready, _, _ = select.select([self.channel.rfd], [], [], timeout)
            if not ready:
                raise AgentTimeout(f"guest agent did not answer within {timeout:g} s")
        return self.channel.recv()

    def call(self, op: str, timeout: float | None = None, **args: Any) -> Any:
        if self.broken:
            raise ProtocolError("the agent channel is broken (an earlier call timed out or failed)")
        try:
            self.channel.send({"op": op, **args})
            limit = timeout if timeout is not None and self.timeout is not None else self.timeout
            reply = self._recv(limit)
        except BaseException:  # a timeout, a signal's exception: the reply is still due
            self.broken = True
            raise
        if "errno" in reply:
            raise OSError(reply["errno"], reply.get("msg", os.strerror(reply["errno"])))
        return reply.get("r")

    def wait_ready(self, timeout: float) -> dict[str, Any]:
        reply = self._recv(timeout)
        if not reply.get("ready"):
            raise ProtocolError(f"expected the agent's ready message, got {reply!r}")
        return reply

    # Files
    def read_file(self, path: str) -> bytes:
        data: bytes = self.call("read_file", path=str(path))
        return data

    def write_file(self, path: str, data: bytes | str) -> None:
        self.call(
            "write_file", path=str(path), data=data.encode() if isinstance(data, str) else data
        )

    def listdir(self, path: str) -> list[str]:
        names: list[str] = self.call("listdir", path=str(path))
        return names

    def walk(self, path: str) -> list[tuple[str, str, int]]:
        """Every entry under `path` (links not followed), parents first: its path relative
        to `path`, its kind (d, f, l or c) and its permission bits."""
        found: list[list[Any]] = self.call("walk", path=str(path))
        return [(str(name), str(kind), int(mode)) for name, kind, mode in found]

    def kcov_start(self, mode: int, words: int) -> None:
        """KCOV for the agent's task from now (agent.kcov_start): mode 0 PCs, 1 comparisons."""
        self.call("kcov_start", mode=mode, words=words)

    def kcov_stop(self) -> bytes:
        """What KCOV collected since kcov_start, raw (agent.kcov_stop)."""
        data: bytes = self.call("kcov_stop")
        return data

    def exists(self, path: str) -> bool:
        try:
            self.call("listdir", path=str(path))
        except NotADirectoryError:
            return True
        except FileNotFoundError:
            return False
        return True

    # File descriptors
    def open(self, path: str, flags: int = os.O_RDONLY, mode: int = 0o644) -> int:
        fd: int = self.call("open", path=str(path), flags=flags, mode=mode)
        return fd

    def close(self, fd: int) -> None:
        self.call("close", fd=fd)

    def read(self, fd: int, size: int) -> bytes:
        data: bytes = self.call("read", fd=fd, size=size)
        return data

    def pread(self, fd: int, size: int, offset: int) -> bytes:
        data: bytes = self.call("pread", fd=fd, size=size, offset=offset)
        return data

    def write(self, fd: int, data: bytes) -> int:
        n: int = self.call("write", fd=fd, data=data)
        return n

    def ioctl(self, fd: int, request: int, arg: int | bytes = 0) -> tuple[int, bytes | None]:
        reply = self.call("ioctl", fd=fd, request=request, arg=arg)
        return int(reply["ret"]), reply["buf"]

    def poll(self, fds: list[tuple[int, int]], timeout_ms: int) -> list[tuple[int, int]]:
        ready = self.call(
            "poll",
            fds=[[fd, ev] for fd, ev in fds],
            timeout_ms=timeout_ms,
            timeout=None if self.timeout is None else self.timeout + max(timeout_ms, 0) / 1000,
        )
        return [(fd, rev) for fd, rev in ready]

    # Modules and programs
    def load_module(self, path: str, params: str = "") -> None:
        self.call("load_module", path=str(path), params=params)

    def remove_module(self, name: str) -> None:
        self.call("remove_module", name=name)

    def run(self, argv: list[str], timeout: float = 60.0) -> tuple[int, bytes, bytes]:
        """Run a program in the guest; `timeout` is host time (the guest's clock may jump)."""
        reply = self.call("run", argv=[str(a) for a in argv], timeout=timeout)
        return int(reply["rc"]), reply["out"], reply["err"]

    def spawn(self, argv: list[str], tty: str, cwd: str, env: dict[str, str]) -> int:
        """Start a program in the guest in a session of its own, `tty` its terminal (a shell
        the user talks to); returns its pid without waiting for it."""
        pid: int = self.call("spawn", argv=argv, tty=tty, cwd=cwd, env=env)
        return pid

    def reap(self, pid: int) -> int | None:
        """A spawned program's exit status once it ended, None while it runs."""
        status: int | None = self.call("reap", pid=pid)
        return status

    def kmsg(self, text: str) -> None:
        self.call("kmsg", text=text)

    def ping(self) -> None:
        self.call("ping")
