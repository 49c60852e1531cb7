"""TI ADS1015 and ADS1115 ADCs (drivers/iio/adc/ti-ads1015.c) against their models.

Expected values come from the datasheets (TI SBAS473E for the ADS1015, SBAS444D for the
ADS1115) and the IIO ABI (Documentation/ABI/testing/sysfs-bus-iio):

- A code is the input's fraction of the full-scale range (FSR, +-6.144 V down to
  +-0.256 V by PGA) in 2^11 (ADS1015) or 2^15 (ADS1115) steps, clipped at +-FS (Table 3).
  The ABI's raw value times scale is millivolts, so scale is FSR in mV / 2^(bits-1).
- MUX 000b..011b are AIN0-AIN1, AIN0-AIN3, AIN1-AIN3, AIN2-AIN3; 100b..111b AIN0..AIN3
  against GND; DR's rates are 128..3300 SPS (ADS1015) and 8..860 SPS (ADS1115).
- The comparator asserts ALERT/RDY after COMP_QUE's 1, 2 or 4 conversions beyond a
  threshold (traditional: above Hi_thresh; window: above Hi_thresh or below Lo_thresh);
  latched until the Conversion register is read. The driver reports it as IIO threshold
  events, the queue as the event period (conversions / DR).

Found: the event codes do not name the channel that crossed its threshold
(test_event_code_names_the_channel), the ADS1115's smallest advertised scale cannot be
written (test_every_available_scale_can_be_written), and a window whose high
threshold is below its low one turns ALERT/RDY into the conversion-ready pin
(test_window_thresholds_in_order): kernel-patches/iio/0014, 0016 and 0033.
"""

from __future__ import annotations

import contextlib
import errno
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import ROUND_FLOOR, Decimal

import pytest

from roadtest.fuzz.events import DeviceEvent, Pass, TransferFails
from roadtest.models.ads1x15 import (
    ADS1015,
    ADS1115,
    COMP_LAT,
    COMP_MODE,
    COMP_POL,
    COMP_QUE,
    DR,
    MUX,
    PGA,
    REG_HI_THRESH,
    REG_LO_THRESH,
    ADS1x15,
)
from roadtest.testing import (
    BindError,
    BoundDevice,
    GuestPath,
    I2CDevice,
    RoadtestSession,
    SysfsTrigger,
    enable_scan_elements,
    read_float,
    read_int,
    read_str,
    scan_elements,
    wait_until,
    write_int,
    write_str,
)
from roadtest.testing.iio import (
    IIOBuffer,
    IIOChanType,
    IIOEvent,
    IIOEventDirection,
    IIOEventMonitor,
    IIOEventType,
    devnode,
    iio_event_code,
)


def adc(
    compatible: str, model: type[ADS1x15], irq_type: str = "IRQ_TYPE_EDGE_FALLING"
) -> I2CDevice[ADS1x15]:
    return I2CDevice(
        compatible=compatible,
        model=model,
        gpios=("irq",),
        dts=f"""
            adc@$addr$ {{
                compatible = "{compatible}";
                reg = <0x$addr$>;
                interrupt-parent = <&gpio>;
                interrupts = <$irq$ {irq_type}>;
                #address-cells = <1>;
                #size-cells = <0>;
            }};
        """,
    )


def with_channels(compatible: str, model: type[ADS1x15]) -> I2CDevice[ADS1x15]:
    """No interrupt; channel@4 (AIN0) at +-1.024 V and DR 101b, channel@1 (AIN0-AIN3) at
    +-6.144 V and DR 000b, channel@7 (AIN3) with the binding's defaults."""
    return I2CDevice(
        compatible=compatible,
        model=model,
        dts=f"""
            adc@$addr$ {{
                compatible = "{compatible}";
                reg = <0x$addr$>;
                #address-cells = <1>;
                #size-cells = <0>;
                channel@4 {{
                    reg = <4>;
                    ti,gain = <3>;
                    ti,datarate = <5>;
                }};
                channel@1 {{
                    reg = <1>;
                    ti,gain = <0>;
                    ti,datarate = <0>;
                }};
                channel@7 {{
                    reg = <7>;
                }};
            }};
        """,
    )


ADS1015_ADC = adc("ti,ads1015", ADS1015)
ADS1115_ADC = adc("ti,ads1115", ADS1115)
ADS1015_CHANNELS = with_channels("ti,ads1015", ADS1015)
ADS1115_CHANNELS = with_channels("ti,ads1115", ADS1115)
ADS1015_ACTIVE_HIGH = adc("ti,ads1015", ADS1015, "IRQ_TYPE_EDGE_RISING")
ADS1015_BOTH_EDGES = adc("ti,ads1015", ADS1015, "IRQ_TYPE_EDGE_BOTH")


@dataclass(frozen=True)
class Chip:
    name: str
    bits: int
    rates: tuple[int, ...]
    device: I2CDevice[ADS1x15]
    channels: I2CDevice[ADS1x15]

    @property
    def top(self) -> int:
        """2^(bits-1): codes run from -top to top - 1."""
        return 1 << (self.bits - 1)

    def code(self, volts: float, fsr: str = "2.048") -> int:
        """Table 3: the input over FSR in 2^(bits-1) steps, clipped at +-FS."""
        steps = (Decimal(repr(volts)) * self.top / Decimal(fsr)).to_integral_value(ROUND_FLOOR)
        return max(-self.top, min(self.top - 1, int(steps)))

    def scale(self, fsr_mv: int) -> float:
        return fsr_mv / self.top


CHIPS = [
    Chip(
        "ads1015", 12, (128, 250, 490, 920, 1600, 2400, 3300, 3300), ADS1015_ADC, ADS1015_CHANNELS
    ),
    Chip("ads1115", 16, (8, 16, 32, 64, 128, 250, 475, 860), ADS1115_ADC, ADS1115_CHANNELS),
]
BY_NAME = pytest.mark.parametrize("chip", CHIPS, ids=[c.name for c in CHIPS])

#: (channel name, MUX code = scan index, positive input, negative input or None for GND)
CHANNELS = [
    ("voltage0-voltage1", 0, 0, 1),
    ("voltage0-voltage3", 1, 0, 3),
    ("voltage1-voltage3", 2, 1, 3),
    ("voltage2-voltage3", 3, 2, 3),
    ("voltage0", 4, 0, None),
    ("voltage1", 5, 1, None),
    ("voltage2", 6, 2, None),
    ("voltage3", 7, 3, None),
]
FSR_MV = (6144, 4096, 2048, 1024, 512, 256)  # PGA 000b..101b


@contextlib.contextmanager
def bound(guest: RoadtestSession, device: I2CDevice[ADS1x15]) -> Iterator[BoundDevice[ADS1x15]]:
    """The device bound, and the driver's runtime-PM autosuspend spent: the driver enables
    runtime PM without marking the device busy, so when its first suspend comes after probe
    depends on the guest's uptime. Past it, the chip is powered down (single-shot mode) and
    the test's first access resumes it, the same I/O in every run and on every clock, so
    that recordings and replays agree. It comes when the guest's uptime passes the
    driver's delay: polled in steps, since a guest that booted long ago (x86_64 under TCG)
    has it at once, where waiting out the whole delay cost 2.5 s a test."""
    with guest.bound(device) as dev:
        for _ in range(25):  # 2.5 s of the guest's time at most
            if not dev.model.continuous:
                break
            guest.sleep(0.1)
        assert not dev.model.continuous, "no first autosuspend within 2.5 s of the bind"
        yield dev


def iio(dev: BoundDevice[ADS1x15]) -> GuestPath:
    return dev.path.only("iio:device*")


def set_inputs(model: ADS1x15, volts: tuple[float, float, float, float]) -> None:
    model.ain0, model.ain1, model.ain2, model.ain3 = volts


def expected(chip: Chip, volts: tuple[float, ...], positive: int, negative: int | None) -> int:
    diff = Decimal(repr(volts[positive])) - (
        Decimal(repr(volts[negative])) if negative is not None else 0
    )
    return chip.code(float(diff))


@BY_NAME
def test_probe(guest: RoadtestSession, chip: Chip) -> None:
    """Probe leaves the chip converting continuously with the comparator off, latching,
    active low for a falling-edge interrupt; every MUX pairing is a channel."""
    with bound(guest, chip.device) as dev:
        path = iio(dev)
        # The driver calls every part "ads1015"; the ABI's name is "typically a part
        # number", and renaming would change what userspace matches on: not asserted
        # as a bug.
        assert read_str(path / "name") == "ads1015"
        raws = {p.name for p in path.glob("in_voltage*_raw")}
        assert raws == {f"in_{name}_raw" for name, *_ in CHANNELS}
        config = dev.model.config
        assert COMP_QUE.get(config) == 3  # comparator disabled
        assert COMP_LAT.get(config) == 1
        assert COMP_POL.get(config) == 0  # IRQ_TYPE_EDGE_FALLING: active low


@BY_NAME
def test_raw_readings(guest: RoadtestSession, chip: Chip) -> None:
    volts = (1.5, 0.25, 3.3, 1.0)  # AIN2 beyond +FS: clipped
    with bound(guest, chip.device) as dev:
        set_inputs(dev.model, volts)
        for name, mux, positive, negative in CHANNELS:
            raw = read_int(iio(dev) / f"in_{name}_raw")
            assert raw == expected(chip, volts, positive, negative), name
            assert MUX.get(dev.model.config) == mux
        set_inputs(dev.model, (0.0, 3.0, 0.0, 0.0))
        assert read_int(iio(dev) / "in_voltage0-voltage1_raw") == -chip.top  # below -FS


@BY_NAME
def test_scale(guest: RoadtestSession, chip: Chip) -> None:
    with bound(guest, chip.device) as dev:
        path = iio(dev)
        available = [float(v) for v in read_str(path / "scale_available").split()]
        assert sorted(available) == pytest.approx(sorted(chip.scale(mv) for mv in FSR_MV))
        for name, *_ in CHANNELS:
            assert read_float(path / f"in_{name}_scale") == pytest.approx(chip.scale(2048))
        # Each PGA: the scale reads back, and a conversion uses that range.
        dev.model.ain0 = 0.2
        for pga, mv in enumerate(FSR_MV):
            write_str(path / "in_voltage0_scale", f"{chip.scale(mv):.9f}")
            assert read_float(path / "in_voltage0_scale") == pytest.approx(chip.scale(mv))
            assert read_int(path / "in_voltage0_raw") == chip.code(0.2, str(Decimal(mv) / 1000))
            assert PGA.get(dev.model.config) == pga
        with pytest.raises(OSError) as info:
            write_str(path / "in_voltage0_scale", "0.3")
        assert info.value.errno == errno.EINVAL


@BY_NAME
def test_every_available_scale_can_be_written(guest: RoadtestSession, chip: Chip) -> None:
    """The ADS1115's 0.0078125 (+-0.256 V, SBAS444D Table 8's PGA 101b) arrives in micro
    units, 0.007812: before kernel-patches/iio/0016 it gave 255 mV, no range, and EINVAL."""
    with bound(guest, chip.device) as dev:
        path = iio(dev)
        for value in read_str(path / "scale_available").split():
            write_str(path / "in_voltage0_scale", value)
            assert read_float(path / "in_voltage0_scale") == pytest.approx(float(value))


@BY_NAME
def test_sampling_frequency(guest: RoadtestSession, chip: Chip) -> None:
    with bound(guest, chip.device) as dev:
        path = iio(dev)
        available = [int(v) for v in read_str(path / "sampling_frequency_available").split()]
        assert available == list(chip.rates)
        assert read_int(path / "in_voltage1_sampling_frequency") == chip.rates[4]  # DR 100b
        for dr, rate in enumerate(chip.rates):
            if dr == 7 and chip.rates[6] == rate:
                continue  # the ADS1015's 110b and 111b are both 3300 SPS
            write_int(path / "in_voltage1_sampling_frequency", rate)
            assert read_int(path / "in_voltage1_sampling_frequency") == rate
            read_int(path / "in_voltage1_raw")
            assert DR.get(dev.model.config) == dr
        with pytest.raises(OSError) as info:
            write_int(path / "in_voltage1_sampling_frequency", 1000)
        assert info.value.errno == errno.EINVAL


@BY_NAME
def test_devicetree_channels(guest: RoadtestSession, chip: Chip) -> None:
    """The binding's channel@N: reg picks the MUX pairing, ti,gain the PGA, ti,datarate DR."""
    with bound(guest, chip.channels) as dev:
        path = iio(dev)
        assert read_float(path / "in_voltage0_scale") == pytest.approx(chip.scale(1024))
        assert read_int(path / "in_voltage0_sampling_frequency") == chip.rates[5]
        assert read_float(path / "in_voltage0-voltage3_scale") == pytest.approx(chip.scale(6144))
        assert read_int(path / "in_voltage0-voltage3_sampling_frequency") == chip.rates[0]
        assert read_float(path / "in_voltage3_scale") == pytest.approx(chip.scale(2048))
        assert read_int(path / "in_voltage3_sampling_frequency") == chip.rates[4]
        set_inputs(dev.model, (0.5, 0.0, 0.0, 0.1))
        assert read_int(path / "in_voltage0_raw") == chip.code(0.5, "1.024")
        config = dev.model.config
        assert (MUX.get(config), PGA.get(config), DR.get(config)) == (4, 3, 5)
        assert read_int(path / "in_voltage0-voltage3_raw") == chip.code(0.4, "6.144")
        config = dev.model.config
        assert (MUX.get(config), PGA.get(config), DR.get(config)) == (1, 0, 0)


@BY_NAME
def test_triggered_buffer(guest: RoadtestSession, chip: Chip) -> None:
    """One channel at a time (the driver's one-hot scan mask) and the timestamp, through a
    sysfs trigger; the scan elements' types say how to read the left-justified result."""
    with bound(guest, chip.device) as dev, SysfsTrigger(guest.agent) as trigger:
        path = iio(dev)
        elements = scan_elements(path)
        storage = "le:s12/16>>4" if chip.bits == 12 else "le:s16/16>>0"
        for name, index, *_ in CHANNELS:
            element = elements[f"in_{name}"]
            assert (element.index, str(element.type)) == (index, storage)
        assert str(elements["in_timestamp"].type) == "le:s64/64>>0"
        layout = enable_scan_elements(path, ["in_voltage2-voltage3", "in_timestamp"])
        assert layout.size == 16  # an s16, padding, then the 8-byte aligned timestamp
        with pytest.raises(OSError) as info:
            write_int(path / "buffer0/in_voltage1_en", 1)  # a second channel
        assert info.value.errno == errno.EINVAL

        write_str(path / "trigger/current_trigger", trigger.name)
        try:
            with IIOBuffer(devnode(path)) as buffer:
                write_int(path / "buffer0/length", 16)
                write_int(path / "buffer0/enable", 1)
                try:
                    last = 0
                    for ain2 in (1.5, 0.0, 4.0):
                        set_inputs(dev.model, (0.0, 0.0, ain2, 0.5))
                        # Continuous mode: the register changes at the next conversion's
                        # end (1/DR); a trigger fired sooner reads the last one, as the
                        # chip does.
                        guest.sleep(2 / chip.rates[4])
                        trigger.fire()
                        scan = buffer.read_scan(layout)
                        assert scan["in_voltage2-voltage3"] == chip.code(ain2 - 0.5)
                        timestamp = scan["in_timestamp"]
                        assert isinstance(timestamp, int) and timestamp >= last > -1
                        last = timestamp
                    # No sysfs reads and no events while the buffer runs.
                    for attempt in (
                        lambda: read_int(path / "in_voltage0_raw"),
                        lambda: write_int(path / "events/in_voltage0_thresh_rising_en", 1),
                    ):
                        with pytest.raises(OSError) as info:
                            attempt()
                        assert info.value.errno == errno.EBUSY
                finally:
                    write_int(path / "buffer0/enable", 0)
        finally:
            write_str(path / "trigger/current_trigger", "\n")


def events(path: GuestPath, channel: str) -> tuple[GuestPath, str]:
    return path / "events", f"in_{channel}_thresh"


def assert_threshold_event(event: IIOEvent, direction: IIOEventDirection) -> None:
    assert event.chan_type == IIOChanType.IIO_VOLTAGE, event
    assert event.event_type == IIOEventType.IIO_EV_TYPE_THRESH, event
    assert event.direction == direction, event


def signed_threshold(chip: Chip, model: ADS1x15, reg: int) -> int:
    value = model.regs[reg] >> (16 - chip.bits)
    return value - (1 << chip.bits) if value >> (chip.bits - 1) else value


@BY_NAME
def test_rising_threshold_event(guest: RoadtestSession, chip: Chip) -> None:
    """Traditional comparator: Hi_thresh the rising value, Lo_thresh one code below it."""
    with bound(guest, chip.device) as dev:
        model = dev.model
        directory, prefix = events(iio(dev), "voltage0-voltage1")
        level = chip.top // 2  # +1.024 V at +-2.048 V
        write_int(directory / f"{prefix}_rising_value", level)
        assert read_int(directory / f"{prefix}_rising_value") == level
        write_int(directory / f"{prefix}_rising_en", 1)
        assert read_int(directory / f"{prefix}_rising_en") == 1
        assert read_int(directory / f"{prefix}_either_en") == 0
        assert signed_threshold(chip, model, REG_HI_THRESH) == level
        assert signed_threshold(chip, model, REG_LO_THRESH) == level - 1
        config = model.config
        assert COMP_MODE.get(config) == 0 and COMP_QUE.get(config) == 0
        assert MUX.get(config) == 0
        with IIOEventMonitor(devnode(iio(dev))) as monitor:
            set_inputs(model, (1.5, 0.0, 0.0, 0.0))
            model.convert()
            assert_threshold_event(monitor.read(), IIOEventDirection.IIO_EV_DIR_RISING)
            # The handler read the Conversion register, which releases the latch.
            wait_until(lambda: model.irq is not None and model.irq.input, "ALERT/RDY released")
        write_int(directory / f"{prefix}_rising_en", 0)
        assert COMP_QUE.get(model.config) == 3
        assert read_int(directory / f"{prefix}_rising_en") == 0
        with pytest.raises(OSError) as info:
            write_int(directory / f"{prefix}_rising_value", chip.top)  # beyond the codes
        assert info.value.errno == errno.EINVAL


@BY_NAME
def test_window_event(guest: RoadtestSession, chip: Chip) -> None:
    with bound(guest, chip.device) as dev:
        model = dev.model
        directory, prefix = events(iio(dev), "voltage0-voltage1")
        write_int(directory / f"{prefix}_rising_value", chip.top // 4)
        write_int(directory / f"{prefix}_falling_value", -chip.top // 4)
        write_int(directory / f"{prefix}_either_en", 1)
        assert read_int(directory / f"{prefix}_either_en") == 1
        assert COMP_MODE.get(model.config) == 1
        assert signed_threshold(chip, model, REG_HI_THRESH) == chip.top // 4
        assert signed_threshold(chip, model, REG_LO_THRESH) == -chip.top // 4
        with IIOEventMonitor(devnode(iio(dev))) as monitor:
            set_inputs(model, (0.0, 0.9, 0.0, 0.0))  # -0.9 V: below -0.512 V
            model.convert()
            assert_threshold_event(monitor.read(), IIOEventDirection.IIO_EV_DIR_EITHER)
            set_inputs(model, (0.9, 0.0, 0.0, 0.0))  # above +0.512 V
            model.convert()
            assert_threshold_event(monitor.read(), IIOEventDirection.IIO_EV_DIR_EITHER)
        write_int(directory / f"{prefix}_either_en", 0)
        assert COMP_QUE.get(model.config) == 3


@BY_NAME
def test_event_period_is_the_comparator_queue(guest: RoadtestSession, chip: Chip) -> None:
    """The period is COMP_QUE's conversions at the channel's rate: 1, 2 or 4 / DR."""
    with bound(guest, chip.device) as dev:
        model = dev.model
        directory, prefix = events(iio(dev), "voltage0-voltage1")
        period = directory / f"{prefix}_either_period"
        rate = chip.rates[4]
        assert read_float(period) == pytest.approx(1 / rate, abs=1e-6)
        write_str(period, f"{2 / rate:.6f}")
        assert read_float(period) == pytest.approx(2 / rate, abs=1e-6)
        write_str(period, "1")  # longer than four conversions: four
        assert read_float(period) == pytest.approx(4 / rate, abs=1e-6)
        write_str(period, f"{2 / rate:.6f}")
        write_int(directory / f"{prefix}_rising_value", 0)
        write_int(directory / f"{prefix}_rising_en", 1)
        assert COMP_QUE.get(model.config) == 1  # two conversions
        with IIOEventMonitor(devnode(iio(dev))) as monitor:
            set_inputs(model, (1.0, 0.0, 0.0, 0.0))
            model.convert()
            assert not model.alert  # one conversion beyond is not enough
            model.convert()
            assert_threshold_event(monitor.read(), IIOEventDirection.IIO_EV_DIR_RISING)
        write_int(directory / f"{prefix}_rising_en", 0)


@BY_NAME
def test_event_code_names_the_channel(guest: RoadtestSession, chip: Chip) -> None:
    """sysfs-bus-iio events are per channel: the event names the channel that crossed its
    threshold, a pair with its second channel and the differential flag. Before
    kernel-patches/iio/0014 the code carried the channel's MUX code (7 for in_voltage3)."""
    with bound(guest, chip.device) as dev:
        model = dev.model
        path = iio(dev)
        cases = [
            ("voltage3", iio_event_code(IIOChanType.IIO_VOLTAGE, 3, 0, 1)),
            (
                "voltage0-voltage1",
                iio_event_code(IIOChanType.IIO_VOLTAGE, 0, 0, 1, diff=True, chan2=1),
            ),
        ]
        for channel, code in cases:
            directory, prefix = events(path, channel)
            write_int(directory / f"{prefix}_rising_value", 0)
            write_int(directory / f"{prefix}_rising_en", 1)
            with IIOEventMonitor(devnode(path)) as monitor:
                set_inputs(model, (1.0, 0.0, 0.0, 1.0))
                model.convert()
                event = monitor.read()
            write_int(directory / f"{prefix}_rising_en", 0)
            assert event.id == code, f"{channel}: {event}"


@BY_NAME
def test_window_thresholds_in_order(guest: RoadtestSession, chip: Chip) -> None:
    """A window whose rising value is not above its falling one is refused (EINVAL) when
    enabled, and the comparator stays off (kernel-patches/iio/0033): "the Hi_thresh
    register value must always be greater than the Lo_thresh register value", and a
    Hi_thresh with its MSB set over a Lo_thresh with its MSB clear makes ALERT/RDY the
    conversion-ready pin, asserted at every conversion (SBAS473E and SBAS444D, the
    Lo_thresh and Hi_thresh registers). The thresholds are checked at enable, not as each
    is written: the IIO ABI lets a driver buffer an event's parameters until it is
    enabled (Documentation/ABI/testing/sysfs-bus-iio), so they can be set in any order."""
    with bound(guest, chip.device) as dev:
        model = dev.model
        directory, prefix = events(iio(dev), "voltage0-voltage1")
        for rising, falling in ((-10, 10), (10, 10)):
            write_int(directory / f"{prefix}_rising_value", rising)
            write_int(directory / f"{prefix}_falling_value", falling)
            with pytest.raises(OSError) as info:
                write_int(directory / f"{prefix}_either_en", 1)
            assert info.value.errno == errno.EINVAL
            assert read_int(directory / f"{prefix}_either_en") == 0
            assert COMP_QUE.get(model.config) == 3  # the comparator still off
        write_int(directory / f"{prefix}_falling_value", -10)  # in order now, 0 V inside
        write_int(directory / f"{prefix}_either_en", 1)
        assert signed_threshold(chip, model, REG_HI_THRESH) == 10
        assert signed_threshold(chip, model, REG_LO_THRESH) == -10
        write_int(directory / f"{prefix}_either_en", 0)


@BY_NAME
def test_one_event_channel_at_a_time(guest: RoadtestSession, chip: Chip) -> None:
    """One comparator: while it watches a channel, other channels' reads and events and
    the buffer are EBUSY; the watched channel still reads."""
    with bound(guest, chip.device) as dev, SysfsTrigger(guest.agent) as trigger:
        path = iio(dev)
        directory, prefix = events(path, "voltage0-voltage1")
        enable_scan_elements(path, ["in_voltage2"])
        write_str(path / "trigger/current_trigger", trigger.name)
        try:
            write_int(directory / f"{prefix}_rising_en", 1)
            dev.model.ain0 = 0.5
            guest.sleep(2 / chip.rates[4])  # a conversion of the new input
            assert read_int(path / "in_voltage0-voltage1_raw") == chip.code(0.5)
            for attempt in (
                lambda: read_int(path / "in_voltage2_raw"),
                lambda: write_int(directory / "in_voltage2_thresh_rising_en", 1),
                lambda: write_int(path / "buffer0/enable", 1),
            ):
                with pytest.raises(OSError) as info:
                    attempt()
                assert info.value.errno == errno.EBUSY
            write_int(directory / f"{prefix}_rising_en", 0)
            assert read_int(path / "in_voltage2_raw") == 0
        finally:
            write_str(path / "trigger/current_trigger", "\n")


def test_active_high_alert(guest: RoadtestSession) -> None:
    """A rising-edge interrupt makes the driver set COMP_POL: ALERT/RDY active high, the
    open drain pulling the line low until the comparator lets it go."""
    with bound(guest, ADS1015_ACTIVE_HIGH) as dev:
        model = dev.model
        assert COMP_POL.get(model.config) == 1
        directory, prefix = events(iio(dev), "voltage0-voltage1")
        write_int(directory / f"{prefix}_rising_value", 100)
        write_int(directory / f"{prefix}_rising_en", 1)
        assert model.irq is not None and not model.irq.input
        with IIOEventMonitor(devnode(iio(dev))) as monitor:
            model.ain0 = 1.0
            model.convert()
            assert_threshold_event(monitor.read(), IIOEventDirection.IIO_EV_DIR_RISING)
        write_int(directory / f"{prefix}_rising_en", 0)


def test_both_edges_refused(guest: RoadtestSession) -> None:
    """COMP_POL can follow a falling or a rising trigger, not both: the probe fails."""
    with pytest.raises(BindError), guest.bound(ADS1015_BOTH_EDGES):
        pass


@BY_NAME
def test_probe_nack(guest: RoadtestSession, chip: Chip) -> None:
    with (
        guest.device_events([TransferFails(0)]),
        pytest.raises(BindError),
        guest.bound(chip.device),
    ):
        pass


@BY_NAME
@pytest.mark.parametrize("at_message", [0, 1])
@pytest.mark.roadtest_time(
    "sim",
    reason="the failing transfer is counted from the bind; on a real clock the driver's 2 s "
    "autosuspend may come first and take it",
)
def test_read_nack(guest: RoadtestSession, chip: Chip, at_message: int) -> None:
    """Six transfers pass: the probe's (Config read, then written continuous), the
    autosuspend's and the raw read's resume's (each a Config read and write); the raw read's
    own first, the Config read, fails at its pointer (0) or at its data (1): EIO, then the
    next read works."""
    script: list[DeviceEvent] = [Pass(6), TransferFails(at_message)]
    with guest.device_events(script), bound(guest, chip.channels) as dev:
        dev.model.ain3 = 1.0
        raw = iio(dev) / "in_voltage3_raw"
        with pytest.raises(OSError) as info:
            read_int(raw)
        assert info.value.errno == errno.EIO
        assert read_int(raw) == chip.code(1.0)


@BY_NAME
def test_runtime_suspend_and_unbind(guest: RoadtestSession, chip: Chip) -> None:
    """Idle for the driver's 2 s autosuspend delay the chip goes to power-down
    (single-shot mode); a read wakes it; unbinding powers it down."""
    with bound(guest, chip.channels) as dev:
        model = dev.model
        model.ain3 = 0.5
        raw = iio(dev) / "in_voltage3_raw"
        assert read_int(raw) == chip.code(0.5)
        for _ in range(10):
            guest.sleep(0.5)
            if not model.continuous:
                break
        assert not model.continuous, "no power-down after the 2 s autosuspend delay"  # 5 s
        model.ain3 = 0.75
        assert read_int(raw) == chip.code(0.75)
        assert model.continuous
        dev.unbind()
        assert not model.continuous
        assert not dev.path.glob("iio:device*")
