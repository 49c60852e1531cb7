"""The guest's devicetree: the machine's root with the backend's virtio devices, plus the
fragments the tests declare.

A fragment is devicetree source for one node under the virtio I2C adapter or
the virtio SPI controller (or, for platform devices, at the root), with
placeholders the session fills in: `$addr$` becomes the device's address on its
bus (hex, no 0x: an I2C address, an SPI chip select) and `$<name>$`
the number of the GPIO line it asked for under that name. Fragments are
preprocessed with the kernel's dt-bindings includes, so
`IRQ_TYPE_EDGE_FALLING` and friends work.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from roadtest.backend.gpio import DEFAULT_NGPIO
from roadtest.errors import RoadtestError

# 7-bit addresses a session hands out; 0x00-0x07 and 0x78-0x7f are reserved by the I2C spec.
I2C_ADDRESSES = range(0x08, 0x78)
NGPIO = DEFAULT_NGPIO  # the lines the session hands out: the backend controller's

_PLACEHOLDER = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)\$")

# Before the machine's root node (machine.base.MachineType.devicetree_root).
PREAMBLE = """\
/dts-v1/;
#include <dt-bindings/gpio/gpio.h>
#include <dt-bindings/interrupt-controller/irq.h>
"""


class DevicetreeError(RoadtestError):
    pass


# Where a fragment goes: under the virtio device of that label, or at the root.
Parent = Literal["i2c", "spi", "root"]


@dataclass(frozen=True)
class Placed:
    """A fragment with its placeholders filled in, and where it came from (for errors)."""

    origin: str
    source: str
    parent: Parent = "i2c"


def fill(
    origin: str, src: str, addr: int | None, gpios: dict[str, int], parent: Parent = "i2c"
) -> Placed:
    def value(match: re.Match[str]) -> str:
        name = match.group(1)
        if name == "addr" and addr is not None:
            return f"{addr:x}"
        if name in gpios:
            return str(gpios[name])
        raise DevicetreeError(
            f"{origin}: devicetree fragment uses ${name}$, which is neither $addr$ "
            f"nor one of its GPIO names {sorted(gpios)}"
        )

    return Placed(origin, _PLACEHOLDER.sub(value, src), parent)


def source(fragments: list[Placed], root: str) -> str:
    """The whole tree: the machine's `root` node, then the fragments, under their bus's
    virtio device via a label reference (&i2c, &spi) or in a second root block, which dtc
    merges with the first."""
    body = "".join(
        f"\n/* {f.origin} */\n{'/' if f.parent == 'root' else '&' + f.parent} {{\n{f.source}\n}};\n"
        for f in fragments
    )
    return PREAMBLE + root + body


def _first_error(text: str, src: str) -> str:
    """cpp's or dtc's first error, with the source line it points at: its number counts
    the whole generated tree, which the user never wrote."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    first = next((line for line in lines if "rror" in line or "syntax" in line), None)
    first = first or (lines[0] if lines else "unknown error")
    where = re.search(r"<stdin>:(\d+)", first)
    source_lines = src.splitlines()
    if where is not None and 1 <= int(where.group(1)) <= len(source_lines):
        first += f" (line {where.group(1)}: {source_lines[int(where.group(1)) - 1].strip()})"
    return first


def compile_dts(src: str, include_root: Path, out: Path, what: str = "devicetree") -> Path:
    """Preprocess with the kernel's dt-bindings and compile to `out` (a .dtb)."""
    includes = include_root / "scripts" / "dtc" / "include-prefixes"
    cpp = subprocess.run(
        [
            "cpp",
            "-nostdinc",
            f"-I{includes}",
            "-undef",
            "-D__DTS__",
            "-x",
            "assembler-with-cpp",
            "-",
        ],
        input=src.encode(),
        capture_output=True,
        check=False,
    )
    if cpp.returncode != 0:
        raise DevicetreeError(
            f"{what} does not preprocess: {_first_error(cpp.stderr.decode(), src)}"
        )
    tmp = out.with_name(out.name + ".tmp")
    dtc = subprocess.run(
        ["dtc", "-q", "-I", "dts", "-O", "dtb", "-o", str(tmp), "-"],
        input=cpp.stdout,
        capture_output=True,
        check=False,
    )
    if dtc.returncode != 0:
        tmp.unlink(missing_ok=True)
        raise DevicetreeError(f"{what} does not compile: {_first_error(dtc.stderr.decode(), src)}")
    tmp.replace(out)
    return out


def build(
    fragments: list[Placed], include_root: Path, workdir: Path, root: str, name: str = "guest"
) -> Path:
    """Compile the whole tree into workdir/<name>.dtb (its source beside it, <name>.dts); if
    it fails, find the fragment to blame by compiling each alone."""
    workdir.mkdir(parents=True, exist_ok=True)
    full = source(fragments, root)
    (workdir / f"{name}.dts").write_text(full)
    try:
        return compile_dts(full, include_root, workdir / f"{name}.dtb")
    except DevicetreeError:
        scratch = workdir / "fragment.dtb"
        for fragment in fragments:
            compile_dts(
                source([fragment], root),
                include_root,
                scratch,
                what=f"devicetree fragment of {fragment.origin}",
            )
            scratch.unlink(missing_ok=True)
        raise
