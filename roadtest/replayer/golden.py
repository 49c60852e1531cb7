"""The golden traces under a directory, and which one serves which test and device.

`roadtest replay` (to choose tests and report) and the replay hooks in the
test process (to play them) both look traces up here, so both see the same
choice. Only headers are read: a trace's events are streamed when played.

A test and device may have one trace per kernel line (6.12 and 6.1, say: where a
driver's I/O differs between them); the one recorded on the kernel nearest the
replayed one is played, and its header says which kernel that was.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from roadtest.trace.format import Header, TraceError, read_header
from roadtest.trace.names import kernel_version


@dataclass
class Golden:
    """What is under a golden directory, by path (each in sorted order)."""

    directory: Path
    headers: dict[Path, Header] = field(default_factory=dict)  # the traces that can be played
    damaged: dict[Path, str] = field(default_factory=dict)  # unreadable: why, in one line
    # A second trace of the same test, device and kernel line: not played, the first one is.
    shadowed: dict[Path, Path] = field(default_factory=dict)
    # (test, origin) -> its traces, one per kernel line, in path order.
    by_device: dict[tuple[str, str], list[Path]] = field(default_factory=dict)
    # Traces that name no device (imported without --device): (test id, compatible) -> them.
    deviceless: dict[tuple[str, str], list[Path]] = field(default_factory=dict)

    def problem(self, path: Path) -> str:
        """Why `path` is not played ("" when it is): one line for the replay summary."""
        if path in self.damaged:
            return self.damaged[path]
        first = self.shadowed.get(path)
        if first is not None:
            header = self.headers[path]
            return (
                f"{first} is a trace of the same test and device "
                f"({header.test}, {header.extra.get('device')}) on the same kernel line "
                f"({_line(header.kernel)}), and only one is played"
            )
        return ""

    def alternatives(self, path: Path) -> list[Path]:
        """The traces of `path`'s test and device, one per kernel line ([path] if none)."""
        header = self.headers.get(path)
        device = header.extra.get("device") if header is not None else None
        if header is None or not device:
            return [path]
        return self.by_device.get((header.test, str(device)), [path])

    def choose(self, test_id: str, origin: str, release: str) -> Path | None:
        """The trace of this test and device recorded on the kernel nearest `release` (the
        replayed kernel's): the same major.minor first, then the nearest line, then the
        nearest stable release; a tie goes to the newer. None if it has none."""
        paths = self.by_device.get((test_id, origin))
        if not paths:
            return None
        want = kernel_version(release)
        if want is None:
            return paths[0]

        def distance(path: Path) -> tuple[int, int, int, tuple[int, int, int]]:
            have = kernel_version(self.headers[path].kernel)
            if have is None:
                return (1, 0, 0, (0, 0, 0))  # after every trace that names its kernel
            lines = abs((have[0] - want[0]) * 1000 + have[1] - want[1])
            newest_first = (-have[0], -have[1], -have[2])
            return (0, lines, abs(have[2] - want[2]), newest_first)

        return min(paths, key=distance)


def scan_golden(directory: Path) -> Golden:
    """Every *.rtrace under `directory` (not following directory symlinks), by header."""
    golden = Golden(directory)
    paths = sorted(directory.rglob("*.rtrace")) if directory.is_dir() else []
    for path in paths:
        try:
            header = read_header(path)
        except TraceError as err:
            golden.damaged[path] = err.detail
            continue
        golden.headers[path] = header
        device = header.extra.get("device")
        if not device:
            golden.deviceless.setdefault((header.test, header.compatible), []).append(path)
            continue
        paths = golden.by_device.setdefault((header.test, str(device)), [])
        line = _line(header.kernel)
        first = next((p for p in paths if _line(golden.headers[p].kernel) == line), None)
        if first is not None:
            golden.shadowed[path] = first
        else:
            paths.append(path)
    return golden


def _line(release: str) -> str:
    """A release's kernel line: "6.1" of "6.1.192-roadtest" (the release itself if it names
    no version)."""
    version = kernel_version(release)
    return release if version is None else f"{version[0]}.{version[1]}"
