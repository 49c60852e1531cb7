"""roadtest installed as a user installs it (a wheel, into a fresh venv) runs a directory of
tests kept outside its checkout, with a model of the user's own imported from there, and
records and replays its golden trace beside it.

The run boots the checkout's cached main kernel (--roadtest-kernel): what the test proves is
the package (its data, its pytest plugin, its command) and the user's directory, not a
kernel build of the user's fragments, which would cost minutes (their collection is
tests/unit/test_own_tests.py's)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from scaffold import CACHE

from roadtest.checkout import repo_root
from roadtest.kernel import cached_kernel
from roadtest.kernel.source import read_series

ROOT = repo_root()

# The user's model: a TMP102 whose temperature register always holds 25 degC in the
# extended mode the driver sets at probe: a 13-bit count of 0.0625 degC in D15..D3, with
# D0 set (TI SBOS397, "Temperature Register"; 25 degC is 400 counts); the other registers
# keep their power-up values ("Pointer Register").
MODEL = """
from roadtest.models.regmap import RO, MappedSMBusModel, Register, RegisterMap

class Warm(MappedSMBusModel):
    register_map = RegisterMap(
        [
            Register("TEMPERATURE", 0, (400 << 3) | 1, RO),
            Register("CONFIG", 1, 0x60A0),
            Register("T_LOW", 2, 0x4B00),
            Register("T_HIGH", 3, 0x5000),
        ],
        width=16,
        byteorder="big",
    )
"""

TEST = '''
from warm import Warm
from roadtest.testing import I2CDevice, read_int

SENSOR = I2CDevice(
    compatible="ti,tmp102",
    model=Warm,
    dts="""
        temperature-sensor@$addr$ {
            compatible = "ti,tmp102";
            reg = <0x$addr$>;
        };
    """,
)

def test_warm(guest):
    with guest.bound(SENSOR) as dev:
        guest.sleep(0.055)  # the driver's first conversion (tests/drivers/hwmon/test_tmp102.py)
        hwmon = (dev.path / "hwmon").only("hwmon*")
        assert read_int(hwmon / "temp1_input") == 25000  # millidegrees (hwmon ABI)
'''


def run(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        args, cwd=cwd, env=env, capture_output=True, text=True, timeout=600, check=False
    )
    assert result.returncode == 0, f"{' '.join(args[:3])}: {result.stdout}{result.stderr}"
    return result


def test_an_installed_roadtest_runs_tests_kept_outside_its_checkout(tmp_path: Path) -> None:
    kernel = cached_kernel(ROOT)
    if kernel is None:
        pytest.fail("no cached main kernel: run `roadtest build` first (make test does)")
    env = {k: v for k, v in os.environ.items() if k not in ("ROADTEST_ROOT", "PYTHONPATH")}
    env["ROADTEST_CACHE"] = str(CACHE)
    run([sys.executable, "-m", "venv", str(tmp_path / "venv")], tmp_path, env)
    pip = [str(tmp_path / "venv" / "bin" / "python"), "-m", "pip", "-q"]
    pip += ["--disable-pip-version-check"]
    run([*pip, "wheel", "--no-deps", "-w", str(tmp_path / "wheel"), str(ROOT)], tmp_path, env)
    (wheel,) = (tmp_path / "wheel").glob("roadtest-*.whl")
    run([*pip, "install", str(wheel)], tmp_path, env)

    mine = tmp_path / "my-driver-tests"
    mine.mkdir()
    (mine / "warm.py").write_text(MODEL)
    (mine / "test_warm.py").write_text(TEST)
    python = str(tmp_path / "venv" / "bin" / "python")
    # What a kernel build of the installed roadtest starts from: its base fragment and our
    # patch series, from the package data.
    probe = (
        "from roadtest.checkout import repo_root\n"
        "from roadtest.kernel.config import config_fragments\n"
        "from roadtest.kernel.source import read_series\n"
        "print(repo_root(), len(read_series(repo_root())), config_fragments(repo_root())[0])\n"
    )
    root, patches, base = run([python, "-c", probe], mine, env).stdout.split()
    assert "site-packages" in root, "the installed roadtest is not the one imported"
    assert int(patches) == len(read_series(ROOT))
    assert Path(base).read_bytes() == (ROOT / "kernel-patches" / "base.config").read_bytes()

    roadtest = str(tmp_path / "venv" / "bin" / "roadtest")
    entry = kernel.build_dir.parent
    result = run(
        [roadtest, "run", str(mine), f"--roadtest-kernel={entry}", "-p", "no:cacheprovider"],
        tmp_path,
        env,
    )
    assert "1 passed" in result.stdout
    # Its golden trace goes beside it, named relative to it, and replays from anywhere.
    kernel_option = f"--roadtest-kernel={entry}"
    run([roadtest, "record", str(mine), kernel_option], tmp_path, env)
    assert (mine / "traces" / "tmp102" / "test_warm.rtrace").is_file()
    golden = str(mine / "traces")
    replayed = run([roadtest, "replay", "--golden", golden, kernel_option], ROOT, env)
    assert "1 of 1 trace replayed without divergence" in replayed.stdout
