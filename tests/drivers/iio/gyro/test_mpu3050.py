"""InvenSense MPU-3050 gyroscope on I2C (drivers/iio/gyro/mpu3050-core.c and mpu3050-i2c.c),
against a model of its registers (roadtest/models/mpu3050.py cites the datasheet), through
the IIO sysfs ABI (Documentation/ABI/testing/sysfs-bus-iio) and the driver core's bind and
unbind.

With its interrupt wired, the driver registers a data-ready trigger, mpu3050-devN (N the
IIO device's number), and makes it the device's current trigger. Its remove freed the IRQ
but never unregistered the trigger: after an unbind the trigger stayed on the IIO core's
list (and in sysfs), its driver data the freed IIO device. At the next bind the IIO device
got the same number, the trigger's registration failed with -EEXIST, the probe freed the
IRQ but kept its number and went on without a trigger, and the next unbind freed the IRQ a
second time (a WARN in free_irq()). A trigger is its device's to remove: after an unbind
no trigger of that name is left, and a bind makes it anew (kernel-patches/iio/0028).
"""

from __future__ import annotations

from roadtest.models.mpu3050 import MPU3050
from roadtest.testing import BoundDevice, I2CDevice, RoadtestSession, read_str
from roadtest.testing.guestpath import GuestPath
from roadtest.testing.iio import device_index, triggers

GYRO = I2CDevice(
    compatible="invensense,mpu3050",
    model=MPU3050,
    gpios=("int",),
    dts="""
        gyro@$addr$ {
            compatible = "invensense,mpu3050";
            reg = <0x$addr$>;
            interrupt-parent = <&gpio>;
            interrupts = <$int$ IRQ_TYPE_EDGE_RISING>;
        };
    """,
)


def iio(dev: BoundDevice[MPU3050]) -> GuestPath:
    return dev.path.only("iio:device*")


def own_trigger(dev: BoundDevice[MPU3050]) -> str:
    """The name of the device's data-ready trigger, checked to be registered and current."""
    path = iio(dev)
    name = f"mpu3050-dev{device_index(path)}"
    assert name in triggers(dev.session.agent)
    assert read_str(path / "trigger/current_trigger") == name
    return name


def test_an_unbind_removes_the_trigger(guest: RoadtestSession) -> None:
    with guest.bound(GYRO, MPU3050()) as dev:
        name = own_trigger(dev)
        dev.unbind()
        assert name not in triggers(guest.agent)


def test_a_second_bind_has_its_trigger(guest: RoadtestSession) -> None:
    """Bind, unbind and bind again: the trigger is registered and current again, and the
    last unbind frees the IRQ once."""
    with guest.bound(GYRO, MPU3050()) as dev:
        own_trigger(dev)
        dev.unbind()
        dev.bind()
        own_trigger(dev)
