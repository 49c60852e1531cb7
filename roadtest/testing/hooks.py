"""What a session does with each I2C device it attaches: live, recorded or replayed.

The session asks its `DeviceHooks` which model to put on the bus when a test
attaches a device, tells it about bind and unbind, and collects its verdict
when the device is detached. `LiveHooks` puts the test's model there as is;
the recorder and the replayer provide the other two.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from roadtest.models.base import I2CModel

if TYPE_CHECKING:
    from roadtest.testing.session import BoundDevice


class DeviceHooks(Protocol):
    def attached(self, test_id: str, bound: BoundDevice[I2CModel]) -> I2CModel:
        """The model that answers on the bus for `bound` (whose `model` is the test's)."""
        ...

    def marker(self, bound: BoundDevice[I2CModel], what: str, detail: Any) -> None:
        """Something the test did to the device: "bind", "unbind"."""
        ...

    def detached(self, bound: BoundDevice[I2CModel]) -> list[str]:
        """The device is off the bus; returns problems that fail the test."""
        ...


class LiveHooks:
    def attached(self, test_id: str, bound: BoundDevice[I2CModel]) -> I2CModel:
        return bound.model

    def marker(self, bound: BoundDevice[I2CModel], what: str, detail: Any) -> None:
        pass

    def detached(self, bound: BoundDevice[I2CModel]) -> list[str]:
        return []
