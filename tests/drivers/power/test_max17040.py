"""MAX17048/MAX17049 fuel gauges (drivers/power/supply/max17040_battery.c), through
/sys/class/power_supply, against the MAX17048/MAX17049 datasheet (19-6171 Rev 7).

From the datasheet: VCELL is 78.125 uV a bit on the MAX17048 (1 cell) and 156.25 uV on
the MAX17049 (2 cells); SOC's high byte is whole percent (the low byte 1/256 %); CONFIG
resets to 971Ch (RCOMP 97h, ATHD 1Ch = 4 %), ATHD holds the empty-alert threshold as
32 % minus its value (00000 = 32 %, 11111 = 1 %); with ALSC the chip alerts on every 1 %
change of SOC (STATUS.SC), and below the threshold (STATUS.HD); CONFIG.ALRT drives the
open-drain, active-low ALRT pin until software clears it. The power-supply ABI
(Documentation/ABI/testing/sysfs-class-power) gives voltages in microvolts and capacity
in percent.
"""

from __future__ import annotations

import errno

import pytest

from roadtest.models.max17048 import ALRT, ALSC, ATHD, CONFIG, HD, MAX17048, RCOMP, SC, STATUS
from roadtest.testing import (
    BoundDevice,
    I2CDevice,
    RoadtestSession,
    read_int,
    read_str,
    wait_until,
    write_int,
)
from roadtest.testing.guestpath import GuestPath

# The interrupt's first handler run is on the guest's clock; the driver's probe reads
# nothing that depends on time, but the alert tests wait for the threaded handler.
pytestmark = pytest.mark.roadtest_time("sim")


def gauge(compatible: str, irq: bool) -> I2CDevice[MAX17048]:
    interrupts = (
        """
            interrupt-parent = <&gpio>;
            interrupts = <$irq$ IRQ_TYPE_LEVEL_LOW>;"""
        if irq
        else ""
    )
    return I2CDevice(
        compatible=f"maxim,{compatible}",
        model=MAX17048,
        gpios=("irq",) if irq else (),
        dts=f"""
        fuel-gauge@$addr$ {{
            compatible = "maxim,{compatible}";
            reg = <0x$addr$>;{interrupts}
        }};
    """,
    )


# ALRT is open-drain, active low: the node says level-low.
MAX17048_IRQ = gauge("max17048", irq=True)
MAX17048_POLLED = gauge("max17048", irq=False)
MAX17049_POLLED = gauge("max17049", irq=False)


def battery(dev: BoundDevice[MAX17048]) -> GuestPath:
    return dev.path / "power_supply" / "battery"


def config(model: MAX17048) -> int:
    return model.regs[CONFIG.address]


def status(model: MAX17048) -> int:
    return model.regs[STATUS.address]


def test_attributes(guest: RoadtestSession) -> None:
    with guest.bound(MAX17048_POLLED) as dev:
        bat = battery(dev)
        assert read_str(bat / "type") == "Battery"
        assert read_int(bat / "online") == 1
        assert read_int(bat / "present") == 1
        # No supplier tells it whether the battery charges.
        assert read_str(bat / "status") == "Unknown"
        # No temperature channel: the property is there, its read says "no data".
        with pytest.raises(OSError) as info:
            read_str(bat / "temp")
        assert info.value.errno == errno.ENODATA
        # The power-up threshold, 4 %.
        assert read_int(bat / "capacity_alert_min") == 4
        # The default RCOMP, 97h, is CONFIG's power-up value.
        assert RCOMP.get(config(dev.model)) == 0x97


@pytest.mark.parametrize(
    ("device", "uv_per_bit"), [(MAX17048_POLLED, 78.125), (MAX17049_POLLED, 156.25)]
)
@pytest.mark.parametrize("raw", [0x0000, 0x0001, 0x0007, 0xC800, 0xD6D8, 0xFFFF])
def test_voltage_now(
    guest: RoadtestSession, device: I2CDevice[MAX17048], uv_per_bit: float, raw: int
) -> None:
    with guest.bound(device) as dev:
        dev.model.vcell = raw
        # Whole microvolts, the fraction dropped.
        assert read_int(battery(dev) / "voltage_now") == int(raw * uv_per_bit)


@pytest.mark.parametrize("raw", [0x0000, 0x00FF, 0x0100, 0x3280, 0x6400, 0x64FF])
def test_capacity(guest: RoadtestSession, raw: int) -> None:
    with guest.bound(MAX17048_POLLED) as dev:
        dev.model.soc = raw
        assert read_int(battery(dev) / "capacity") == raw >> 8  # whole percent


def test_capacity_alert_min(guest: RoadtestSession) -> None:
    with guest.bound(MAX17048_IRQ) as dev:
        bat = battery(dev)
        for percent in (1, 10, 32):
            write_int(bat / "capacity_alert_min", percent)
            assert read_int(bat / "capacity_alert_min") == percent
            assert 32 - ATHD.get(config(dev.model)) == percent
        for bad in (0, 33):
            with pytest.raises(OSError) as info:
                write_int(bat / "capacity_alert_min", bad)
            assert info.value.errno == errno.EINVAL
        assert read_int(bat / "capacity_alert_min") == 32


def test_soc_change_alert(guest: RoadtestSession) -> None:
    with guest.bound(MAX17048_IRQ) as dev:
        model = dev.model
        line = dev.lines["irq"]
        bat = battery(dev)
        # With an interrupt the driver asks for an alert on every 1 % change.
        assert config(model) & ALSC.mask
        assert model.irq is not None and model.irq.input  # ALRT idle: high
        fired = line.interrupts
        model.soc = 0x3200  # 50 %, from 0 %: a change
        guest.sleep(0.1)  # guest time for the threaded handler
        wait_until(lambda: line.interrupts == fired + 1, "the ALRT interrupt")
        # The handler clears SC and ALRT, which releases the pin, and reads the new SOC.
        wait_until(
            lambda: not status(model) & SC.mask and not config(model) & ALRT.mask,
            "the driver clearing SC and ALRT",
        )
        wait_until(lambda: line.armed, "the driver's interrupt handler returning")
        assert model.irq.input
        assert read_int(bat / "capacity") == 50
        assert line.interrupts == fired + 1
        # Under 1 %: no alert.
        model.soc = 0x32F0
        assert model.irq.input
        assert line.interrupts == fired + 1


def test_low_soc_alert(guest: RoadtestSession) -> None:
    with guest.bound(MAX17048_IRQ) as dev:
        model = dev.model
        line = dev.lines["irq"]
        write_int(battery(dev) / "capacity_alert_min", 10)
        model.soc = 0x0A00  # 10 %: at the threshold
        guest.sleep(0.1)
        wait_until(
            lambda: line.armed and model.irq is not None and model.irq.input, "the SOC alert"
        )
        fired = line.interrupts
        model.soc = 0x0900  # 9 %: below it
        guest.sleep(0.1)
        guest.assert_kernel_log(r"IRQ: Alert battery low level")
        wait_until(lambda: line.interrupts == fired + 1, "the ALRT interrupt")
        wait_until(lambda: not config(model) & ALRT.mask, "the driver clearing ALRT")
        assert read_int(battery(dev) / "capacity") == 9
        assert ATHD.get(config(model)) == 32 - 10  # the threshold as it was


def test_a_soc_change_after_a_low_alert_is_not_low(guest: RoadtestSession) -> None:
    with guest.bound(MAX17048_IRQ) as dev:
        model = dev.model
        line = dev.lines["irq"]
        model.soc = 0x3200  # 50 %
        guest.sleep(0.1)
        model.soc = 0x0300  # 3 %: below the 4 % threshold, and a change
        guest.sleep(0.1)
        guest.assert_kernel_log(r"IRQ: Alert battery low level")
        wait_until(
            lambda: line.armed and not config(model) & ALRT.mask, "the low-SOC alert handled"
        )
        fired = line.interrupts
        warnings = sum("Alert battery low level" in ln for ln in guest.kernel_log())
        model.soc = 0x0400  # 4 %, charging: a change, not below the threshold
        guest.sleep(0.1)
        wait_until(lambda: line.interrupts == fired + 1, "the ALRT interrupt")
        wait_until(lambda: line.armed and not config(model) & ALRT.mask, "the SOC alert handled")
        # A rise to 4 % is no low battery: no new warning.
        assert sum("Alert battery low level" in ln for ln in guest.kernel_log()) == warnings
        # The datasheet's flags are cleared by writing 0: HD should be, once handled.
        assert not status(model) & HD.mask


def test_unbind_and_a_pending_alert(guest: RoadtestSession) -> None:
    with guest.bound(MAX17048_IRQ) as dev:
        model = dev.model
        bat = battery(dev)
        assert bat.exists()
        dev.unbind()
        assert not bat.exists()
        assert not guest.path("/sys/class/power_supply/battery").exists()
        # The chip stays powered, ALSC set: an alert comes and no handler clears it.
        model.soc = 0x3200
        guest.sleep(0.5)
        assert config(model) & ALRT.mask
        assert model.irq is not None and not model.irq.input
        # A new probe rewrites ATHD (and ALRT with it): the pending alert is cleared.
        dev.bind()
        wait_until(
            lambda: model.irq is not None and model.irq.input and dev.lines["irq"].armed,
            "the pending alert cleared",
        )
        assert read_int(battery(dev) / "capacity") == 50
