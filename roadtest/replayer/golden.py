"""The golden traces under a directory, and which one serves which test and device.

`roadtest replay` (to choose tests and report) and the replay hooks in the
test process (to play them) both look traces up here, so both see the same
choice. Only headers are read: a trace's events are streamed when played.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from roadtest.trace.format import Header, TraceError, read_header


@dataclass
class Golden:
    """What is under a golden directory, by path (each in sorted order)."""

    directory: Path
    headers: dict[Path, Header] = field(default_factory=dict)  # the traces that can be played
    damaged: dict[Path, str] = field(default_factory=dict)  # unreadable: why, in one line
    # A second trace of the same test and device: it is not played, the first one is.
    shadowed: dict[Path, Path] = field(default_factory=dict)
    by_device: dict[tuple[str, str], Path] = field(default_factory=dict)  # (test, origin)
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
                f"({header.test}, {header.extra.get('device')}), and only one is played"
            )
        return ""


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
        first = golden.by_device.setdefault((header.test, str(device)), path)
        if first != path:
            golden.shadowed[path] = first
    return golden
