"""What a .ko file says about itself: its `.modinfo` section (pyelftools)."""

from __future__ import annotations

from pathlib import Path

from elftools.elf.elffile import ELFFile


def read_modinfo(path: Path) -> dict[str, list[str]]:
    """The key=value strings of a module's .modinfo section (keys may repeat)."""
    with path.open("rb") as f:
        section = ELFFile(f).get_section_by_name(".modinfo")
        data: bytes = section.data() if section is not None else b""
    info: dict[str, list[str]] = {}
    for entry in data.split(b"\0"):
        key, sep, value = entry.decode("utf-8", "replace").partition("=")
        if sep:
            info.setdefault(key, []).append(value)
    return info
