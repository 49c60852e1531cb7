"""What became of each finding: a checked-in triage file, read by the reports.

A sweep finds the same bugs every time it runs; a person decides once what each one is,
and the reports say it beside the finding from then on. The file is TOML, a table per
finding, matched by the driver's source and bus and the finding's signature:

    [[finding]]
    driver = "drivers/rtc/rtc-rx8025.c"
    bus = "i2c"                  # or "spi"; i2c when left out (files older than SPI)
    signature = "kasan: slab-out-of-bounds in rx8025_read_offset < ..."
    verdict = "fixed"            # fixed | open | artefact | expected
    reason = "what happens, and why it is (not) the driver's bug"
    patch = "rtc/0002-...patch"  # fixed: the patch of kernel-patches/ that fixes it
    upstream = ""                # a confirmed upstream fix, if there is one

roadtest's own is kernel-patches/sweep-triage.toml (the findings of its sweeps of 6.12,
beside the patches that fix them); `roadtest sweep --triage FILE` reads another. A finding
the file does not name is new: the summary says how many.
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from roadtest.errors import RoadtestError
from roadtest.sweep.inventory import BUSES
from roadtest.sweep.outcome import DriverResult, Finding

# The file roadtest's own sweeps are triaged in, relative to kernel-patches/.
TRIAGE_FILE = "sweep-triage.toml"


class Verdict(StrEnum):
    FIXED = "fixed"  # a driver bug, fixed by a patch of kernel-patches/
    OPEN = "open"  # a driver bug, not fixed yet
    ARTEFACT = "artefact"  # roadtest's (or UML's) doing, not the driver's
    EXPECTED = "expected"  # the kernel did what it should
    NEW = "new"  # not triaged: the file does not name it


# A genuine driver bug, whether fixed or not (KCIDB's culprit "code").
DRIVER_BUGS = (Verdict.FIXED, Verdict.OPEN)


class TriageError(RoadtestError):
    pass


@dataclass(frozen=True)
class Entry:
    driver: str
    signature: str
    verdict: Verdict
    reason: str
    patch: str = ""  # fixed: its path under kernel-patches/
    upstream: str = ""
    bus: str = "i2c"

    def label(self) -> str:
        """The verdict as the summary shows it: "fixed by rtc/0002", "open", ..."""
        if self.verdict is Verdict.FIXED:
            series, name = self.patch.rsplit("/", 1) if "/" in self.patch else ("", self.patch)
            return f"fixed by {series}/{name[:4]}" if series else f"fixed by {name[:4]}"
        return self.verdict.value


_NEW = Entry("", "", Verdict.NEW, "not triaged")
_KEYS = {"driver", "bus", "signature", "verdict", "reason", "patch", "upstream"}


class Triage:
    """The verdicts of a triage file, by (driver source, bus, signature)."""

    def __init__(self, entries: Iterable[Entry] = ()) -> None:
        self.entries: dict[tuple[str, str, str], Entry] = {}
        for entry in entries:
            key = (entry.driver, entry.bus, entry.signature)
            if key in self.entries:
                raise TriageError(
                    f"{entry.driver} ({entry.bus}): {entry.signature!r} is triaged twice"
                )
            self.entries[key] = entry

    def of(self, result: DriverResult, finding: Finding) -> Entry:
        return self.entries.get((result.source, result.bus, finding.signature), _NEW)

    def counts(self, results: Sequence[DriverResult]) -> dict[Verdict, int]:
        """Distinct findings (driver, bus and signature) by verdict, in Verdict order."""
        seen: dict[tuple[str, str, str], Verdict] = {}
        for result in results:
            for finding in result.findings:
                key = (result.source, result.bus, finding.signature)
                seen[key] = self.of(result, finding).verdict
        return {v: n for v in Verdict if (n := sum(s is v for s in seen.values()))}

    @classmethod
    def load(cls, path: Path) -> Triage:
        """The file's entries; TriageError, in one line naming the file, if it cannot be
        read or an entry is malformed."""
        try:
            data = tomllib.loads(path.read_text())
        except OSError as err:
            raise TriageError(f"triage file {path}: {err.strerror or err}") from None
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as err:
            raise TriageError(f"triage file {path}: not TOML: {err}") from None
        tables = data.get("finding", [])
        if set(data) - {"finding"} or not isinstance(tables, list):
            raise TriageError(f"triage file {path}: only [[finding]] tables belong in it")
        try:
            return cls(_entry(t, n) for n, t in enumerate(tables, 1))
        except TriageError as err:
            raise TriageError(f"triage file {path}: {err}") from None


def _entry(table: Mapping[str, Any], n: int) -> Entry:
    where = f"finding {n}"
    if not isinstance(table, Mapping):
        raise TriageError(f"{where} is not a table")
    unknown = set(table) - _KEYS
    if unknown:
        raise TriageError(f"{where}: unknown key {sorted(unknown)[0]!r}")
    for key in ("driver", "signature", "verdict", "reason"):
        if not isinstance(table.get(key), str) or not table[key]:
            raise TriageError(f"{where}: {key!r} must be a non-empty string")
    for key in ("patch", "upstream"):
        if not isinstance(table.get(key, ""), str):
            raise TriageError(f"{where}: {key!r} must be a string")
    bus = table.get("bus", "i2c")
    if bus not in BUSES:
        raise TriageError(f"{where}: bus {bus!r} is not one of {', '.join(BUSES)}")
    try:
        verdict = Verdict(table["verdict"])
    except ValueError:
        raise TriageError(
            f"{where}: verdict {table['verdict']!r} is not one of "
            + ", ".join(v.value for v in Verdict if v is not Verdict.NEW)
        ) from None
    if verdict is Verdict.NEW:
        raise TriageError(f"{where}: 'new' is what an untriaged finding is, not a verdict")
    patch = str(table.get("patch", ""))
    if (verdict is Verdict.FIXED) != bool(patch):
        raise TriageError(f"{where}: a fixed finding names its patch, and only a fixed one")
    return Entry(
        driver=table["driver"],
        signature=table["signature"],
        verdict=verdict,
        reason=table["reason"],
        patch=patch,
        upstream=str(table.get("upstream", "")),
        bus=bus,
    )


def missing_patches(triage: Triage, patches_dir: Path) -> list[str]:
    """The fixed entries whose patch is not in `patches_dir` (kernel-patches/)."""
    return [
        f"{e.driver}: {e.patch}"
        for e in triage.entries.values()
        if e.verdict is Verdict.FIXED and not (patches_dir / e.patch).is_file()
    ]
