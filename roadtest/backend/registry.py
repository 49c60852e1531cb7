"""The virtio devices every backend serves, in the order the guest's devicetree lists them.

A device type is its `VirtioDevice` subclass, which declares its name, its
virtio device id and its devicetree properties. A new one (an SPI controller,
say) is one module with that class, plus its model base class, and one line
here; the backend serves it and every machine puts it in the guest's tree.
"""

from __future__ import annotations

from roadtest.backend.device import VirtioDevice
from roadtest.backend.gpio import VirtioGpio
from roadtest.backend.i2c import VirtioI2C
from roadtest.backend.spi import VirtioSpi

_TYPES: list[type[VirtioDevice]] = [VirtioGpio, VirtioI2C, VirtioSpi]


def device_types() -> list[type[VirtioDevice]]:
    return list(_TYPES)


def register(device_type: type[VirtioDevice]) -> None:
    """Serve `device_type` too, in every backend made from now on."""
    if any(t.name == device_type.name for t in _TYPES):
        raise ValueError(f"a virtio device named {device_type.name!r} is registered already")
    _TYPES.append(device_type)


def unregister(device_type: type[VirtioDevice]) -> None:
    if device_type in _TYPES:
        _TYPES.remove(device_type)
