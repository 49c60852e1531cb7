"""What a failing guest test says first: the model's own exception, the replay's
divergence, a model that did not return, or how the guest died.

Without this they read as their symptoms: a model that raised, or a driver that
left its golden trace, as the driver's `OSError: [Errno 5]`, a dead guest as
`ProtocolError: channel closed by peer`. The plugin raises these in their place
(chained to the symptom, which stays in the report) so that the headline names
the cause.
"""

from __future__ import annotations

import sys
import threading
import time
import traceback
from collections.abc import Sequence
from types import FrameType
from typing import TYPE_CHECKING

import pytest

from roadtest.guest.client import AgentTimeout
from roadtest.guest.protocol import ProtocolError
from roadtest.machine.console import PANIC
from roadtest.models.base import I2CModel, SMBusModel
from roadtest.replayer.failures import AfterFailure, ReplayFailure
from roadtest.text import count
from roadtest.trace.format import TraceWriteError

if TYPE_CHECKING:
    from roadtest.backend.device import BackendError
    from roadtest.machine.base import Machine

LAST_LINES = 12
# How long a guest whose channel broke gets to finish dying, so its last lines are in.
# Host seconds a guest whose agent channel broke may take to end (its process, every
# console line in) before its death is read. A panicking guest ends at once when idle, but
# took longer than 5 s on two cores under hogs and a make test (the verdict then missed
# the panic's lines); one that still runs after this is reported as stopped answering.
DEATH_WAIT = 30.0


class ModelFault(Exception):
    """A model raised while serving the driver (the driver saw an I/O error)."""


# The failures a guest test or a Hypothesis example ends with when the kernel reports
# trouble, crashes or hangs (examples.py names them by machine.console.REPORTS).
class KernelFailure(Exception):
    """An example made the guest kernel report trouble, crash or hang."""


class KernelPanic(KernelFailure):
    """The guest kernel panicked during the example."""


class KernelOops(KernelFailure):
    """An oops (a fault in kernel code) during the example."""


class KernelBug(KernelFailure):
    """A BUG: report during the example."""


class KernelWarning(KernelFailure):
    """A WARN() fired during the example."""


class LockdepReport(KernelFailure):
    """Lockdep found a locking problem during the example."""


class UBSANReport(KernelFailure):
    """UBSAN found undefined behaviour during the example."""


class KASANReport(KernelFailure):
    """KASAN found a bad memory access during the example."""


class GuestHang(KernelFailure):
    """An agent request of the example was not answered in time: the guest was killed."""


class GuestDied(KernelFailure):
    """The guest panicked, powered off or hung during the test (an example: died without
    a panic message)."""


class ModelBlocked(Exception):
    """A model's callback did not return: the backend's thread waits in it, so the driver
    got no answer and the agent's request timed out. The guest did not hang."""


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


# The thread the backend serves the guest's devices on (roadtest/backend/server.py).
BACKEND_THREAD = "roadtest-backend"
# How long the backend's thread must stay in one model call to be said to be stuck in it:
# a backend that serves the driver moves on to the next transfer in microseconds.
STUCK_FOR = 0.2
_STACK_SHOWN = 4  # frames of the model's stack in the message, innermost last


def blocked_model(exc: AgentTimeout, settle: float = STUCK_FOR) -> ModelBlocked | None:
    """The model whose callback holds the backend's thread, when the agent's request timed
    out (`exc`): which model, at which address, in which call (and register), and where
    it waits. None when the backend's thread is not in one model call for `settle` s
    (then the guest itself hung)."""
    for thread in threading.enumerate():
        if thread.name != BACKEND_THREAD or thread.ident is None:
            continue
        entry = _model_call(sys._current_frames().get(thread.ident))
        if entry is None:
            continue
        time.sleep(settle)
        now = sys._current_frames().get(thread.ident)
        if not _holds(now, entry):
            continue  # it returned: the backend is serving, not stuck
        assert now is not None
        return ModelBlocked(_describe_block(entry, now, exc))
    return None


def _stack(frame: FrameType | None) -> list[FrameType]:
    """The frames from the thread's outermost to `frame`."""
    frames = []
    while frame is not None:
        frames.append(frame)
        frame = frame.f_back
    return frames[::-1]


def _is_model_frame(frame: FrameType) -> bool:
    return isinstance(frame.f_locals.get("self"), I2CModel)


def _model_call(frame: FrameType | None) -> FrameType | None:
    """The outermost frame of a model's method: the call the backend made into it."""
    return next((f for f in _stack(frame) if _is_model_frame(f)), None)


def _holds(frame: FrameType | None, entry: FrameType) -> bool:
    return any(f is entry for f in _stack(frame))


def _call(frame: FrameType) -> str:
    code = frame.f_code
    names = code.co_varnames[: code.co_argcount]
    args = ", ".join(repr(frame.f_locals.get(name)) for name in names if name != "self")
    return f"{code.co_name}({args})"


def _describe_block(entry: FrameType, now: FrameType, exc: AgentTimeout) -> str:
    model = entry.f_locals["self"]
    stack = _stack(now)
    inside = stack[stack.index(entry) :]
    calls = " -> ".join(_call(f) for f in inside if _is_model_frame(f))
    where = ""
    caller = entry.f_back
    transfer = caller.f_locals.get("transfer") if caller is not None else None
    addr = getattr(transfer, "addr", None)
    if isinstance(addr, int):
        where = f" (i2c {addr:#04x})"
    register = ""
    reg = getattr(model, "reg_addr", None)
    if isinstance(model, SMBusModel) and isinstance(reg, int):
        register = f", register {model._register(reg)}"
    shown = "".join(traceback.format_list(traceback.extract_stack(now)[-_STACK_SHOWN:]))
    return (
        f"the model {type(model).__name__}{where} did not return from {calls}{register}: "
        f"the backend's thread waits in it, so the driver got no answer ({exc}); the guest "
        f"did not hang\nwhere the model waits:\n{shown.rstrip()}"
    )


def hang_or_death(
    guest: Machine, since: int, exc: BaseException | None = None, running_for: float = 0.0
) -> Exception | None:
    """What failed a test whose agent call broke (`exc`): a model that blocks the backend
    (ModelBlocked), else how the guest died or hung (GuestDied); None if it lives."""
    if isinstance(exc, AgentTimeout):
        blocked = blocked_model(exc)
        if blocked is not None:
            return blocked
    death = guest_death(guest, since, exc, running_for)
    return None if death is None else GuestDied(death)


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
        status = guest.exit_status(DEATH_WAIT)
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
