"""What several unit-test modules share: running the CLI in-process, fake .ko files,
hand-made traces, transfers on a bus without a guest, GPIO lines for models."""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import lz4.frame
import msgpack
import pytest
from hypothesis import Phase, find, given, settings
from hypothesis import strategies as st

from roadtest.arch.um import UM
from roadtest.backend.i2c import I2CBus
from roadtest.backend.i2c_transfer import I2CMessage, Transfer
from roadtest.cli import main
from roadtest.kernel import Kernel
from roadtest.trace.format import Header


@dataclass
class Result:
    returncode: int
    stdout: str
    stderr: str


Roadtest = Callable[..., Result]


def cli_runner(capsys: pytest.CaptureFixture[str]) -> Roadtest:
    """`roadtest ARGS` in this process, with its exit status and output."""

    def run(*args: str | Path) -> Result:
        status = main([str(a) for a in args])
        out, err = capsys.readouterr()
        return Result(status, out, err)

    return run


def make_ko(path: Path, *fields: str) -> Path:
    """A relocatable ELF object with a .modinfo section, like the kernel's .ko files."""
    path.parent.mkdir(parents=True, exist_ok=True)
    src = path.with_suffix(".c")
    src.write_text("int roadtest_dummy;\n")
    obj = path.with_suffix(".o")
    subprocess.run(["gcc", "-c", "-o", str(obj), str(src)], check=True)
    info = path.with_suffix(".modinfo")
    info.write_bytes(b"".join(f.encode() + b"\0" for f in fields))
    subprocess.run(
        ["objcopy", "--add-section", f".modinfo={info}", str(obj), str(path)], check=True
    )
    return path


def raw_trace(path: Path, header: Header, *events: object) -> Path:
    """A trace written by hand, as anyone could: each event a map (seq numbered here)
    or already packed bytes, in one lz4 frame."""
    stream = msgpack.packb(header.to_map(), use_bin_type=True)
    for seq, event in enumerate(events):
        if isinstance(event, dict):
            event = msgpack.packb({"seq": seq, "t": seq, **event}, use_bin_type=True)
        assert isinstance(event, bytes)
        stream += event
    path.write_bytes(lz4.frame.compress(stream))
    return path


def deep_marker(depth: int, seq: int = 0) -> bytes:
    """A packed marker event whose detail nests `depth` arrays (msgpack.packb refuses that)."""
    packed: bytes = msgpack.packb(
        {"seq": seq, "t": seq, "kind": "marker", "what": "note", "detail": None}
    )
    assert packed.endswith(b"\xc0")  # the detail, nil, comes last
    return packed[:-1] + b"\x91" * depth + b"\xc0"


# virtio-i2c message flags (include/uapi/linux/virtio_i2c.h)
FAIL_NEXT, M_RD = 1 << 0, 1 << 1


def serve(
    bus: I2CBus, addr: int, *msgs: bytes | int
) -> tuple[list[tuple[int, bytes]], list[tuple[str, BaseException]]]:
    """One transfer to `addr`, as the backend serves it: bytes are writes, ints read
    lengths, FAIL_NEXT on all but the last. Runs on a thread of its own, as the
    backend's does. Returns (status, data) per message and the faults reported."""
    transfer = Transfer(
        addr,
        [
            I2CMessage(
                (M_RD if isinstance(m, int) else 0) | (FAIL_NEXT if i < len(msgs) - 1 else 0),
                m if isinstance(m, int) else len(m),
                b"" if isinstance(m, int) else m,
            )
            for i, m in enumerate(msgs)
        ],
    )
    thread = threading.Thread(target=bus.serve, args=(transfer,))
    thread.start()
    thread.join()
    return [(m.status, m.data) for m in transfer.messages], transfer.faults or []


class RecordingLine:
    """A GPIO line (models' `Line`) that remembers every level driven onto it."""

    def __init__(self) -> None:
        self.levels: list[bool] = []

    @property
    def input(self) -> bool:
        return self.levels[-1]

    @property
    def output(self) -> bool:
        return False

    def set(self, level: bool) -> None:
        self.levels.append(level)


def run_script_with_a_kernel(directory: Path, script: str) -> subprocess.CompletedProcess[str]:
    """`python -c script` in `directory`, which gets a kernel/ laid out as a cache entry
    (stamp.json) for --roadtest-kernel: the run builds no kernel."""
    (directory / "kernel").mkdir()
    (directory / "kernel" / "stamp.json").write_text("{}")
    return subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        cwd=directory,
        timeout=120,
        check=False,
    )


T = TypeVar("T")
# Hypothesis, reproducibly: no database, derandomized. No explain phase: it reruns every
# example to annotate a failure these tests never print.
STRATEGY_SETTINGS = settings(
    database=None, derandomize=True, max_examples=1000, phases=[Phase.generate, Phase.shrink]
)


def found(strategy: st.SearchStrategy[T], condition: Callable[[T], bool]) -> T:
    """The simplest value of `strategy` meeting `condition`, as Hypothesis shrinks it."""
    return find(strategy, condition, settings=STRATEGY_SETTINGS)


def drawn(strategy: st.SearchStrategy[T], n: int) -> list[T]:
    """`n` values of `strategy` (a strategy's spread, reproducibly)."""
    values: list[T] = []

    @given(strategy)
    def draw(value: T) -> None:
        values.append(value)

    settings(STRATEGY_SETTINGS, max_examples=n)(draw)()
    return values


def fake_kernel(build: Path, source: Path, recipe: str) -> Kernel:
    """A kernel whose build directory `build` (made here, with an empty Module.symvers)
    has a Makefile that runs `recipe` for `modules`: out-of-tree builds without a kernel."""
    build.mkdir(parents=True)
    (build / "Module.symvers").write_text("")
    (build / "Makefile").write_text(f"modules:\n\t{recipe}\n")
    return Kernel(
        release="6.12.0-roadtest",
        source_dir=source,
        build_dir=build,
        target=UM,
        image=build / "vmlinux",
        modules_dir=build.parent / "modules",
        config=build / ".config",
    )
