"""`roadtest replay` and `roadtest record` on bad input: one line, non-zero, nothing changed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from roadtest.recorder.format import Header, write_trace_atomic

ROADTEST = Path(sys.executable).with_name("roadtest")
REPO = Path(__file__).resolve().parents[2]


def replay(golden: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(ROADTEST), "replay", "--golden", str(golden)],
        capture_output=True,
        text=True,
        check=False,
        cwd=REPO,
        env={**os.environ, "ROADTEST_ROOT": str(REPO)},
    )


def one_error_line(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 2, result
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    return lines[0]


def trace(path: Path, test: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    header = Header(kernel="k", test=test, address=0x48, compatible="ti,tps62864")
    write_trace_atomic(path, header, [])
    return path


def test_a_missing_golden_directory(tmp_path: Path) -> None:
    assert "no such directory" in one_error_line(replay(tmp_path / "nope"))


def test_a_golden_directory_without_traces(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("x")
    assert "no traces" in one_error_line(replay(tmp_path))


def test_a_trace_whose_test_is_gone(tmp_path: Path) -> None:
    trace(tmp_path / "tps62864" / "x.rtrace", "tests/drivers/regulator/test_tps62864.py::test_gone")
    line = one_error_line(replay(tmp_path))
    assert "x.rtrace: its test tests/drivers/regulator/test_tps62864.py::test_gone" in line
    assert "no longer exists" in line


@pytest.mark.parametrize(
    "damage",
    [lambda b: b[: len(b) // 2], lambda b: b"", lambda b: b"not a trace at all"],
    ids=["truncated", "empty", "foreign"],
)
def test_a_damaged_trace(tmp_path: Path, damage: object) -> None:
    path = trace(
        tmp_path / "tps62864" / "x.rtrace", "tests/drivers/regulator/test_tps62864.py::test_modes"
    )
    path.write_bytes(damage(path.read_bytes()))  # type: ignore[operator]
    assert str(path) in one_error_line(replay(tmp_path))
