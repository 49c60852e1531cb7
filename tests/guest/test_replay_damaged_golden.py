"""One damaged golden trace fails alone: the rest are played (the hardening issue, item 6).

A copy of traces/opt3001 with a byte flipped in its last lz4 block, two good vcnl4000
traces, and a second copy of one of them in another folder, replayed with a guest of
its own: the damaged trace's line says DAMAGED and why, the good ones are played and
pass, the shadowed copy says which trace was played in its place. Before, the damaged
trace ended the pytest session and every trace was "NOT PLAYED ... did not attach",
and then its report told the user to suspect host load.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from roadtest.checkout import repo_root

REPO = repo_root()
ROADTEST = Path(sys.executable).with_name("roadtest")


def test_a_damaged_trace_fails_alone_and_a_shadowed_copy_is_named(tmp_path: Path) -> None:
    golden = tmp_path / "golden"
    shutil.copytree(REPO / "traces" / "opt3001", golden / "opt3001")
    for name in ("test_lux.rtrace", "test_lux_timeout.rtrace"):
        (golden / "vcnl4000").mkdir(exist_ok=True)
        shutil.copy(REPO / "traces" / "vcnl4000" / name, golden / "vcnl4000" / name)
    (golden / "zcopy").mkdir()
    shutil.copy(golden / "vcnl4000" / "test_lux.rtrace", golden / "zcopy" / "test_lux.rtrace")
    damaged = golden / "opt3001" / "test_illuminance.rtrace"
    data = bytearray(damaged.read_bytes())
    data[-13] ^= 0x40  # the last block's data, before its checksum, the end mark, the frame's
    damaged.write_bytes(bytes(data))

    addopts = f"-p no:cacheprovider --roadtest-workdir={tmp_path / 'work'}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env.update(ROADTEST_ROOT=str(REPO), PYTEST_ADDOPTS=addopts)
    proc = subprocess.run(
        [str(ROADTEST), "replay", "--golden", str(golden)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    out = proc.stdout
    assert proc.returncode == 1, out + proc.stderr
    summary = out[out.index(f"replay of {golden}:") :].splitlines()
    assert len(summary) == 6, summary
    by_name = {
        Path(line.split(": ", 1)[0].split()[-1]).relative_to(golden).as_posix(): line
        for line in summary[1:-1]
    }
    damaged_line = by_name["opt3001/test_illuminance.rtrace"]
    assert damaged_line.startswith("  DAMAGED    ")
    assert "the trace is damaged: byte " in damaged_line and "checksum" in damaged_line.lower()
    assert by_name["vcnl4000/test_lux.rtrace"].startswith("  ok ")
    assert by_name["vcnl4000/test_lux_timeout.rtrace"].startswith("  ok ")
    shadowed = by_name["zcopy/test_lux.rtrace"]
    assert shadowed.startswith("  NOT PLAYED ")
    assert f"{golden / 'vcnl4000' / 'test_lux.rtrace'} is a trace of the same test" in shadowed
    assert "did not attach" not in out
    # Host load cannot damage a file: the timing note is for divergences only.
    assert "host load" not in out
    assert summary[-1] == "2 of 4 traces replayed without divergence"
