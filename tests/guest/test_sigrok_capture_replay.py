"""A logic analyzer's capture of a board becomes a golden trace that replays (the logic
analyzer issue's "a capture of a real board is replayable").

The captures in tests/unit/data/sigrok/ are sigrok session files of a TMP102 at 0x48 doing
what tests/drivers/hwmon/test_tmp102.py::test_temperature[25] makes its driver do, on a
100 kHz and a 400 kHz bus, with an EEPROM at 0x50 on the same bus, clock stretching and
glitches under the spike filter's 50 ns (make_captures.py there says how they were made).
Each is imported as the docs' workflow does it (`roadtest import sigrok`) and replayed in
a guest against the test: the driver must make the board's transfers, in order, and the
test's checks must hold on what the board answered.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from roadtest.checkout import repo_root

REPO = repo_root()
ROADTEST = Path(sys.executable).with_name("roadtest")
CAPTURES = REPO / "tests" / "unit" / "data" / "sigrok"
TEST = "tests/drivers/hwmon/test_tmp102.py::test_temperature[25]"


def roadtest(*args: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    addopts = f"-p no:cacheprovider --roadtest-workdir={tmp_path / 'work'}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env.update(ROADTEST_ROOT=str(REPO), PYTEST_ADDOPTS=addopts)
    return subprocess.run(
        [str(ROADTEST), *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


@pytest.mark.parametrize("capture", ["capture-100k.sr", "capture-400k.sr"])
def test_a_board_capture_imports_and_replays(tmp_path: Path, capture: str) -> None:
    golden = tmp_path / "golden"
    imported = roadtest(
        "import",
        "sigrok",
        str(CAPTURES / capture),
        "--channels",
        "scl=D0,sda=D1",
        "--addr",
        "0x48",
        "--compatible",
        "ti,tmp102",
        "--test",
        TEST,
        "--device",
        "test_tmp102.SENSOR",
        "--out",
        str(golden),
        tmp_path=tmp_path,
    )
    assert imported.returncode == 0, imported.stdout + imported.stderr
    (trace,) = golden.rglob("*.rtrace")
    replayed = roadtest("replay", "--golden", str(golden), TEST, tmp_path=tmp_path)
    out = replayed.stdout
    assert replayed.returncode == 0, out + replayed.stderr
    assert f"  ok         {trace}: " in out
    assert out.splitlines()[-1] == "1 of 1 trace replayed without divergence"
