"""Make capture-100k.sr and capture-400k.sr here: a board's I2C bus as a logic analyzer at
100 MHz would have sampled it, with the traffic of the suite's tmp102 test_temperature[25].

    .venv/bin/python tests/unit/data/sigrok/make_captures.py   (needs sigrok-cli)

The TMP102 sits at 0x48, as on a board (its address pins to GND), and does what its golden
trace, traces/tmp102/test_temperature-25.rtrace, holds, at the trace's times; an EEPROM at 0x50 is
read between its transfers, as other devices on a board's bus are. The bus is drawn by
tests/unit/i2c_wire.py, not by roadtest's exporter: its controller's SCL has a duty cycle
and jitter of its own (100 kHz: 5.2 us low, 4.6 us high; 400 kHz: 1.4 and 0.95 us), the
TMP102 stretches the clock of the first byte it sends, and both lines carry glitches of
20 to 40 ns (shorter than UM10204's 50 ns tSP) at random places, among them on SDA while
SCL is high and on SCL, where a device without its input filter would see a START, a
STOP or an extra clock. The dump is turned into a sigrok session file by sigrok-cli itself
(`sigrok-cli -I vcd -i capture.vcd -o capture.sr`), at 10 ns a sample.
"""

from __future__ import annotations

import random
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent))  # tests/unit, for i2c_wire

from i2c_wire import Wire, fast_mode, standard_mode  # noqa: E402

from roadtest.checkout import repo_root  # noqa: E402
from roadtest.trace.format import load_trace  # noqa: E402

GOLDEN = "traces/tmp102/test_temperature-25.rtrace"
TMP102, EEPROM = 0x48, 0x50
M_RD = 2


def draw(wire: Wire, seed: int) -> None:
    _, events = load_trace(repo_root() / GOLDEN)
    transfers = [e for e in events if e["kind"] == "i2c"]
    origin = transfers[0]["sim"]
    for index, event in enumerate(transfers):
        wire.t = max(wire.t, 20_000 + event["sim"] - origin)
        msgs = [(bool(m["flags"] & M_RD), m["data"], True) for m in event["msgs"]]
        wire.start()
        for position, (read, data, _) in enumerate(msgs):
            if position:
                wire.restart()
            wire.byte(TMP102 << 1 | read)
            for at, value in enumerate(data):
                stretch = 30_000 if read and at == 0 else 0  # the TMP102 holds SCL low
                wire.byte(value, ack=not (read and at == len(data) - 1), stretch_ns=stretch)
        wire.stop()
        if index % 2 == 0:
            wire.idle(20_000)
            # Another device's transfer: an EEPROM read of 4 bytes from offset `index`.
            wire.transfer(
                EEPROM, [(False, bytes([index]), True), (True, b"\xde\xad\xbe\xef", True)]
            )
    rng = random.Random(seed)
    scl_edges = [when for when, line, _ in wire.changes if line == 0]
    for a, b in zip(scl_edges, scl_edges[1:], strict=False):
        if rng.random() < 0.3:
            line = rng.randrange(2)
            wire.glitch(line, rng.randrange(a + 60, b - 60), rng.choice((20, 30, 40)))


def make(name: str, wire: Wire, seed: int) -> None:
    draw(wire, seed)
    with tempfile.TemporaryDirectory() as tmp:
        dump = Path(tmp) / "capture.vcd"
        wire.write_vcd(dump, names=("D0", "D1"), unit_ns=10)
        out = HERE / name
        out.unlink(missing_ok=True)
        subprocess.run(["sigrok-cli", "-I", "vcd", "-i", str(dump), "-o", str(out)], check=True)
    print(f"{out}: {out.stat().st_size} bytes")


if __name__ == "__main__":
    make("capture-100k.sr", standard_mode(seed=100), seed=100)
    make("capture-400k.sr", fast_mode(seed=400), seed=400)
