"""The test API's guest time and kernel-log helpers, as a driver test uses them."""

from __future__ import annotations

import pytest
from scaffold import opt3001_sensor

from roadtest.testing import NotNotified, RoadtestSession

SENSOR = opt3001_sensor()


def uptime(guest: RoadtestSession) -> float:
    return float(guest.agent.read_file("/proc/uptime").split()[0])


def test_sleep_lets_guest_time_pass(guest: RoadtestSession) -> None:
    before = uptime(guest)
    guest.sleep(45)
    assert uptime(guest) - before >= 45


def test_kernel_log_has_what_the_driver_printed(guest: RoadtestSession) -> None:
    with guest.bound(SENSOR):
        pass
    found = guest.assert_kernel_log(r"opt3001 \S+: Found TI OPT3001")
    assert found.group(0).startswith("opt3001 ")
    assert any("Found TI OPT3001" in line for line in guest.kernel_log())


def test_kernel_log_starts_with_the_test(guest: RoadtestSession) -> None:
    # The test before this one bound the sensor: its probe line is not this test's.
    assert not any("Found TI OPT3001" in line for line in guest.kernel_log())
    assert not any("] roadtest: " in line for line in guest.kernel_log())  # no markers


def test_a_kernel_line_that_never_comes_fails_with_what_came(guest: RoadtestSession) -> None:
    guest.agent.kmsg("something else happened")
    with pytest.raises(AssertionError) as failure:
        guest.assert_kernel_log("no such line", timeout=0.2)
    assert "no kernel line matches 'no such line' since the test began" in str(failure.value)
    assert "something else happened" in str(failure.value)


def test_a_notification_that_never_comes_fails_with_the_path(guest: RoadtestSession) -> None:
    with guest.bound(SENSOR) as dev:
        name = dev.path.only("iio:device*") / "name"  # an attribute no one notifies
        with name.watch() as watch:
            assert watch.value == "opt3001"
            with pytest.raises(NotNotified) as failure:
                watch.wait(timeout=0.5)
    assert str(failure.value) == (
        f"no sysfs_notify on {name} within 0.5 s (host time); it still reads 'opt3001'"
    )
