"""The round trip through a tool no one here wrote: every golden trace of traces/ with I2C
transfers, exported to a value change dump (`roadtest trace export --vcd`), decoded by
sigrok-cli's I2C decoder and imported back (`roadtest import sigrok`), is its original
transfer for transfer: the same messages, flags, bytes and statuses, in order (timing
aside: the capture's time is the dump's), as far as a bus shows them (a transfer cut
short by a NACK ends there).

It needs sigrok-cli, which `make setup` installs: without it this fails, it does not skip.
All the traces, not a sample: on two cores the exports and imports run side by side, since
most of an import's time is sigrok-cli's process (about 5 s of CPU for the 137 traces at
the time of writing, docs/design.md).
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from roadtest.checkout import repo_root
from roadtest.recorder.sigrok import import_sigrok
from roadtest.trace.format import load_trace
from roadtest.trace.i2c import VIRTIO_I2C_FLAGS_FAIL_NEXT, VIRTIO_I2C_MSG_OK
from roadtest.trace.waves import export_vcd

TRACES = sorted((repo_root() / "traces").rglob("*.rtrace"))


def _i2c(events: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    return [e["msgs"] for e in events if e["kind"] == "i2c"]


def _on_the_wire(msgs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What of a transfer a bus shows: after a message the target NACKs, the controller
    sends STOP (UM10204 3.1.6), so the messages after it never reach the wire; and
    FAIL_NEXT says only that another message followed (virtio-i2c), so the last one seen
    cannot carry it."""
    seen: list[dict[str, Any]] = []
    for msg in msgs:
        seen.append(msg)
        if msg["status"] != VIRTIO_I2C_MSG_OK:
            break
    if len(seen) < len(msgs):
        seen[-1] = {**seen[-1], "flags": seen[-1]["flags"] & ~VIRTIO_I2C_FLAGS_FAIL_NEXT}
    return seen


def _round_trip(path: Path, tmp: Path) -> str | None:
    """None when the trace comes back whole, else what differs."""
    header, events = load_trace(path)
    want = [_on_the_wire(msgs) for msgs in _i2c(events)]
    if header.bus != "i2c" or not want:
        return None
    name = f"{path.parent.name}-{path.stem}"
    dump = tmp / f"{name}.vcd"
    export_vcd(path, dump)
    back = tmp / f"{name}.rtrace"
    import_sigrok(dump, back, compatible=header.compatible, test=header.test, addr=header.address)
    got = _i2c(load_trace(back)[1])
    if got == want:
        return None
    at = next((i for i, (a, b) in enumerate(zip(want, got, strict=False)) if a != b), None)
    where = f"transfer {at}: {want[at]} came back as {got[at]}" if at is not None else ""
    return f"{path}: {len(want)} transfers, {len(got)} came back; {where}"


def test_every_golden_i2c_trace_survives_export_sigrok_and_import(tmp_path: Path) -> None:
    assert len(TRACES) > 100  # the suite's, not an empty directory
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        results = list(pool.map(lambda p: _round_trip(p, tmp_path), TRACES))
    differing = [r for r in results if r is not None]
    assert not differing, "\n".join(differing)
    checked = sum(1 for p in TRACES if load_trace(p)[0].bus == "i2c")
    assert checked > 100
