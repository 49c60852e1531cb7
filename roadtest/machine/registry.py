"""The machines roadtest can boot, by name (--roadtest-machine). A new kind of guest is one
module with a `MachineType`, and one line here."""

from __future__ import annotations

from roadtest.errors import RoadtestError
from roadtest.machine.base import MachineType
from roadtest.machine.qemu import X86_64_QEMU
from roadtest.machine.uml import UML

DEFAULT = UML.name
_MACHINES: dict[str, MachineType] = {UML.name: UML, X86_64_QEMU.name: X86_64_QEMU}


def register(machine_type: MachineType) -> None:
    _MACHINES[machine_type.name] = machine_type


def unregister(name: str) -> None:
    _MACHINES.pop(name, None)


def names() -> list[str]:
    return sorted(_MACHINES)


def get(name: str) -> MachineType:
    try:
        return _MACHINES[name]
    except KeyError:
        raise RoadtestError(
            f"unknown machine {name!r}: roadtest has {', '.join(names())}"
        ) from None
