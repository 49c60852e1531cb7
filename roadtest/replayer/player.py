"""The trace player: answers a device's transfers from its golden trace.

Each transfer the driver makes must be the trace's next one, message by
message (direction, length, bytes written). A match gets the recorded
response; the first mismatch fails that transfer (the bus NACKs it, so the
driver sees an I/O error), fails the test with a register-level report, and
every later transfer fails too. Transfers the trace expects but the driver
never made fail the test when the device is detached.

The test's own model, when the trace names one, still sees every message
(its answers are dropped): so its state, its write log and the interrupts it
raises follow the test as they did when the trace was recorded, and the
test's assertions hold. The interrupts it raises, and the driver's GPIO
requests, must come in the recorded order. Without a model (a trace imported
from real hardware), the player raises the recorded interrupts itself:
those recorded after transfer k right after the driver's transfer k, those
before any transfer when the device is bound.
"""

from __future__ import annotations

import json
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from roadtest.errors import RoadtestError
from roadtest.models.base import I2CModel, ModelError
from roadtest.recorder.decode import Decoder
from roadtest.recorder.format import Header, load_trace
from roadtest.recorder.recording import FLAG_M_RD, chip_name, trace_name

if TYPE_CHECKING:
    from roadtest.backend.gpio import GpioLine
    from roadtest.testing.session import BoundDevice

CONTEXT = 5  # events shown before a divergence


@dataclass
class TraceResult:
    """How one trace's replay went, for `roadtest replay`'s summary."""

    path: str
    test: str
    transfers: int
    consumed: int = 0
    failure: str = ""  # one line; empty when the replay matched
    tolerated: int = 0  # repeated reads made once more or once less than recorded

    def to_map(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "test": self.test,
            "transfers": self.transfers,
            "consumed": self.consumed,
            "failure": self.failure,
            "tolerated": self.tolerated,
        }


@dataclass
class _Actual:
    msgs: list[dict[str, Any]] = field(default_factory=list)


class TracePlayer(I2CModel):
    def __init__(
        self,
        path: Path,
        header: Header,
        events: list[dict[str, Any]],
        shadow: I2CModel | None,
        lines: dict[str, GpioLine],
    ) -> None:
        self.path = path
        self.header = header
        self.events = events
        self.shadow = shadow
        # Lines by the device's names for them: numbers depend on which tests a run collects.
        self.lines = dict(lines)
        self.line_names = {line.index: name for name, line in lines.items()}
        self.decoder = Decoder(header)
        self.transfers = [e for e in events if e["kind"] == "i2c"]
        self.expected_gpio = [
            (e["name"], e["op"], e["value"]) for e in events if e["kind"] == "gpio"
        ]
        self.actual_gpio: list[tuple[str, str, int]] = []
        self.expected_irqs = [(e["name"], e["level"]) for e in events if e["kind"] == "irq"]
        self.actual_irqs: list[tuple[str, int]] = []
        self.pos = 0  # index into events: the next one not yet played
        self.consumed = 0  # transfers matched
        self.done = 0  # transfers of the trace behind us: matched, or skipped repeats
        self.tolerated = 0  # repeated reads made once more or once less than recorded
        self._last: dict[str, Any] | None = None  # the last transfer matched
        self._repeat = False  # the current transfer repeats _last
        self.failure = ""  # the full report
        self.summary = ""  # its one-line form
        self._lock = threading.Lock()
        self._actual = _Actual()
        self._expected: dict[str, Any] | None = None

    # Interrupts and the position in the trace

    def _raise_pending(self, until: int | None = None) -> None:
        """Play the events up to the next transfer (or event `until`): re-raise
        interrupts, skip the rest."""
        while self.pos < len(self.events) and (
            self.pos < until if until is not None else self.events[self.pos]["kind"] != "i2c"
        ):
            event = self.events[self.pos]
            self.pos += 1
            if event["kind"] == "irq" and self.shadow is None:
                line = self.lines.get(event["name"])
                if line is not None:
                    line.set(bool(event["level"]))

    def bound(self) -> None:
        with self._lock:
            if self.pos == 0:
                self._raise_pending()

    def observe_gpio(self, line: GpioLine, op: str, value: int, status: int) -> None:
        name = self.line_names.get(line.index, "")
        if op == "input":
            self.actual_irqs.append((name, value))
        else:
            self.actual_gpio.append((name, op, value))

    # The bus side

    def _diverge(self, why: str) -> ModelError:
        if self.failure:
            return ModelError(f"replay of {self.path} stopped at its divergence")
        index = self.pos
        before = self.events[max(0, index - CONTEXT) : index]
        self.summary = (
            f"diverged at event {index} (transfer {self.consumed + 1} of "
            f"{len(self.transfers)}): {why}"
        )
        lines = [f"replay of {self.path}: the driver {self.summary}"]
        if before:
            lines.append("  events before it:")
            lines += [f"    #{e['seq']} {self.decoder.describe(e)}" for e in before]
        self.failure = "\n".join(lines)
        return ModelError(self.failure)

    def _actual_event(self) -> dict[str, Any]:
        msgs = [dict(m) for m in self._actual.msgs]
        for m in msgs[:-1]:
            m["flags"] |= 1
        return {"seq": -1, "t": 0, "kind": "i2c", "msgs": msgs}

    def _check(self, msg: dict[str, Any]) -> dict[str, Any]:
        """Match the driver's next message against the trace; returns the recorded one."""
        if self.failure:
            raise ModelError(f"replay of {self.path} stopped at its divergence")
        actual = self._actual.msgs
        actual.append(msg)
        expected = self._expected
        if expected is not None and _prefix(expected["msgs"], actual):
            return dict(expected["msgs"][len(actual) - 1])
        tolerated = self._repeated_read(actual)
        if tolerated is not None:
            return dict(tolerated["msgs"][len(actual) - 1])
        if expected is None:
            raise self._diverge(
                f"{self.decoder.describe(self._actual_event())}: the trace has no more transfers"
            )
        # Show the whole recorded transfer against what the driver sent so far.
        raise self._diverge(self.decoder.describe_expected_actual(expected, self._actual_event()))

    def _repeated_read(self, actual: list[dict[str, Any]]) -> dict[str, Any] | None:
        """The one tolerance: a register read identical to the previous transfer may be
        made once more or once less than recorded. The kernel reads on its own from
        workqueues (the RTC core after setting the time, for one), racing the test's
        own reads of the same registers; which run wins is not the driver's doing."""
        last = self._last
        if last is None or not _pure_read(last):
            return None
        if not self._repeat and _prefix(last["msgs"], actual):
            self._repeat = True
            self._expected = last
            return last
        if self._expected is None or not _same(self._expected, last):
            return None
        # Recorded repeats the driver did not make: skip them, if what follows matches.
        pos = self.pos
        while pos < len(self.events) and (
            self.events[pos]["kind"] != "i2c" or _same(self.events[pos], last)
        ):
            pos += 1
        if pos < len(self.events) and _prefix(self.events[pos]["msgs"], actual):
            skipped = sum(1 for e in self.events[self.pos : pos] if e["kind"] == "i2c")
            self.tolerated += skipped
            self.done += skipped
            self._raise_pending(until=pos)
            self.pos = pos
            self._expected = self.events[pos]
            return self._expected
        return None

    def start_transfer(self) -> None:
        if self.shadow is not None:
            self.shadow.start_transfer()
        with self._lock:
            self._actual = _Actual()
            self._raise_pending()
            self._expected = self.events[self.pos] if self.pos < len(self.events) else None

    def write(self, data: bytes) -> None:
        with self._lock:
            want = self._check({"flags": 0, "len": len(data), "data": bytes(data), "status": 0})
        if want["status"]:
            raise ModelError(f"replay: the recorded device NACKed this write ({self.path})")
        if self.shadow is not None:
            self.shadow.write(data)

    def read(self, length: int) -> bytes:
        with self._lock:
            want = self._check({"flags": FLAG_M_RD, "len": length, "data": b"", "status": 0})
        if want["status"]:
            raise ModelError(f"replay: the recorded device NACKed this read ({self.path})")
        if self.shadow is not None:
            self.shadow.read(length)  # for its side effects (data-ready bits and the like)
        data: bytes = want["data"]
        return data

    def end_transfer(self) -> None:
        if self.shadow is not None:
            self.shadow.end_transfer()
        with self._lock:
            expected, self._expected = self._expected, None
            repeat, self._repeat = self._repeat, False
            if self.failure or expected is None:
                return
            if len(self._actual.msgs) != len(expected["msgs"]):
                self._diverge(self.decoder.describe_expected_actual(expected, self._actual_event()))
                return
            if repeat:
                self.tolerated += 1
                return
            self._last = expected
            self.pos += 1
            self.consumed += 1
            self.done += 1
            self._raise_pending()

    # The verdict

    def finish(self) -> str:
        with self._lock:
            if self.failure:
                return self.failure
            left = self.transfers[self.done :]
            if self._last is not None and _pure_read(self._last):
                repeats = [e for e in left if _same(e, self._last)]
                if len(repeats) == len(left):
                    self.tolerated += len(left)
                    left = []
            if left:
                nxt = left[0]
                self.summary = (
                    f"the driver stopped after transfer {self.done} of "
                    f"{len(self.transfers)}; next expected: #{nxt['seq']} "
                    f"{self.decoder.describe(nxt)}"
                )
            elif self.actual_gpio != self.expected_gpio:
                self.summary = (
                    "the driver's GPIO requests differ from the trace: "
                    f"expected {self.expected_gpio}, got {self.actual_gpio}"
                )
            elif self.actual_irqs != self.expected_irqs:
                self.summary = (
                    "the interrupt line levels differ from the trace: "
                    f"expected {self.expected_irqs}, got {self.actual_irqs}"
                )
            else:
                return ""
            self.failure = f"replay of {self.path}: {self.summary}"
            return self.failure


def _prefix(recorded: list[dict[str, Any]], actual: list[dict[str, Any]]) -> bool:
    """The driver's messages so far are the recorded ones: direction, length, bytes written."""
    if len(actual) > len(recorded):
        return False
    for want, got in zip(recorded, actual, strict=False):
        if (want["flags"] & FLAG_M_RD) != (got["flags"] & FLAG_M_RD) or want["len"] != got["len"]:
            return False
        if not got["flags"] & FLAG_M_RD and want["data"] != got["data"]:
            return False
    return True


def _pure_read(event: dict[str, Any]) -> bool:
    """A successful register read: at most a register-pointer write, then reads."""
    msgs = event["msgs"]
    reads = [m for m in msgs if m["flags"] & FLAG_M_RD]
    return (
        bool(reads)
        and all(m["status"] == 0 for m in msgs)
        and all(m["flags"] & FLAG_M_RD or m["len"] <= 1 for m in msgs)
    )


def _same(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return bool(a["kind"] == "i2c" and b["kind"] == "i2c" and a["msgs"] == b["msgs"])


class ReplayError(RoadtestError):
    pass


def _golden(golden: Path) -> dict[Path, tuple[Header, list[dict[str, Any]]]]:
    """Every trace under `golden`, read whole up front: bad input is one clear error
    before any test runs, and each trace is read once."""
    paths = sorted(golden.rglob("*.rtrace")) if golden.is_dir() else []
    return {path: load_trace(path) for path in paths}


class ReplayHooks:
    """Session hooks that put a TracePlayer in place of each device that has a golden trace.

    A device's trace is the one of its test and origin; failing that, the test's one
    trace of the device's compatible that names no device (imported without --device).
    """

    def __init__(self, golden: Path, results: Path | None = None) -> None:
        self.golden = golden
        self.loaded = _golden(golden)
        self.traces = {
            (h.test, str(h.extra.get("device", ""))): p for p, (h, _) in self.loaded.items()
        }
        # Traces that name no device (imported without --device): (test id, compatible) -> them.
        self.deviceless: dict[tuple[str, str], list[Path]] = {}
        for path, (header, _) in self.loaded.items():
            if not header.extra.get("device"):
                self.deviceless.setdefault((header.test, header.compatible), []).append(path)
        self._claimed: dict[tuple[str, Path], str] = {}  # (test id, trace) -> the device using it
        self.results = results
        self.players: dict[int, TracePlayer] = {}
        self.outcomes: list[TraceResult] = []

    def attached(self, test_id: str, bound: BoundDevice) -> I2CModel:
        path = self.traces.get((test_id, bound.device.origin)) or self._deviceless(test_id, bound)
        if path is None:
            raise ReplayError(
                f"no golden trace for {test_id} and {bound.device.origin} under {self.golden} "
                f"(expected something like {chip_name(bound.device.compatible)}/"
                f"{trace_name(test_id)}.rtrace): record it with `roadtest record`"
            )
        header, events = self.loaded[path]
        # A trace without a model (imported from hardware) has only the trace to go by.
        shadow = bound.model if header.model else None
        player = TracePlayer(path, header, events, shadow, bound.lines)
        for line in bound.lines.values():
            line.observers.append(player.observe_gpio)
        self.players[id(bound)] = player
        return player

    def _deviceless(self, test_id: str, bound: BoundDevice) -> Path | None:
        """The test's one trace of this compatible that names no device, if there is one."""
        compatible, origin = bound.device.compatible, bound.device.origin
        paths = self.deviceless.get((test_id, compatible), [])
        if len(paths) > 1:
            raise ReplayError(
                f"{len(paths)} golden traces for {test_id} and {compatible} name no device "
                f"({', '.join(map(str, paths))}): import them with --device ORIGIN"
            )
        if not paths:
            return None
        claimed = self._claimed.setdefault((test_id, paths[0]), origin)
        if claimed != origin:
            raise ReplayError(
                f"{paths[0]} names no device, and {test_id} has two {compatible} devices "
                f"({claimed}, {origin}): import it with --device ORIGIN"
            )
        return paths[0]

    def marker(self, bound: BoundDevice, what: str, detail: Any) -> None:
        player = self.players.get(id(bound))
        if player is not None and what == "bind":
            player.bound()

    def detached(self, bound: BoundDevice) -> list[str]:
        player = self.players.pop(id(bound), None)
        if player is None:
            return []
        for line in bound.lines.values():
            if player.observe_gpio in line.observers:
                line.observers.remove(player.observe_gpio)
        failure = player.finish()
        result = TraceResult(
            str(player.path),
            player.header.test,
            len(player.transfers),
            player.consumed,
            player.summary,
            player.tolerated,
        )
        self.outcomes.append(result)
        if self.results is not None:
            self.results.mkdir(parents=True, exist_ok=True)
            out = self.results / f"{os.getpid()}.jsonl"
            with out.open("a") as f:
                f.write(json.dumps(result.to_map()) + "\n")
        return [failure] if failure else []
