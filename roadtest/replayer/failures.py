"""How a replay fails: what the player raises (the bus NACKs the transfer) and reports.

A failing test's headline is the failure itself, the difference between what
the driver did and what its golden trace recorded (`write T_HIGH(0x03) =
0x0f80, expected 0x0f00`), not the driver's `OSError: [Errno 5]` that the
NACK caused: the plugin raises the player's failure in its place. What follows
the headline says where (the trace, the event) and what came before.
"""

from __future__ import annotations

from roadtest.models.base import ModelError


class ReplayFailure(ModelError):
    """A golden trace's replay failed. `headline` is one line; str() is the whole report.
    `in_unbind`: it came while the device was being unbound, which a test that failed on
    its own does early (its `with guest.bound()` ends): then the test's failure stays the
    headline."""

    def __init__(self, headline: str, detail: str, in_unbind: bool = False) -> None:
        super().__init__(f"{headline}\n{detail}")
        self.headline = headline
        self.detail = detail
        self.in_unbind = in_unbind

    def with_detail(self, more: str) -> ReplayFailure:
        """The same failure (same class, same headline) with `more` lines of detail."""
        detail = f"{self.detail}\n{more}" if more else self.detail
        return type(self)(self.headline, detail, self.in_unbind)


class ReplayDivergence(ReplayFailure):
    """The driver's I/O left the trace: another transfer, one too few, other GPIO requests."""


class DamagedTrace(ReplayFailure):
    """The golden trace could not be read on: the trace's fault, not the driver's."""


class AfterFailure(ModelError):
    """A transfer after the replay had failed: NACKed too, but the failure was reported once."""
