"""Paths inside the guest, read, written and watched (sysfs_notify) through the agent."""

from __future__ import annotations

import contextlib
import fnmatch
import os
import posixpath
from collections.abc import Iterator

from roadtest.guest.client import AgentClient
from roadtest.testing.uapi import POLL_NOTIFIED, wait_events

#: What one read(2) of a sysfs attribute returns at most: a page (fs/sysfs/file.c).
_ATTRIBUTE_SIZE = 4096


class GuestPath:
    """A path in the guest's filesystem; `/` joins like pathlib."""

    def __init__(self, agent: AgentClient, path: str) -> None:
        self.agent = agent
        self.path = posixpath.normpath(path)

    def __truediv__(self, other: str) -> GuestPath:
        return GuestPath(self.agent, posixpath.join(self.path, other))

    def __str__(self) -> str:
        return self.path

    def __repr__(self) -> str:
        return f"GuestPath({self.path!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, GuestPath) and other.path == self.path

    def __hash__(self) -> int:
        return hash(self.path)

    @property
    def name(self) -> str:
        return posixpath.basename(self.path)

    @property
    def parent(self) -> GuestPath:
        return GuestPath(self.agent, posixpath.dirname(self.path))

    def read_bytes(self) -> bytes:
        return self.agent.read_file(self.path)

    def write_bytes(self, data: bytes) -> None:
        self.agent.write_file(self.path, data)

    @contextlib.contextmanager
    def watch(self) -> Iterator[Watch]:
        """Watch this sysfs attribute for sysfs_notify(): `with path.watch() as w:`, make
        the driver notify, then `w.wait()`. Entering opens and reads the attribute (what
        arms poll(2), fs/kernfs/file.c), so a notification that comes before `wait()` is
        not lost."""
        fd = self.agent.open(self.path, os.O_RDONLY)
        try:
            watch = Watch(self, fd)
            yield watch
        finally:
            self.agent.close(fd)

    def read_text(self) -> str:
        return self.read_bytes().decode()

    def write_text(self, text: str) -> None:
        self.write_bytes(text.encode())

    def iterdir(self) -> list[GuestPath]:
        return [self / name for name in self.agent.listdir(self.path)]

    def exists(self) -> bool:
        return self.agent.exists(self.path)

    def glob(self, pattern: str) -> list[GuestPath]:
        """Entries of this directory whose names match `pattern` (no recursion)."""
        return [
            self / name
            for name in self.agent.listdir(self.path)
            if fnmatch.fnmatchcase(name, pattern)
        ]

    def only(self, pattern: str) -> GuestPath:
        """The one entry matching `pattern`, e.g. a device's `iio:device*` directory."""
        found = self.glob(pattern)
        if len(found) != 1:
            raise FileNotFoundError(
                f"expected one {pattern} in {self.path}, found {[p.name for p in found]}"
            )
        return found[0]


class NotNotified(TimeoutError):
    """No sysfs_notify() on a watched attribute in time."""


class Watch:
    """An open sysfs attribute that has been read, waiting for sysfs_notify()."""

    def __init__(self, path: GuestPath, fd: int) -> None:
        self.path = path
        self.fd = fd
        self.value = self._read()  # the read arms poll(2)

    def _read(self) -> str:
        data = self.path.agent.pread(self.fd, _ATTRIBUTE_SIZE, 0)
        return data.decode().rstrip("\n")

    def wait(self, timeout: float = 10.0) -> str:
        """Wait until the driver notifies the attribute (POLLPRI|POLLERR) and return its new
        value, read from the start again (which re-arms it for the next `wait()`). Raises
        `NotNotified` after `timeout` host seconds (guest time is not host time)."""
        try:
            wait_events(self.path.agent, self.fd, POLL_NOTIFIED, timeout, "notification")
        except TimeoutError:
            raise NotNotified(
                f"no sysfs_notify on {self.path} within {timeout:g} s (host time); "
                f"it still reads {self.value!r}"
            ) from None
        self.value = self._read()
        return self.value
