"""What a failing guest test says first: the model's own exception, the replay's
divergence, or how the guest died.

Without this they read as their symptoms: a model that raised, or a driver that
left its golden trace, as the driver's `OSError: [Errno 5]`, a dead guest as
`ProtocolError: channel closed by peer`. The plugin raises these in their place
(chained to the symptom, which stays in the report) so that the headline names
the cause.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import pytest

from roadtest.guest.client import AgentTimeout
from roadtest.guest.protocol import ProtocolError
from roadtest.machine.console import PANIC
from roadtest.replayer.failures import AfterFailure, ReplayFailure
from roadtest.text import count
from roadtest.trace.format import TraceWriteError

if TYPE_CHECKING:
    from roadtest.backend.device import BackendError
    from roadtest.machine.base import Machine

LAST_LINES = 12
# How long a guest whose channel broke gets to finish dying, so its last lines are in.
_EXIT_WAIT = 5.0


class ModelFault(Exception):
    """A model raised while serving the driver (the driver saw an I/O error)."""


class GuestDied(Exception):
    """The guest panicked, powered off or hung during the test."""


class TestTimeout(Exception):
    """The test ran past its time limit; its guest was stopped."""


def timed_out(guest: Machine, since: int, limit: float) -> TestTimeout:
    """The report of a test whose guest was stopped at its time limit."""
    lines = guest.console.lines_since(since) if guest.console is not None else []
    tail = "\n".join(f"  {line}" for line in lines[-LAST_LINES:]) or "  (none)"
    return TestTimeout(
        f"the test ran past its limit of {limit:g} s (pytest-timeout's `timeout`; "
        f"@pytest.mark.timeout(N) changes it for one test): its guest was stopped\n"
        f"last kernel lines:\n{tail}"
    )


def model_outcome(errors: Sequence[BackendError], note: str = "") -> BaseException | None:
    """What reports `errors`: a trace the recorder could not write (a full disk: it stops
    the run), else the model's own pytest.skip, else the replay's failure when the first
    is one, else a ModelFault naming the first.

    A model that calls pytest.skip says the case cannot be tested (not modelled); the
    driver's I/O error that followed is a consequence, so the test is skipped, as it
    would be had the test itself skipped. `note` is a line to add below the headline."""
    errors = [e for e in errors if not isinstance(e.exception, AfterFailure)]
    if not errors:
        return None
    for error in errors:
        if isinstance(error.exception, TraceWriteError):
            return error.exception  # the host's disk, not the model nor the driver
    for error in errors:
        if isinstance(error.exception, pytest.skip.Exception):
            return pytest.skip.Exception(
                f"{error.where}: {error.exception.msg}", _use_item_location=True
            )
    first = errors[0].exception
    if isinstance(first, ReplayFailure):
        return replay_outcome([first, *(e for e in errors[1:])], note)
    headline = errors[0].summary
    kinds = {error.kind for error in errors}
    if len(errors) > 1:
        noun = "more model error" if kinds == {"model"} else "more error"
        headline += f" (and {count(len(errors) - 1, noun)}, below)"
    if note:
        headline += "\n" + note
    # A "device" error is the guest's virtio driver breaking the protocol, or the backend
    # failing: not the model. Said so, the user does not look for a bug in the model.
    what = {
        frozenset({"model"}): "a model raised while serving the driver",
        frozenset({"device"}): _DEVICE_ERROR,
    }.get(frozenset(kinds), f"a model raised, and {_DEVICE_ERROR}")
    details = "\n".join(str(e) for e in errors)
    return ModelFault(f"{headline}\n{what}:\n{details}")


_DEVICE_ERROR = (
    "the virtio backend could not serve what the guest sent (not a model's fault: "
    "a virtio driver or roadtest bug)"
)


def replay_outcome(problems: Sequence[object], note: str = "") -> ReplayFailure:
    """The first of `problems`, a ReplayFailure (headline: the divergence), with `note` and
    the others (exceptions, backend errors) below it."""
    first = problems[0]
    assert isinstance(first, ReplayFailure)
    more = [note] if note else []
    if len(problems) > 1:
        more.append(f"and {count(len(problems) - 1, 'more problem')}:")
        more += [str(p) for p in problems[1:]]
    return first.with_detail("\n".join(more))


def is_guest_death(exc: BaseException) -> bool:
    """Does `exc`, from an agent call, mean the guest is gone?"""
    return isinstance(exc, (ProtocolError, ConnectionError, EOFError))


def guest_death(
    guest: Machine, since: int, exc: BaseException | None = None, running_for: float = 0.0
) -> str | None:
    """How the guest died (a headline, then its last console lines); None if it lives.
    `running_for`: how long the guest had run without waiting under simulated time
    (`Controller.running_for`), which tells a busy loop from a guest that waits."""
    if isinstance(exc, AgentTimeout):
        headline = f"the guest hung: {exc}"
        if running_for >= 1.0:
            headline += (
                f"; its clock stood still: it ran {running_for:.0f} s without waiting, in a "
                "loop that neither sleeps nor reads the clock, which nothing preempts under "
                "simulated time (a process's busy loop does this: --roadtest-time=travel "
                "runs one)"
            )
    elif guest.alive:
        return None
    else:
        status = guest.exit_status(_EXIT_WAIT)
        lines = guest.console.lines_since(since) if guest.console is not None else []
        panic = next((m.group(0) for line in lines if (m := PANIC.search(line))), None)
        if panic is not None:
            headline = f"the guest kernel panicked: {panic}"
        elif any("reboot: Power down" in line for line in lines):
            headline = "the guest powered off"
        elif any("reboot: Restarting system" in line for line in lines):
            headline = "the guest rebooted"
        elif status is None:
            headline = (
                f"the guest stopped answering: its agent channel broke, {guest.name} still runs"
            )
        else:
            headline = f"the guest died: {guest.name} exited with status {status}"
    lines = guest.console.lines_since(since) if guest.console is not None else []
    tail = "\n".join(f"  {line}" for line in lines[-LAST_LINES:]) or "  (none)"
    return f"{headline}\nlast kernel lines:\n{tail}"
