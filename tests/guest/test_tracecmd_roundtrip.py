"""A capture from the kernel's own i2c trace events becomes a golden trace that replays.

As on a real board, but in our guest: the opt3001 test runs live with
--roadtest-trace-cmd (Debian's trace-cmd, inside the guest, records the
i2c_write/i2c_read/i2c_reply/i2c_result events), `roadtest import trace-cmd`
turns the trace.dat into a golden trace with no model, and `roadtest replay`
runs the test against it. The same live run also records the test the usual
way (--roadtest-record), so the importer is checked against the recorder
transfer by transfer. A damaged copy of the imported trace must diverge.

Each step is a `roadtest` process of its own, as a user runs it, each with
its own guest (about a second each here).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from scaffold import CACHE, other_cpu

from roadtest.checkout import repo_root
from roadtest.trace.format import load_trace, write_trace_atomic

ROOT = repo_root()
TEST_FILE = "tests/drivers/iio/light/test_opt3001.py"
NODE = f"{TEST_FILE}::test_illuminance"
MODEL = "roadtest.models.opt3001:OPT3001"


def roadtest(*args: str | Path) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "ROADTEST_CACHE": str(CACHE),
        "PYTEST_ADDOPTS": f"-p no:cacheprovider --roadtest-cpu={other_cpu()}",
    }
    return subprocess.run(
        [sys.executable, "-m", "roadtest.cli", *map(str, args)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def i2c(events: list[dict[str, Any]]) -> list[Any]:
    return [e["msgs"] for e in events if e["kind"] == "i2c"]


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The live run's capture, imported: the golden directory."""
    tmp = tmp_path_factory.mktemp("tracecmd")
    live = roadtest(
        "run",
        f"--roadtest-workdir={tmp / 'work'}",
        f"--roadtest-trace-cmd={tmp / 'capture'}",
        f"--roadtest-record={tmp / 'recorded'}",
        NODE,
    )
    assert live.returncode == 0, live.stdout + live.stderr
    dat = tmp / "capture" / "test_illuminance.dat"
    assert dat.is_file(), sorted((tmp / "capture").iterdir())
    # The address the session gave the sensor, from the guest's devicetree.
    (dts,) = (tmp / "work").glob("*/guest.dts")
    (addr,) = re.findall(r"light-sensor@([0-9a-f]+) ", dts.read_text())
    golden = tmp / "golden"
    out = golden / "opt3001" / "test_illuminance.rtrace"
    result = roadtest(
        "import",
        "trace-cmd",
        f"--input={dat}",
        f"--addr=0x{addr}",
        "--compatible=ti,opt3001",
        f"--test={NODE}",
        f"--model={MODEL}",
        f"--out={out}",
    )
    assert result.returncode == 0, result.stderr
    assert re.fullmatch(
        rf"imported \d+ transfers of i2c-0 address 0x{addr:0>2} into .*\n", result.stdout
    )
    header, events = load_trace(out)
    assert header.address == int(addr, 16) and header.model == ""
    assert header.kernel.endswith("-roadtest")  # from the trace.dat's uname
    # Transfer by transfer what the recorder saw at the same time (its markers aside).
    _, recorded = load_trace(tmp / "recorded" / "opt3001" / "test_illuminance.rtrace")
    assert i2c(events) == i2c(recorded) and len(events) > 10
    return golden


def replay(golden: Path) -> subprocess.CompletedProcess[str]:
    return roadtest("replay", f"--golden={golden}", TEST_FILE)


def test_the_imported_trace_replays_with_no_model(imported: Path) -> None:
    result = replay(imported)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 of 1 trace replayed without divergence" in result.stdout
    assert re.search(r"ok +\S+test_illuminance\.rtrace: \d+ transfers", result.stdout)


def damaged(imported: Path, tmp_path: Path, change: Any) -> Path:
    """A copy of the golden directory whose trace `change` edited (a list of events)."""
    (path,) = imported.rglob("*.rtrace")
    header, events = load_trace(path)
    change(events)
    out = tmp_path / "golden" / path.relative_to(imported)
    out.parent.mkdir(parents=True)
    write_trace_atomic(out, header, events)
    return tmp_path / "golden"


def is_write(event: dict[str, Any], data: bytes) -> bool:
    return bool(event["msgs"][0]["data"] == data and len(event["msgs"]) == 1)


def test_a_dropped_transfer_diverges(imported: Path, tmp_path: Path) -> None:
    def drop_the_second_conversion_start(events: list[dict[str, Any]]) -> None:
        starts = [i for i, e in enumerate(events) if is_write(e, b"\x01\xca\x10")]
        del events[starts[1]]

    result = replay(damaged(imported, tmp_path, drop_the_second_conversion_start))
    assert result.returncode == 1, result.stdout + result.stderr
    assert re.search(
        r"DIVERGED .*test_illuminance\.rtrace: diverged at event \d+ .*: "
        r"got: write CONFIGURATION\(0x01\) = 0xca10; expected: read CONFIGURATION\(0x01\)",
        result.stdout,
    ), result.stdout
    assert "0 of 1 trace replayed without divergence" in result.stdout


def test_a_changed_response_byte_diverges(imported: Path, tmp_path: Path) -> None:
    def conversion_never_ready(events: list[dict[str, Any]]) -> None:
        # The first CONFIGURATION read after a conversion: its CRF bit (0x80) cleared.
        (first, *_) = [
            e
            for e in events
            if e["msgs"][-1]["data"] == b"\xc8\x90" and e["msgs"][0]["data"] == b"\x01"
        ]
        first["msgs"][-1]["data"] = b"\xc8\x10"

    result = replay(damaged(imported, tmp_path, conversion_never_ready))
    assert result.returncode == 1, result.stdout + result.stderr
    # The driver got the changed byte: no conversion, so no RESULT read (and ETIMEDOUT).
    # Replay is exact: the first thing it did instead, reading CONFIGURATION once more,
    # is the divergence (the repeated-read tolerance, now opt-in, used to let it pass).
    assert "TimeoutError: [Errno 110]" in result.stdout
    assert re.search(
        r"DIVERGED .*test_illuminance\.rtrace: diverged at event \d+ .*: "
        r"got: read CONFIGURATION\(0x01\); expected: read RESULT\(0x00\)",
        result.stdout,
    ), result.stdout
