"""The IIO event-configuration helper (roadtest.testing.iio.IIOEvents, EventAttribute)
without a guest: attribute names against the kernel's naming (drivers/iio/
industrialio-event.c, iio_device_add_event_sysfs: "%s_%s_%s" of type, direction and info
after the channel's prefix, no direction for IIO_EV_DIR_NONE) and a fake agent's sysfs."""

from __future__ import annotations

from typing import cast

import pytest

from roadtest.guest.client import AgentClient
from roadtest.testing.guestpath import GuestPath
from roadtest.testing.iio import (
    EVENT_INFO_TEXT,
    EventAttribute,
    IIOChanType,
    IIOEvent,
    IIOEventDirection,
    IIOEventMonitor,
    IIOEvents,
    IIOEventType,
    iio_event_code,
)

THRESH = IIOEventType.IIO_EV_TYPE_THRESH
RISING = IIOEventDirection.IIO_EV_DIR_RISING
EITHER = IIOEventDirection.IIO_EV_DIR_EITHER


@pytest.mark.parametrize(
    ("name", "prefix", "event_type", "direction", "info"),
    [
        ("in_proximity_thresh_either_en", "in_proximity", THRESH, EITHER, "en"),
        ("in_intensity_both_thresh_rising_value", "in_intensity_both", THRESH, RISING, "value"),
        (
            "in_voltage0-voltage1_thresh_falling_value",
            "in_voltage0-voltage1",
            THRESH,
            IIOEventDirection.IIO_EV_DIR_FALLING,
            "value",
        ),
        (
            "in_accel_x_thresh_adaptive_rising_hysteresis",
            "in_accel_x",
            IIOEventType.IIO_EV_TYPE_THRESH_ADAPTIVE,
            RISING,
            "hysteresis",
        ),
        (
            "in_accel_mag_referenced_either_reset_timeout",
            "in_accel",
            IIOEventType.IIO_EV_TYPE_MAG_REFERENCED,
            EITHER,
            "reset_timeout",
        ),
        (
            "in_steps_change_value",
            "in_steps",
            IIOEventType.IIO_EV_TYPE_CHANGE,
            IIOEventDirection.IIO_EV_DIR_NONE,
            "value",
        ),
        (
            "in_accel_gesture_doubletap_tap2_min_delay",
            "in_accel",
            IIOEventType.IIO_EV_TYPE_GESTURE,
            IIOEventDirection.IIO_EV_DIR_DOUBLETAP,
            "tap2_min_delay",
        ),
    ],
)
def test_names_round_trip(
    name: str,
    prefix: str,
    event_type: IIOEventType,
    direction: IIOEventDirection,
    info: str,
) -> None:
    attribute = EventAttribute(prefix, event_type, direction, info)
    assert attribute.name == name
    assert EventAttribute.parse(name) == attribute


def test_info_texts_are_the_kernels_in_enum_order() -> None:
    # enum iio_event_info, include/linux/iio/types.h: ENABLE, VALUE, HYSTERESIS, PERIOD,
    # HIGH_PASS_FILTER_3DB, LOW_PASS_FILTER_3DB, TIMEOUT, RESET_TIMEOUT, TAP2_MIN_DELAY,
    # RUNNING_PERIOD, RUNNING_COUNT.
    assert EVENT_INFO_TEXT[0] == "en" and EVENT_INFO_TEXT[3] == "period"
    assert len(EVENT_INFO_TEXT) == 11


@pytest.mark.parametrize(
    "bad", ["in_proximity_raw", "in_proximity_either_en", "proximity_thresh_en"]
)
def test_not_event_attributes(bad: str) -> None:
    with pytest.raises(ValueError):
        EventAttribute.parse(bad)


class FakeSysfs:
    """An agent whose files are a dict."""

    def __init__(self, files: dict[str, str]) -> None:
        self.files = files
        self.writes: list[tuple[str, str]] = []

    def listdir(self, path: str) -> list[str]:
        prefix = path.rstrip("/") + "/"
        return [p[len(prefix) :] for p in self.files if p.startswith(prefix)]

    def read_file(self, path: str) -> bytes:
        return self.files[path].encode()

    def write_file(self, path: str, data: bytes | str) -> None:
        text = data.decode() if isinstance(data, bytes) else data
        self.writes.append((path, text))
        self.files[path] = text + "\n"


DEV = "/sys/bus/iio/devices/iio:device0"


def fake() -> tuple[FakeSysfs, IIOEvents]:
    names = [
        "in_proximity_thresh_either_en",
        "in_proximity_thresh_either_period",
        "in_proximity_thresh_rising_value",
        "in_proximity_thresh_falling_value",
    ]
    agent = FakeSysfs({f"{DEV}/events/{n}": "0\n" for n in names})
    return agent, IIOEvents(GuestPath(cast(AgentClient, agent), DEV))


def test_configuration_writes_the_named_attributes() -> None:
    agent, events = fake()
    events.set_value("in_proximity", RISING, 800)
    events.set_period("in_proximity", 0.25)
    events.enable("in_proximity")
    assert agent.writes == [
        (f"{DEV}/events/in_proximity_thresh_rising_value", "800"),
        (f"{DEV}/events/in_proximity_thresh_either_period", "0.25"),
        (f"{DEV}/events/in_proximity_thresh_either_en", "1"),
    ]
    assert events.enabled("in_proximity")
    assert events.value("in_proximity", RISING) == "800"
    assert events.period("in_proximity") == 0.25
    events.disable("in_proximity")
    assert not events.enabled("in_proximity")
    assert {a.name for a in events.attributes()} == {n.rsplit("/", 1)[1] for n in agent.files}


def test_an_attribute_the_driver_lacks_fails_before_writing() -> None:
    agent, events = fake()
    with pytest.raises(KeyError, match="in_proximity_thresh_rising_en"):
        events.enable("in_proximity", RISING)
    assert agent.writes == []


@pytest.mark.parametrize(
    ("value", "text"), [(5, "5"), (0.5, "0.5"), (2.0, "2.0"), (1e-6, "0.000001"), ("0.1", "0.1")]
)
def test_values_are_written_without_exponents(value: int | float | str, text: str) -> None:
    agent, events = fake()
    events.set_period("in_proximity", value)
    assert agent.writes[-1][1] == text


class FakeMonitor:
    def __init__(self, events: list[IIOEvent]) -> None:
        self.events = events

    def read(self, timeout: float = 0.0) -> IIOEvent:
        if not self.events:
            raise TimeoutError("none")
        return self.events.pop(0)


def test_wait_for_skips_other_events() -> None:
    intensity = IIOEvent(iio_event_code(IIOChanType.IIO_INTENSITY, 0, 0, 0), 1)
    proximity = IIOEvent(iio_event_code(IIOChanType.IIO_PROXIMITY, 0, 0, 0), 2)
    monitor = cast(IIOEventMonitor, FakeMonitor([intensity, proximity]))
    assert IIOEvents.wait_for(monitor, IIOChanType.IIO_PROXIMITY, EITHER) == proximity
    monitor = cast(IIOEventMonitor, FakeMonitor([intensity]))
    with pytest.raises(TimeoutError, match="IIO_INTENSITY"):
        IIOEvents.wait_for(monitor, IIOChanType.IIO_PROXIMITY, timeout=0.01)
