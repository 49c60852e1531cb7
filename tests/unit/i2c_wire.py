"""An I2C bus drawn by hand, for the tests of `roadtest import sigrok` and its captures.

Written from the I2C-bus specification (NXP UM10204 Rev. 7, 3.1.4 to 3.1.10 and Table 10)
apart from roadtest's own exporter, so that the importer is tested against a second drawing
of the bus: a controller whose SCL has its own duty cycle and jitter, a target that holds
SCL low to stretch a clock, data that changes some hundred ns after SCL fell, and glitches
placed where they hurt (on SDA while SCL is high, where an edge is a START or a STOP, and on
SCL, where one is a clock). The dump it writes is plain VCD text.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Wire:
    """SCL (line 0) and SDA (line 1) of one bus, as changes (ns, line, level)."""

    low_ns: int  # SCL low, per clock
    high_ns: int  # SCL high, per clock
    data_delay_ns: int = 300  # SDA changes this long after SCL fell
    jitter_ns: int = 0  # each SCL phase is up to this much longer
    seed: int = 1
    t: int = 10_000
    changes: list[tuple[int, int, int]] = field(default_factory=list)
    levels: list[int] = field(default_factory=lambda: [1, 1])

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)

    def set(self, line: int, value: int, at: int | None = None) -> None:
        when = self.t if at is None else at
        if self.levels[line] != value:
            self.levels[line] = value
            self.changes.append((when, line, value))

    def _phase(self, ns: int) -> int:
        return ns + (self.rng.randrange(self.jitter_ns + 1) if self.jitter_ns else 0)

    def idle(self, ns: int) -> None:
        self.t += ns

    def start(self) -> None:
        """From an idle bus: SDA falls while SCL is high, then SCL falls (tHD;STA)."""
        self.set(1, 0)
        self.t += self._phase(self.high_ns)
        self.set(0, 0)

    def clock(self, bit: int, stretch_ns: int = 0) -> None:
        """One bit: SDA set while SCL is low, SCL high, SCL low again."""
        self.set(1, bit, self.t + self.data_delay_ns)
        self.t += self._phase(self.low_ns) + stretch_ns
        self.set(0, 1)
        self.t += self._phase(self.high_ns)
        self.set(0, 0)

    def byte(self, value: int, ack: bool = True, stretch_ns: int = 0) -> None:
        for shift in range(7, -1, -1):
            self.clock(value >> shift & 1, stretch_ns if shift == 7 else 0)
        self.clock(0 if ack else 1)

    def restart(self) -> None:
        self.set(1, 1, self.t + self.data_delay_ns)
        self.t += self._phase(self.low_ns)
        self.set(0, 1)
        self.t += self._phase(self.low_ns)  # tSU;STA: 4.7 us in Standard-mode, above tHIGH
        self.set(1, 0)
        self.t += self._phase(self.high_ns)
        self.set(0, 0)

    def stop(self) -> None:
        self.set(1, 0, self.t + self.data_delay_ns)
        self.t += self._phase(self.low_ns)
        self.set(0, 1)
        self.t += self._phase(self.high_ns)
        self.set(1, 1)
        self.t += self._phase(self.low_ns)  # tBUF

    def transfer(self, addr: int, msgs: list[tuple[bool, bytes, bool]]) -> None:
        """START, each message (read?, its bytes, its address ACKed?), STOP; a master
        receiver NACKs the last byte it reads."""
        self.start()
        for index, (read, data, acked) in enumerate(msgs):
            if index:
                self.restart()
            self.byte(addr << 1 | read, ack=acked)
            if not acked:
                break
            for at, value in enumerate(data):
                self.byte(value, ack=not (read and at == len(data) - 1))
        self.stop()

    def glitch(self, line: int, at: int, width_ns: int) -> None:
        """A pulse of the other level on `line` from `at`, for `width_ns`."""
        self.changes.append((at, line, -1))
        self.changes.append((at + width_ns, line, -2))

    def write_vcd(
        self, path: Path, names: tuple[str, str] = ("SCL", "SDA"), unit_ns: int = 1
    ) -> None:
        """The dump: `unit_ns` a time unit (1, 10 or 100), the names of SCL and SDA."""
        unit = {1: "1 ns", 10: "10 ns", 100: "100 ns"}[unit_ns]
        lines = [
            f"$timescale {unit} $end",
            "$scope module bus $end",
            f"$var wire 1 ! {names[0]} $end",
            f'$var wire 1 " {names[1]} $end',
            "$upscope $end",
            "$enddefinitions $end",
            "#0",
            "1!",
            '1"',
        ]
        level = [1, 1]
        # Glitches are changes of (-1: away from, -2: back to) the level the line has then.
        edges: list[tuple[int, int, int]] = []
        ordered = sorted(self.changes, key=lambda c: (c[0], c[2] < 0))
        for when, line, value in ordered:
            if value == -1:
                edges.append((when, line, 1 - level[line]))
            elif value == -2:
                edges.append((when, line, level[line]))
            else:
                level[line] = value
                edges.append((when, line, value))
        now = -1
        for when, line, value in sorted(edges, key=lambda c: c[0]):
            stamp = when // unit_ns
            if stamp != now:
                lines.append(f"#{stamp}")
                now = stamp
            lines.append(f"{value}{'!' if line == 0 else chr(34)}")
        lines.append(f"#{(self.t + 20_000) // unit_ns}")
        path.write_text("\n".join(lines) + "\n", encoding="ascii")


def standard_mode(jitter_ns: int = 150, seed: int = 1) -> Wire:
    """A 100 kHz bus: SCL low 5.2 us, high 4.6 us (UM10204: at least 4.7 and 4.0), jitter."""
    return Wire(low_ns=5200, high_ns=4600, jitter_ns=jitter_ns, seed=seed)


def fast_mode(jitter_ns: int = 60, seed: int = 1) -> Wire:
    """A 400 kHz bus: SCL low 1.4 us, high 0.95 us (at least 1.3 and 0.6), SDA 200 ns after."""
    return Wire(low_ns=1400, high_ns=950, data_delay_ns=200, jitter_ns=jitter_ns, seed=seed)
