"""`roadtest import sigrok` on sigrok session files of a board's bus: tests/unit/data/sigrok/
capture-100k.sr and capture-400k.sr (made by make_captures.py there), the traffic of the
suite's tmp102 test_temperature[25] at 0x48 and an EEPROM's at 0x50, at real 100 kHz and
400 kHz timing with glitches under 50 ns, sampled at 100 MHz. The TMP102's transfers come
back as its golden trace holds them; `roadtest replay --golden` of the imported trace
passes against the test (docs/design.md: it boots a guest, so it is not run here).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from roadtest.checkout import repo_root
from roadtest.recorder.sigrok import SigrokError, import_sigrok, read_capture
from roadtest.trace.format import load_trace

DATA = Path(__file__).parent / "data" / "sigrok"
TEST = "tests/drivers/hwmon/test_tmp102.py::test_temperature[25]"


@pytest.mark.parametrize("capture", ["capture-100k.sr", "capture-400k.sr"])
def test_a_board_capture_imports_as_the_golden_trace(tmp_path: Path, capture: str) -> None:
    _, golden = load_trace(repo_root() / "traces" / "tmp102" / "test_temperature-25.rtrace")
    found = read_capture(DATA / capture)
    assert sorted((addr, len(events)) for addr, events in found.events.items()) == [
        (0x48, 4),
        (0x50, 2),
    ]
    result = import_sigrok(
        DATA / capture,
        tmp_path,
        compatible="ti,tmp102",
        test=TEST,
        addr=0x48,
        device="test_tmp102.SENSOR",
        model="roadtest.models.tmp102:TMP102",
    )
    assert result.out == tmp_path / "tmp102" / "test_temperature-25.rtrace"
    header, events = load_trace(result.out)
    assert [e["msgs"] for e in events] == [e["msgs"] for e in golden if e["kind"] == "i2c"]
    assert (header.address, header.regbytes, header.byteorder) == (0x48, 2, "big")
    # The EEPROM's reads of 4 bytes from offsets 0 and 2, a register write and a read each.
    assert [[m["data"] for m in e["msgs"]] for e in found.events[0x50]] == [
        [b"\x00", b"\xde\xad\xbe\xef"],
        [b"\x02", b"\xde\xad\xbe\xef"],
    ]


@pytest.mark.parametrize("capture", ["capture-100k.sr", "capture-400k.sr"])
def test_without_the_spike_filter_the_glitches_break_the_decoding(capture: str) -> None:
    with pytest.raises(SigrokError, match="a glitch on the bus"):
        read_capture(DATA / capture, spike_ns=0)


def test_the_captures_are_small() -> None:
    assert all(p.stat().st_size < 16_000 for p in DATA.glob("*.sr"))
