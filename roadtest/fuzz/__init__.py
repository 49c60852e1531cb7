"""Hypothesis for roadtest: what a device may answer (strategies from register maps, device
events), how long and how hard to look (profiles), and the hostile device."""

from typing import TYPE_CHECKING, Any

from roadtest.fuzz.events import DeviceEvent, InterruptChange, Pass, RegisterChange, TransferFails

if TYPE_CHECKING:
    from roadtest.fuzz.strategies import (
        boundary_ints,
        device_events,
        field_values,
        register_values,
    )

# The strategies import Hypothesis (0.44 s): only when one is asked for, so that importing
# roadtest.fuzz.scripted or .events (every guest test's hooks do) does not.
_STRATEGIES = {"boundary_ints", "device_events", "field_values", "register_values"}


def __getattr__(name: str) -> Any:
    if name in _STRATEGIES:
        from roadtest.fuzz import strategies

        return getattr(strategies, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "DeviceEvent",
    "InterruptChange",
    "Pass",
    "RegisterChange",
    "TransferFails",
    "boundary_ints",
    "device_events",
    "field_values",
    "register_values",
]
