"""The kernel versions a test holds for (`@pytest.mark.roadtest_kernel(">=6.9", reason=...)`),
and the guest kernel's version from its release ("6.1.192-roadtest").

A range is one or more comparisons joined by commas, all of which must hold: `>=6.9`,
`<6.13`, `>=6.1, <6.9`. The operators are `>=`, `>`, `<=` and `<`; a version is
MAJOR.MINOR or MAJOR.MINOR.SUBLEVEL, a missing sublevel being 0 (`<6.9` holds for every
6.8.y, `>=6.9` for 6.9 and every later release).
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable
from dataclasses import dataclass

Version = tuple[int, int, int]

_OPERATORS: dict[str, Callable[[Version, Version], bool]] = {
    ">=": operator.ge,
    ">": operator.gt,
    "<=": operator.le,
    "<": operator.lt,
}
_CLAUSE = re.compile(r"^\s*(>=|<=|>|<)\s*(\d+)\.(\d+)(?:\.(\d+))?\s*$")
_RELEASE = re.compile(r"^(\d+)\.(\d+)(?:\.(\d+))?")


class RangeError(ValueError):
    """A range string that is not one (its message says why, in one line)."""


@dataclass(frozen=True)
class KernelRange:
    spec: str  # as written in the mark
    clauses: tuple[tuple[str, Version], ...]

    @classmethod
    def parse(cls, spec: object) -> KernelRange:
        if not isinstance(spec, str) or not spec.strip():
            raise RangeError(f"{spec!r} is not a version range (one like '>=6.9' or '>=6.1,<6.9')")
        clauses = []
        for part in spec.split(","):
            match = _CLAUSE.match(part)
            if match is None:
                raise RangeError(
                    f"{part.strip()!r} in {spec!r} is not a comparison with a version "
                    "(>=, >, <= or < and MAJOR.MINOR[.SUBLEVEL], as in '>=6.9')"
                )
            op, major, minor, sub = match.groups()
            clauses.append((op, (int(major), int(minor), int(sub or 0))))
        return cls(spec, tuple(clauses))

    def __contains__(self, version: Version) -> bool:
        return all(_OPERATORS[op](version, bound) for op, bound in self.clauses)


def release_version(release: str) -> Version:
    """The version a kernel release names: "6.1.192-roadtest" is (6, 1, 192). ValueError
    for a release that does not start with one."""
    match = _RELEASE.match(release.strip())
    if match is None:
        raise ValueError(f"kernel release {release!r} does not start with a version")
    major, minor, sub = match.groups()
    return int(major), int(minor), int(sub or 0)
