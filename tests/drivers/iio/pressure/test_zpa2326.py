"""Murata ZPA2326 pressure sensor (drivers/iio/pressure/zpa2326.c with zpa2326_i2c.c and
zpa2326_spi.c), against the sweep's register file: no model of the chip (its datasheet is
not at hand), the registers as a plan says: the device ID the driver checks at probe (0Fh,
B9h), every other register 0, as a chip that is stuck or a bus that reads zeros gives.
The register addresses are the driver's (zpa2326.h), on the wire as its regmap sends them:
a read sets bit 7 of the register address on I2C, bits 7 and 6 on SPI.

A read of in_pressure_raw (Documentation/ABI/testing/sysfs-bus-iio) while the chip is
still powered (the driver keeps it so for a second after the probe and after each read)
first drains the chip's pressure FIFO, until STATUS reports it empty; the FIFO holds at
most 16 samples. Against a STATUS that never reports it empty the driver read the FIFO
forever: the reading process never returned and the guest's agent stopped answering
(roadtest fails the test after 30 s). It gives up now, and the read fails with EIO
(kernel-patches/iio/0030).
"""

from __future__ import annotations

import errno

import pytest

from roadtest.sweep.device import RegisterFile, RegisterPlan, SPIRegisterFile
from roadtest.testing import I2CDevice, RoadtestSession, SPIDevice, read_int

DEVICE_ID_REG = 0x0F
DEVICE_ID = 0xB9  # with SA0 low (I2C address 0x5c), as on SPI
I2C_READ = 0x80  # the driver's regmap read flags
SPI_READ = 0xC0
SPI_COMMAND_ADDRESS = 0x7F  # the register file's SPI framing: bit 7 R/W, the rest the address


def on_i2c() -> RegisterFile:
    return RegisterFile(RegisterPlan(registers=((I2C_READ | DEVICE_ID_REG, DEVICE_ID),)))


def on_spi() -> SPIRegisterFile:
    address = (SPI_READ | DEVICE_ID_REG) & SPI_COMMAND_ADDRESS
    return SPIRegisterFile(RegisterPlan(registers=((address, DEVICE_ID),)))


ON_I2C = I2CDevice(
    compatible="murata,zpa2326",
    model=on_i2c,
    addr=0x5C,
    dts="""
        pressure@$addr$ {
            compatible = "murata,zpa2326";
            reg = <0x$addr$>;
        };
    """,
)

ON_SPI = SPIDevice(
    compatible="murata,zpa2326",
    model=on_spi,
    dts="""
        pressure@$addr$ {
            compatible = "murata,zpa2326";
            reg = <$addr$>;
            spi-max-frequency = <1000000>;
        };
    """,
)


# Without the fix the first read never ends: fail it after 10 s, not the default 30.
@pytest.mark.roadtest_hang_limit(10)
@pytest.mark.parametrize("device", [ON_I2C, ON_SPI], ids=["i2c", "spi"])
def test_a_fifo_that_never_empties_fails_the_read(
    guest: RoadtestSession, device: I2CDevice[RegisterFile] | SPIDevice[SPIRegisterFile]
) -> None:
    """Each read, the chip still powered from the probe or the read before, drains the
    FIFO first, which never reports empty: it fails, and the next one too.
    (No golden trace: whether the chip is still powered between reads is runtime PM's
    autosuspend timer, so the I/O moves with the guest's clock: x86_64's real one, and
    under simulated time with a kernel that boots to another time.)"""
    with guest.bound(device) as dev:
        raw = dev.path.only("iio:device*") / "in_pressure_raw"
        for _ in range(3):
            with pytest.raises(OSError) as raised:
                read_int(raw)
            # EIO from the FIFO drain; a chip runtime PM suspended between two reads
            # (its autosuspend timer runs on the guest's clock: under time-travel, or on
            # x86_64's real one) is powered up instead, and its one-shot conversion never
            # completes either: ENODATA. Each read ends: without the fix the first hangs.
            assert raised.value.errno in (errno.EIO, errno.ENODATA)
