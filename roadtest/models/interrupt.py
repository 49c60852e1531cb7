"""A chip's interrupt (or alert) output pin, and the wire it drives.

An output has a polarity (the level that means "asserted") and a drive:

- push-pull drives both levels: asserted is the active level, deasserted the other;
- open-drain only pulls low or lets go, and the board's pull resistor sets the
  level of a wire nothing pulls. An active-low open-drain output pulls while
  asserted; an active-high one pulls while deasserted and lets go to assert.

Several open-drain outputs can share one wire (wired-OR of active-low
interrupts, as on real boards): the wire is low while any of them pulls. A
`Wire` resolves what every output on it does into the one level its GPIO line
carries, and drives the line only when that level changes, so a trace records
each edge once. Two outputs driving opposite levels is a short circuit: a
model error.

A model with one interrupt output mixes in `InterruptPin` (below).
"""

from __future__ import annotations

import enum
import threading
from typing import Literal

from roadtest.models.base import Line, ModelError


class Polarity(enum.Enum):
    ACTIVE_LOW = False  # the value is the active level
    ACTIVE_HIGH = True


class Drive(enum.Enum):
    PUSH_PULL = "push-pull"
    OPEN_DRAIN = "open-drain"


Trigger = Literal["level", "edge"]

# What an output does to its wire: drive it high or low, or let it go.
PinState = Literal["high", "low", "released"]


class InterruptOutput:
    """One output pin: `asserted` is the chip's logic; `state` what the pin does
    electrically. Polarity and drive may change at run time (a chip's configuration
    register can set them); the wire follows at once."""

    def __init__(self, polarity: Polarity, drive: Drive) -> None:
        self._polarity = polarity
        self._drive = drive
        self._asserted = False
        self.wire: Wire | None = None

    @property
    def polarity(self) -> Polarity:
        return self._polarity

    @polarity.setter
    def polarity(self, polarity: Polarity) -> None:
        self._polarity = polarity
        self._changed()

    @property
    def drive(self) -> Drive:
        return self._drive

    @drive.setter
    def drive(self, drive: Drive) -> None:
        self._drive = drive
        self._changed()

    @property
    def asserted(self) -> bool:
        return self._asserted

    def set(self, asserted: bool) -> None:
        """Assert or deassert the interrupt."""
        asserted = bool(asserted)
        if asserted is self._asserted:
            return  # models call this on every register access: keep it cheap
        self._asserted = asserted
        self._changed()

    @property
    def state(self) -> PinState:
        level = self._asserted == self._polarity.value  # the level the logic asks for
        if self._drive is Drive.OPEN_DRAIN and level:
            return "released"
        return "high" if level else "low"

    def irq_type(self, trigger: Trigger) -> str:
        """The devicetree's interrupt type that sees this output's assertions, as its
        macro (include/dt-bindings/interrupt-controller/irq.h) for a fragment's
        `interrupts` property: a level trigger on the active level, an edge trigger on
        the edge into it."""
        if trigger == "level":
            return "IRQ_TYPE_LEVEL_HIGH" if self._polarity.value else "IRQ_TYPE_LEVEL_LOW"
        return "IRQ_TYPE_EDGE_RISING" if self._polarity.value else "IRQ_TYPE_EDGE_FALLING"

    def _changed(self) -> None:
        if self.wire is not None:
            self.wire.update()


class Wire:
    """A board's net: the outputs on it, its pull resistor, and the GPIO line it reaches.

    `pull_up` says where the wire rests when no output drives it (the usual pull-up
    of an open-drain interrupt line, or a pull-down). The line is driven as soon as
    there is one (before a driver requests a level interrupt, which an idle line at
    the wrong level would fire), then only on changes.
    """

    def __init__(self, line: Line | None = None, pull_up: bool = True) -> None:
        self.pull_up = pull_up
        self.outputs: list[InterruptOutput] = []
        self._line: Line | None = None
        self._driven: bool | None = None  # the level last driven onto the line
        # Outputs change from the backend's thread (a register access) and the test's.
        # Taken before the line's own lock (the GPIO device's).
        self._lock = threading.RLock()
        self.line = line

    @property
    def line(self) -> Line | None:
        return self._line

    @line.setter
    def line(self, line: Line | None) -> None:
        with self._lock:
            self._line = line
            self._driven = None
            self.update()

    def connect(self, output: InterruptOutput) -> None:
        with self._lock:
            if output.wire is not None:
                output.wire.disconnect(output)
            self.outputs.append(output)
            output.wire = self
            self.update()

    def disconnect(self, output: InterruptOutput) -> None:
        with self._lock:
            self.outputs.remove(output)
            output.wire = None
            self.update()

    @property
    def level(self) -> bool:
        """The wire's level: what a driving output says, else the pull's."""
        states = {state for output in self.outputs if (state := output.state) != "released"}
        if len(states) > 1:
            raise ModelError(
                "short circuit: one output drives the wire high while another drives it low"
            )
        if states:
            return states == {"high"}
        return self.pull_up

    def update(self) -> None:
        with self._lock:
            level = self.level
            if self._line is not None and level != self._driven:
                self._driven = level
                self._line.set(level)


class InterruptPin:
    """A model's one interrupt output. The harness sets the model's `irq` to the device's
    GPIO line, which puts the output on a wire of its own to that line, pulled up; a test
    can connect `int_output` to a `Wire` that several models share instead. A subclass
    picks the pin's polarity and drive (`int_polarity`, `int_drive`: the datasheet's;
    a configuration register changes them at run time through `int_output`), says when
    the interrupt is asserted (`int_asserted`) and calls `update_int()` wherever that
    may change."""

    int_polarity: Polarity
    int_drive: Drive
    _int_output: InterruptOutput | None = None
    _irq: Line | None = None

    @property
    def int_output(self) -> InterruptOutput:
        if self._int_output is None:
            self._int_output = InterruptOutput(self.int_polarity, self.int_drive)
            self._int_output.set(self.int_asserted)
        return self._int_output

    @property
    def irq(self) -> Line | None:
        return self._irq

    @irq.setter
    def irq(self, line: Line | None) -> None:
        output = self.int_output
        if output.wire is not None:
            output.wire.disconnect(output)
        self._irq = line
        if line is not None:
            wire = Wire()
            wire.connect(output)
            wire.line = line  # connected first: the line's first level is already right

    @property
    def int_asserted(self) -> bool:
        raise NotImplementedError

    def update_int(self) -> None:
        output = self._int_output
        (output if output is not None else self.int_output).set(self.int_asserted)
