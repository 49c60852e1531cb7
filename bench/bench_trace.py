"""Trace size and write cost: bytes per recorded I2C transfer after compression.

A realistic trace: 1000 transfers of an SMBus driver's register traffic on the
TPS6286x (read CONTROL, write CONTROL, write VOUT1 with stepping values, read
STATUS), each written with TraceWriter as the recorder does, flushed after
every event (the default, crash-safe to the last transfer) and after every 64.
The figures exclude the header (its own block) and count the frame's end.
"""

from __future__ import annotations

import random
import tempfile
import time
from pathlib import Path

import msgpack

from roadtest.models.tps6286x import REG_CONTROL, REG_STATUS, REG_VOUT1
from roadtest.trace.format import Header, TraceWriter, load_trace

TRANSFERS = 1000
GAP_NS = 50_000
FAIL_NEXT, M_RD = 1, 2


def write_msg(*data: int) -> dict[str, object]:
    return {"flags": 0, "len": len(data), "data": bytes(data), "status": 0}


def read_msgs(reg: int, *value: int) -> list[dict[str, object]]:
    return [
        {"flags": FAIL_NEXT, "len": 1, "data": bytes([reg]), "status": 0},
        {"flags": M_RD, "len": len(value), "data": bytes(value), "status": 0},
    ]


def transfers(n: int) -> list[list[dict[str, object]]]:
    rnd = random.Random(6286)
    control, vout, out = 0x6B, 0x64, []
    for i in range(n):
        step = i % 4
        if step == 0:
            out.append(read_msgs(REG_CONTROL, control))
        elif step == 1:
            control = rnd.choice([0x68, 0x78, 0x6B])
            out.append([write_msg(REG_CONTROL, control)])
        elif step == 2:
            vout = (vout + rnd.randint(-8, 8)) & 0xFF
            out.append([write_msg(REG_VOUT1, vout)])
        else:
            out.append(read_msgs(REG_STATUS, 0))
    return out


def header() -> Header:
    return Header(
        kernel="6.12.57",
        test="tests/drivers/regulator/test_tps6286x.py::test_voltage_steps",
        address=0x48,
        compatible="ti,tps62864",
        model="roadtest.models.tps6286x:TPS6286x",
        regbytes=1,
    )


def measure(directory: Path, flush_every: int, work: list[list[dict[str, object]]]) -> None:
    empty, path = directory / "empty.rtrace", directory / f"flush{flush_every}.rtrace"
    with TraceWriter(empty, header()):
        pass
    elapsed = 0.0
    with TraceWriter(path, header(), flush_every=flush_every) as writer:
        for msgs in work:
            # Transfers come some 50 us apart in a real run: the timestamps' low bytes vary.
            until = time.monotonic_ns() + GAP_NS
            while time.monotonic_ns() < until:
                pass
            start = time.perf_counter()
            writer.event("i2c", msgs=msgs)
            elapsed += time.perf_counter() - start
    size = path.stat().st_size - empty.stat().st_size
    start = time.perf_counter()
    _, events = load_trace(path)
    read = time.perf_counter() - start
    print(
        f"flush every {flush_every:>2} events: {size / len(work):5.1f} bytes/transfer "
        f"({size} bytes for {len(work)}), write {elapsed / len(work) * 1e6:4.1f} us/transfer, "
        f"read {read / len(events) * 1e6:4.1f} us/transfer"
    )


def main() -> None:
    work = transfers(TRANSFERS)
    raw = sum(
        len(msgpack.packb({"seq": i, "t": time.monotonic_ns(), "kind": "i2c", "msgs": m}))
        for i, m in enumerate(work)
    )
    print(f"{TRANSFERS} SMBus register transfers; msgpack alone: {raw / TRANSFERS:.1f} bytes each")
    with tempfile.TemporaryDirectory() as tmp:
        for flush_every in (1, 64):
            measure(Path(tmp), flush_every, work)


if __name__ == "__main__":
    main()
