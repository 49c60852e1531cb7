"""`@pytest.mark.roadtest_kernel(RANGE, reason=...)`: the kernel versions a test holds for.

A driver changes between releases (a feature added, a bug brought in or fixed), so a test
of that behaviour holds only from, or up to, the commit that changed it. Outside its range
the test is skipped with the mark's reason (and counted in the run's summary: never
silently); a mark that is not one (a bad range, no reason) is a usage error at collection,
before any guest boots.
"""

from __future__ import annotations

import pytest

from roadtest.kernel.version_range import KernelRange, RangeError, release_version

MARK = "roadtest_kernel"
MARKER_HELP = (
    f"{MARK}(range, reason): the guest kernel versions the test holds for ('>=6.9', "
    "'>=6.1,<6.9'); the reason names the driver commit that made the difference. On "
    "another kernel the test is skipped with that reason, and the run's summary says so"
)


def kernel_ranges(item: pytest.Item) -> list[tuple[KernelRange, str]]:
    """The item's ranges and their reasons; pytest.UsageError (one line) for a bad mark."""
    found = []
    for mark in item.iter_markers(MARK):
        where = f"{item.nodeid}: @pytest.mark.{MARK}"
        if len(mark.args) != 1 or set(mark.kwargs) - {"reason"}:
            raise pytest.UsageError(
                f"{where} takes one range and reason=, as in {MARK}('>=6.9', reason='...')"
            )
        reason = mark.kwargs.get("reason")
        if not isinstance(reason, str) or not reason.strip():
            raise pytest.UsageError(
                f"{where}({mark.args[0]!r}) needs a reason: the driver commit that made "
                "the difference"
            )
        try:
            found.append((KernelRange.parse(mark.args[0]), reason))
        except RangeError as err:
            raise pytest.UsageError(f"{where}: {err}") from None
    return found


def check_marks(items: list[pytest.Item]) -> None:
    """Every collected item's marks are good ones (pytest.UsageError otherwise)."""
    for item in items:
        kernel_ranges(item)


def outside_range(item: pytest.Item, release: str) -> str | None:
    """Why the item does not run on the kernel of `release` (its skip reason), or None."""
    version = release_version(release)
    for kernel_range, reason in kernel_ranges(item):
        if version not in kernel_range:
            return f"holds for Linux {kernel_range.spec} (this kernel: {release}): {reason}"
    return None
