"""What several unit-test modules share: running the CLI in-process, fake .ko files."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from roadtest.cli import main


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
