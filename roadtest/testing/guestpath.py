"""Paths inside the guest, read and written through the agent."""

from __future__ import annotations

import fnmatch
import posixpath

from roadtest.guest.client import AgentClient


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
