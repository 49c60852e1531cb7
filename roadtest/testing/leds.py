"""The LED class's userspace ABI (Documentation/ABI/testing/sysfs-class-led*), in the guest.

An LED is a directory `/sys/class/leds/<name>`, and under the device that registered it,
`<device>/leds/<name>`: `brightness` (0 .. `max_brightness`; writing 0 also removes the
trigger), `max_brightness`, `trigger` (every trigger's name, the current one in
brackets; writing a name selects it), and the current trigger's own attributes beside
them: the timer trigger's `delay_on` / `delay_off` in milliseconds
(Documentation/leds/leds-class.rst, drivers/leds/trigger/ledtrig-timer.c), the pattern
trigger's `pattern` and `repeat` (sysfs-class-led-trigger-pattern). Names are
"devicename:color:function" (leds-class.rst, "LED Device Naming").

Every read and write goes through the agent, as `cat` and `echo` would; a refused write
comes back as OSError with the guest's errno.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from roadtest.testing.guestpath import GuestPath

NO_TRIGGER = "none"


def parse_triggers(text: str) -> tuple[list[str], str]:
    """The `trigger` attribute's contents: every trigger's name, and the current one (the
    one in brackets; "none" when no trigger is set)."""
    names: list[str] = []
    current: str | None = None
    for word in text.split():
        if word.startswith("[") and word.endswith("]"):
            word = word[1:-1]
            if current is not None:
                raise ValueError(f"two current triggers in {text!r}")
            current = word
        names.append(word)
    if current is None:
        raise ValueError(f"no current trigger (in brackets) in {text!r}")
    return names, current


@dataclass(frozen=True)
class LEDName:
    """An LED class device's name split as leds-class.rst's "devicename:color:function"
    (older drivers' names may have fewer parts: the missing ones are empty)."""

    devicename: str
    color: str
    function: str

    @classmethod
    def parse(cls, name: str) -> LEDName:
        parts = name.split(":", 2)
        parts += [""] * (3 - len(parts))
        return cls(parts[0], parts[1], parts[2])


def format_pattern(steps: Sequence[tuple[int, int]]) -> str:
    """The pattern trigger's `pattern`: "brightness duration" pairs (ms), space separated."""
    if not steps:
        raise ValueError("a pattern has at least one step")
    for brightness, duration in steps:
        if brightness < 0 or duration < 0:
            raise ValueError(f"pattern step ({brightness}, {duration}) is negative")
    return " ".join(f"{brightness} {duration}" for brightness, duration in steps)


def parse_pattern(text: str) -> list[tuple[int, int]]:
    values = [int(word) for word in text.split()]
    if len(values) % 2:
        raise ValueError(f"a pattern is brightness/duration pairs, not {text!r}")
    return list(zip(values[::2], values[1::2], strict=True))


class LED:
    """One LED class device, at its sysfs directory."""

    def __init__(self, path: GuestPath) -> None:
        self.path = path

    def __repr__(self) -> str:
        return f"LED({self.path.path!r})"

    @property
    def name(self) -> str:
        return self.path.name

    @property
    def parsed_name(self) -> LEDName:
        return LEDName.parse(self.name)

    def _read(self, attribute: str) -> str:
        return (self.path / attribute).read_text().rstrip("\n")

    def _write(self, attribute: str, value: str) -> None:
        (self.path / attribute).write_text(value)

    # sysfs-class-led

    @property
    def brightness(self) -> int:
        return int(self._read("brightness"))

    @brightness.setter
    def brightness(self, value: int) -> None:
        self._write("brightness", str(value))

    @property
    def max_brightness(self) -> int:
        return int(self._read("max_brightness"))

    @property
    def triggers(self) -> list[str]:
        """Every trigger this LED can take ("none" among them)."""
        return parse_triggers(self._read("trigger"))[0]

    @property
    def trigger(self) -> str:
        """The current trigger's name, "none" when there is none."""
        return parse_triggers(self._read("trigger"))[1]

    @trigger.setter
    def trigger(self, name: str) -> None:
        self._write("trigger", name)

    # The timer trigger

    @property
    def delay_on(self) -> int:
        """The timer trigger's time on, ms (the driver may have changed what was written)."""
        return int(self._read("delay_on"))

    @delay_on.setter
    def delay_on(self, ms: int) -> None:
        self._write("delay_on", str(ms))

    @property
    def delay_off(self) -> int:
        return int(self._read("delay_off"))

    @delay_off.setter
    def delay_off(self, ms: int) -> None:
        self._write("delay_off", str(ms))

    def blink(self, delay_on: int | None = None, delay_off: int | None = None) -> tuple[int, int]:
        """Select the timer trigger (if it is not the current one), write `delay_on` and
        then `delay_off` where given, and return (delay_on, delay_off) as read back: what
        the driver settled on (a hardware blink may round them)."""
        if self.trigger != "timer":
            self.trigger = "timer"
        if delay_on is not None:
            self.delay_on = delay_on
        if delay_off is not None:
            self.delay_off = delay_off
        return self.delay_on, self.delay_off

    # The pattern trigger

    def set_pattern(self, steps: Sequence[tuple[int, int]], repeat: int = -1) -> None:
        """Select the pattern trigger and run `steps` ((brightness, ms) pairs) `repeat`
        times (-1: for ever). `repeat` is written first: writing `pattern` starts it."""
        if self.trigger != "pattern":
            self.trigger = "pattern"
        self._write("repeat", str(repeat))
        self._write("pattern", format_pattern(steps))

    @property
    def pattern(self) -> list[tuple[int, int]]:
        return parse_pattern(self._read("pattern"))


def device_leds(device: GuestPath) -> dict[str, LED]:
    """The LEDs a bound device registered ({name: LED}), from `<device>/leds/`."""
    leds = device / "leds"
    if not leds.exists():
        return {}
    return {path.name: LED(path) for path in leds.iterdir()}


def device_led(device: GuestPath, name: str | None = None) -> LED:
    """One LED of a bound device: the one named, or its only one."""
    found = device_leds(device)
    if name is None:
        if len(found) != 1:
            raise LookupError(f"expected one LED under {device}, found {sorted(found)}")
        return next(iter(found.values()))
    try:
        return found[name]
    except KeyError:
        raise LookupError(f"no LED {name!r} under {device}; it has {sorted(found)}") from None
