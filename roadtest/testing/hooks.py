"""What a session does with each I2C or SPI device it attaches: live, recorded or replayed.

The session asks its `DeviceHooks` what to put on the bus at a device's
address when a test attaches it (a transfer handler, and an observer of its
transfers; on SPI, what answers its chip select's messages, and their
observer), tells it about bind and unbind, and collects its verdict when the
device is detached. A device is named by a plain `TracedDevice` record.
`LiveHooks` puts the test's model there as is; the recorder and the replayer
provide the other two.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from roadtest.backend.i2c_model import ModelHandler
from roadtest.fuzz.scripted import ScriptedHandler, ScriptedSPIHandler

if TYPE_CHECKING:
    from roadtest.backend.gpio import GpioLine
    from roadtest.backend.i2c_transfer import BusTarget
    from roadtest.backend.spi_transfer import SPITarget
    from roadtest.fuzz.events import DeviceEvent
    from roadtest.models.base import I2CModel, SPIModel
    from roadtest.trace.names import TracedDevice


class DeviceHooks(Protocol):
    def attached(
        self,
        test_id: str,
        device: TracedDevice,
        model: I2CModel,
        lines: Mapping[str, GpioLine],
    ) -> BusTarget:
        """What answers on the bus for `device` (whose model is the test's `model`), and
        what observes its transfers. `lines` are its GPIO lines by name."""
        ...

    def attached_spi(
        self,
        test_id: str,
        device: TracedDevice,
        model: SPIModel,
        lines: Mapping[str, GpioLine],
    ) -> SPITarget:
        """`attached` for a device on SPI: what answers its chip select's messages, and
        what observes them."""
        ...

    def marker(self, device: TracedDevice, what: str, detail: Any) -> None:
        """Something the test did to the device: "bind", "unbind"."""
        ...

    def detached(self, device: TracedDevice) -> list[Exception]:
        """The device is off the bus; returns problems that fail the test (each one's
        message is its report, the first line its headline)."""
        ...


class LiveHooks:
    def attached(
        self,
        test_id: str,
        device: TracedDevice,
        model: I2CModel,
        lines: Mapping[str, GpioLine],
    ) -> BusTarget:
        return ModelHandler(model), None

    def attached_spi(
        self,
        test_id: str,
        device: TracedDevice,
        model: SPIModel,
        lines: Mapping[str, GpioLine],
    ) -> SPITarget:
        return model, None

    def marker(self, device: TracedDevice, what: str, detail: Any) -> None:
        pass

    def detached(self, device: TracedDevice) -> list[Exception]:
        return []


class WrappingHooks:
    """Hooks around other hooks: what answers a device is chosen by `attached` (which a
    subclass writes, asking the inner hooks first, so their observer stays); bind and
    unbind markers and the verdict at detach are the inner hooks'.
    `RoadtestSession.hooks_wrapped` puts them in."""

    def __init__(self, inner: DeviceHooks) -> None:
        self.inner = inner

    def marker(self, device: TracedDevice, what: str, detail: Any) -> None:
        self.inner.marker(device, what, detail)

    def detached(self, device: TracedDevice) -> list[Exception]:
        return self.inner.detached(device)


class EventScriptHooks(WrappingHooks):
    """Hooks that apply a device-events script (roadtest.fuzz.events) to every device
    attached through them, around what the hooks they wrap put there (which keep their
    observer: a recording holds the scripted I/O). `RoadtestSession.device_events`."""

    def __init__(self, inner: DeviceHooks, script: Sequence[DeviceEvent]) -> None:
        super().__init__(inner)
        self.script = list(script)

    def attached(
        self,
        test_id: str,
        device: TracedDevice,
        model: I2CModel,
        lines: Mapping[str, GpioLine],
    ) -> BusTarget:
        handler, observer = self.inner.attached(test_id, device, model, lines)
        return ScriptedHandler(handler, model, self.script, lines), observer

    def attached_spi(
        self,
        test_id: str,
        device: TracedDevice,
        model: SPIModel,
        lines: Mapping[str, GpioLine],
    ) -> SPITarget:
        target, observer = self.inner.attached_spi(test_id, device, model, lines)
        return ScriptedSPIHandler(target, model, self.script, lines), observer
