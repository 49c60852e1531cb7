"""What sweeping one driver came to: the records the runner writes, the results database
keeps and the reports read. Plain data, no behaviour beyond (de)serialising."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any

from roadtest.sweep.inventory import driver_key


class Stage(StrEnum):
    """How far a driver got, each stage past the one before it."""

    # roadtest failed, not the driver: the error is its detail (a harness bug to fix).
    ERROR = "harness error"
    NOT_BUILT = "not built"  # kconfig left it out of the sweep kernel (or it has no module)
    NO_DEVICE = "no device"  # nothing to instantiate: no compatible, no id-table name
    NOT_LOADED = "not loaded"  # its module (or a module it needs) would not load
    PROBE_FAILED = "probe failed"  # loaded, device there, but no driver bound
    BOUND = "bound"  # probe succeeded; exercising it did not finish
    EXERCISED = "exercised"  # bound, exercised, unbound, and its module removed


# Stages at which a driver counts as past probe.
PAST_PROBE = (Stage.BOUND, Stage.EXERCISED)


class Kind(StrEnum):
    """What kind of report a finding is (oracles.py tells them apart)."""

    KASAN = "kasan"
    UBSAN = "ubsan"
    LOCKDEP = "lockdep"
    WARNING = "warning"  # WARN(), WARN_ON()
    BUG = "bug"  # BUG(), a kernel oops
    ATOMIC_SLEEP = "sleep-in-atomic"  # DEBUG_ATOMIC_SLEEP's "BUG: sleeping function called"
    HANG = "hang"  # the hung-task detector, or the guest stopped answering
    LEAK = "leak"  # kmemleak
    PANIC = "panic"  # the guest died


@dataclass(frozen=True)
class Finding:
    kind: Kind
    # The same bug reported many times has one signature: the kind and the top frames in
    # the driver's module ("kasan: slab-out-of-bounds in foo_read_raw < foo_probe").
    signature: str
    title: str  # the report's headline as the kernel printed it
    report: str  # the whole report, as printed
    # The shrunk device answers that reproduce it (a JSON text the runner can replay with
    # `roadtest sweep --reproduce`), or "" while there is none.
    reproducer: str = ""

    def as_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Finding:
        return cls(
            kind=Kind(data["kind"]),
            signature=str(data["signature"]),
            title=str(data["title"]),
            report=str(data["report"]),
            reproducer=str(data.get("reproducer", "")),
        )


@dataclass(frozen=True)
class DriverResult:
    """One driver's sweep: where its device came from, how far it got, what broke."""

    module: str  # rtc-pcf8563; the source path for a driver without a known module
    subsystem: str
    source: str  # drivers/rtc/rtc-pcf8563.c
    machine: str  # the machine it ran on ("um", "x86_64"); "" if it did not run
    device: str  # how its device was made: "example", "sibling", "compatible", "new_device"
    match: str  # the compatible or the id-table name it was bound by ("" if none)
    stage: Stage
    detail: str = ""  # why it stopped where it did (the probe's error line, ...)
    examples: int = 0  # devices (register plans) it was bound against
    attributes_read: int = 0
    attributes_written: int = 0
    coverage: int = 0  # distinct KCOV edges in the module (0 when not measured)
    seconds: float = 0.0
    findings: tuple[Finding, ...] = field(default=())
    bus: str = "i2c"  # the bus of its driver and device: "i2c" or "spi"

    @property
    def past_probe(self) -> bool:
        return self.stage in PAST_PROBE

    @property
    def key(self) -> str:
        """Its driver's name where a source may hold one per bus (inventory.driver_key)."""
        return driver_key(self.source, self.bus)

    @property
    def name(self) -> str:
        """How the reports name it: its module and bus (rtc-pcf2127 on spi)."""
        return f"{self.module} ({self.bus})"

    def as_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["findings"] = [f.as_json() for f in self.findings]
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> DriverResult:
        return cls(
            module=str(data["module"]),
            subsystem=str(data["subsystem"]),
            source=str(data["source"]),
            machine=str(data["machine"]),
            device=str(data["device"]),
            match=str(data["match"]),
            stage=Stage(data["stage"]),
            detail=str(data.get("detail", "")),
            examples=int(data.get("examples", 0)),
            attributes_read=int(data.get("attributes_read", 0)),
            attributes_written=int(data.get("attributes_written", 0)),
            coverage=int(data.get("coverage", 0)),
            seconds=float(data.get("seconds", 0.0)),
            findings=tuple(Finding.from_json(f) for f in data.get("findings", ())),
            bus=str(data.get("bus", "i2c")),
        )
