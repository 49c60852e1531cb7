"""Platform devices: nodes at the devicetree's root with no model behind them (a
regulator's virtual consumer), named in sysfs by their node name."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from roadtest.testing.bus import TestBus

if TYPE_CHECKING:
    from roadtest.testing.devicetree import Parent


class PlatformBus(TestBus):
    name: ClassVar[str] = "platform"
    sysfs: ClassVar[str] = "platform"
    dt_parent: ClassVar[Parent] = "root"

    def sysfs_name(self, addr: int | None, node_name: str) -> str:
        return node_name
