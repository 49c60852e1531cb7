"""The API driver tests use: device declarations, the guest session, sysfs helpers."""

from roadtest.testing.devices import I2CDevice, PlatformDevice, SPIDevice, fixed_regulator
from roadtest.testing.evdev import EvdevDevice, EvdevTimeout, InputEvent, event_node
from roadtest.testing.gpio import (
    EDGE_BOTH,
    EventId,
    GpioChip,
    GpioEventTimeout,
    LineEvent,
    LineFlag,
    LineInfo,
    LineRequest,
)
from roadtest.testing.guestpath import GuestPath, NotNotified, Watch
from roadtest.testing.iio import (
    BufferedCapture,
    EventAttribute,
    IIOEvents,
    ScanElement,
    ScanLayout,
    ScanType,
    SysfsTrigger,
    enable_scan_elements,
    scan_elements,
)
from roadtest.testing.leds import LED, LEDName, device_led, device_leds
from roadtest.testing.nvmem import NvmemDevice, nvmem_devices, only_nvmem
from roadtest.testing.rtc import RTC
from roadtest.testing.session import (
    BindError,
    Bound,
    BoundDevice,
    BoundPlatformDevice,
    RoadtestSession,
)
from roadtest.testing.sysfs import read_float, read_int, read_str, write_float, write_int, write_str
from roadtest.testing.waiting import wait_until

__all__ = [
    "BindError",
    "Bound",
    "BoundDevice",
    "BoundPlatformDevice",
    "EventAttribute",
    "BufferedCapture",
    "EDGE_BOTH",
    "EvdevDevice",
    "EvdevTimeout",
    "EventId",
    "GpioChip",
    "GpioEventTimeout",
    "GuestPath",
    "I2CDevice",
    "InputEvent",
    "LED",
    "LEDName",
    "LineEvent",
    "LineFlag",
    "LineInfo",
    "LineRequest",
    "NotNotified",
    "NvmemDevice",
    "PlatformDevice",
    "RTC",
    "RoadtestSession",
    "SPIDevice",
    "ScanElement",
    "ScanLayout",
    "ScanType",
    "SysfsTrigger",
    "IIOEvents",
    "Watch",
    "device_led",
    "device_leds",
    "enable_scan_elements",
    "event_node",
    "fixed_regulator",
    "nvmem_devices",
    "only_nvmem",
    "read_float",
    "read_int",
    "read_str",
    "scan_elements",
    "wait_until",
    "write_float",
    "write_int",
    "write_str",
]
