"""Peak memory of replaying one big golden trace, against reading it whole.

Writes an ~18 MB trace (TRANSFERS register reads of random data, so
that it compresses about as badly as a long real capture), then measures, each
in a fresh process, the peak RSS of:

- reading every event into a list (`load_trace`: how replay held golden traces
  before it streamed them);
- the replay hooks and player playing the whole trace (the driver's side reads
  the same trace as a stream, as a guest's driver would not hold it either);
- `roadtest trace show` of it, to /dev/null (the streaming reader alone).

Prints each figure and the ratio of the first to the second.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from roadtest.trace.format import Header, TraceWriter

TRANSFERS = 850_000  # about 18 MB, the size of the trace in the issue
ORIGIN = "test_big.DEV"
TEST = "tests/drivers/regulator/test_tps62864.py::test_big"

_LOAD = """
import sys
from roadtest.trace.format import load_trace
header, events = load_trace(sys.argv[1])
print(len(events))
"""

_REPLAY = """
import sys
from pathlib import Path
from roadtest.backend.i2c import I2CBus
from roadtest.backend.i2c_transfer import I2CMessage, Transfer
from roadtest.models.base import I2CModel
from roadtest.trace.format import read_trace
from roadtest.trace.names import TracedDevice
from roadtest.replayer.player import ReplayHooks

path = Path(sys.argv[1])
header, events = read_trace(path)
hooks = ReplayHooks(path.parent)
device = TracedDevice(header.compatible, 0x48, header.extra["device"])
bus = I2CBus()
bus.attach(0x48, *hooks.attached(header.test, device, I2CModel(), {}))
for event in events:
    if event["kind"] != "i2c":
        continue
    msgs = [
        I2CMessage(m["flags"], m["len"], b"" if m["flags"] & 2 else m["data"])
        for m in event["msgs"]
    ]
    bus.serve(Transfer(0x48, msgs))
assert hooks.detached(device) == [], hooks.outcomes
print(hooks.outcomes[0].transfers)
"""


def make_trace(path: Path) -> None:
    rnd = random.Random(18)
    header = Header(
        kernel="6.12.57",
        test=TEST,
        address=0x48,
        compatible="ti,tps62864",
        model="",  # no model: the player answers alone
        regbytes=1,
        extra={"device": ORIGIN},
    )
    with TraceWriter(path, header, flush_every=64, validate=False) as writer:
        writer.event("marker", what="bind", detail=None)
        for _ in range(TRANSFERS):
            reg = rnd.randrange(256)
            data = rnd.randbytes(8)
            writer.event(
                "i2c",
                msgs=[
                    {"flags": 1, "len": 1, "data": bytes([reg]), "status": 0},
                    {"flags": 2, "len": len(data), "data": data, "status": 0},
                ],
            )


def peak_rss_mb(args: list[str]) -> tuple[float, float]:
    """Peak RSS (MB; ru_maxrss is in KiB on Linux) and wall time of a child process."""
    start = time.monotonic()
    child = subprocess.Popen(args, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(child.pid, 0)
    assert status == 0, args
    return usage.ru_maxrss / 1024, time.monotonic() - start


def main() -> None:
    python = sys.executable
    roadtest = str(Path(python).with_name("roadtest"))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "tps62864" / "test_big.rtrace"
        path.parent.mkdir()
        make_trace(path)
        size = path.stat().st_size / 1e6
        print(f"a trace of {TRANSFERS} transfers, {size:.1f} MB")
        whole, t_whole = peak_rss_mb([python, "-c", _LOAD, str(path)])
        played, t_played = peak_rss_mb([python, "-c", _REPLAY, str(path)])
        shown, t_shown = peak_rss_mb([roadtest, "trace", "show", str(path)])
        print(f"read whole (replay before it streamed): {whole:6.0f} MB peak RSS ({t_whole:.1f} s)")
        print(
            f"replayed, streaming:                    {played:6.0f} MB peak RSS ({t_played:.1f} s)"
        )
        print(f"trace show:                             {shown:6.0f} MB peak RSS ({t_shown:.1f} s)")
        print(f"replay's peak RSS, whole / streaming: {whole / played:.1f}x")


if __name__ == "__main__":
    main()
