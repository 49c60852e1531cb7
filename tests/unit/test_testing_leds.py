"""roadtest.testing.leds without a guest: the LED class ABI's formats, and what it reads
and writes, against a fake sysfs that behaves as Documentation/ABI/testing/sysfs-class-led
says (brightness 0 removes the trigger; the timer trigger's delay_on/delay_off appear
while it is selected)."""

from __future__ import annotations

import errno
import posixpath
from typing import cast

import pytest

from roadtest.guest.client import AgentClient
from roadtest.testing.guestpath import GuestPath
from roadtest.testing.leds import (
    LED,
    LEDName,
    device_led,
    device_leds,
    format_pattern,
    parse_pattern,
    parse_triggers,
)

DEVICE = "/sys/bus/i2c/devices/0-0062"
TRIGGERS = ["none", "kbd-scrolllock", "timer", "pattern", "default-on"]


class FakeLEDs:
    """The agent's file calls against LEDs under DEVICE/leds; delays halved by the 'driver'
    to show the helper reads back what the kernel kept."""

    def __init__(self, *names: str) -> None:
        self.leds = {name: {"brightness": 0, "trigger": "none"} for name in names}
        self.delays: dict[str, dict[str, int]] = {}
        self.writes: list[tuple[str, str]] = []

    def _split(self, path: str) -> tuple[str, str]:
        led_dir, attribute = posixpath.split(path)
        assert posixpath.dirname(led_dir) == f"{DEVICE}/leds"
        return posixpath.basename(led_dir), attribute

    def exists(self, path: str) -> bool:
        return path == f"{DEVICE}/leds" and bool(self.leds)

    def listdir(self, path: str) -> list[str]:
        assert path == f"{DEVICE}/leds"
        return sorted(self.leds)

    def read_file(self, path: str) -> bytes:
        name, attribute = self._split(path)
        led = self.leds[name]
        if attribute == "max_brightness":
            return b"255\n"
        if attribute == "trigger":
            words = [f"[{t}]" if t == led["trigger"] else t for t in TRIGGERS]
            return (" ".join(words) + "\n").encode()
        if attribute in ("delay_on", "delay_off"):
            if led["trigger"] != "timer":
                raise FileNotFoundError(errno.ENOENT, path)
            return f"{self.delays[name][attribute]}\n".encode()
        return f"{led[attribute]}\n".encode()

    def write_file(self, path: str, data: bytes) -> None:
        name, attribute = self._split(path)
        text = data.decode()
        self.writes.append((attribute, text))
        led = self.leds[name]
        if attribute == "brightness":
            led["brightness"] = int(text)
            if int(text) == 0:
                led["trigger"] = "none"
        elif attribute == "trigger":
            if text not in TRIGGERS:
                raise OSError(errno.EINVAL, "Invalid argument")
            led["trigger"] = text
            if text == "timer":
                self.delays[name] = {"delay_on": 500, "delay_off": 500}
        elif attribute in ("delay_on", "delay_off"):
            self.delays[name][attribute] = int(text) // 2 * 2
        elif attribute in ("pattern", "repeat"):
            led[attribute] = text
        else:
            raise AssertionError(attribute)


def device(fake: FakeLEDs) -> GuestPath:
    return GuestPath(cast(AgentClient, fake), DEVICE)


def test_parse_triggers() -> None:
    names, current = parse_triggers("none kbd-scrolllock [timer] pattern\n")
    assert names == ["none", "kbd-scrolllock", "timer", "pattern"]
    assert current == "timer"
    assert parse_triggers("[none] timer")[1] == "none"
    with pytest.raises(ValueError, match="no current"):
        parse_triggers("none timer")
    with pytest.raises(ValueError, match="two current"):
        parse_triggers("[none] [timer]")


def test_led_names() -> None:
    # leds-class.rst, "LED Device Naming": devicename:color:function.
    assert LEDName.parse("pca963x:red:status") == LEDName("pca963x", "red", "status")
    assert LEDName.parse(":green:indicator-1") == LEDName("", "green", "indicator-1")
    assert LEDName.parse("pca963x:0:62:0") == LEDName("pca963x", "0", "62:0")
    assert LEDName.parse("backlight") == LEDName("backlight", "", "")


def test_patterns() -> None:
    assert format_pattern([(255, 500), (0, 500)]) == "255 500 0 500"
    assert parse_pattern("255 500 0 500\n") == [(255, 500), (0, 500)]
    with pytest.raises(ValueError):
        format_pattern([])
    with pytest.raises(ValueError):
        format_pattern([(-1, 10)])
    with pytest.raises(ValueError):
        parse_pattern("255 500 0")


def test_find_leds_of_a_device() -> None:
    fake = FakeLEDs("pca963x:red", "pca963x:green")
    leds = device_leds(device(fake))
    assert sorted(leds) == ["pca963x:green", "pca963x:red"]
    assert leds["pca963x:red"].path.path == f"{DEVICE}/leds/pca963x:red"
    assert device_led(device(fake), "pca963x:green").name == "pca963x:green"
    with pytest.raises(LookupError, match="expected one LED"):
        device_led(device(fake))
    with pytest.raises(LookupError, match="no LED 'blue'"):
        device_led(device(fake), "blue")
    assert device_leds(device(FakeLEDs())) == {}


def test_brightness_and_trigger() -> None:
    fake = FakeLEDs("a")
    led = device_led(device(fake))
    assert led.max_brightness == 255
    led.brightness = 17
    assert led.brightness == 17
    assert led.trigger == "none"
    assert "timer" in led.triggers
    led.trigger = "default-on"
    assert led.trigger == "default-on"
    led.brightness = 0  # 'writing 0 to this file clears active trigger'
    assert led.trigger == "none"
    with pytest.raises(OSError) as raised:
        led.trigger = "no-such-trigger"
    assert raised.value.errno == errno.EINVAL


def test_blink_selects_the_timer_and_reads_back_what_was_kept() -> None:
    fake = FakeLEDs("a")
    led = LED(device(fake) / "leds" / "a")
    assert led.blink() == (500, 500)  # the trigger's own choice
    assert led.blink(101, 203) == (100, 202)
    assert fake.writes[-2:] == [("delay_on", "101"), ("delay_off", "203")]
    assert [w for w in fake.writes if w[0] == "trigger"] == [("trigger", "timer")]
    led.delay_off = 40
    assert led.delay_off == 40 and led.delay_on == 100


def test_set_pattern_writes_repeat_first() -> None:
    fake = FakeLEDs("a")
    led = device_led(device(fake))
    led.set_pattern([(255, 100), (0, 100)], repeat=3)
    assert fake.writes == [("trigger", "pattern"), ("repeat", "3"), ("pattern", "255 100 0 100")]
    assert led.pattern == [(255, 100), (0, 100)]
