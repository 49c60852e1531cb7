"""What a virtio device implements for the vhost-user server, and how it reports trouble.

A device never sees the protocol: the connection hands it its queues, tells
it when a queue becomes ready, is kicked, or is reset, and reads its config
space. Everything a device does runs under its `lock`, which the connection
holds while it handles a message or a kick; code on other threads (a test
driving a GPIO line) takes the same lock before it touches a queue.
"""

from __future__ import annotations

import logging
import threading
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field

from roadtest.backend.virtqueue import Virtqueue
from roadtest.models.base import ModelError

log = logging.getLogger("roadtest.backend.device")


@dataclass
class BackendError:
    """Something went wrong while serving the guest.

    kind: "model" (a model raised or broke its contract) or "device" (the
    driver sent something malformed, or the backend itself failed).
    where: what was being done, e.g. "i2c 0x48 OPT3001.read(2)".
    """

    kind: str
    where: str
    exception: BaseException
    traceback: str = field(repr=False, default="")

    @property
    def summary(self) -> str:
        """One line: where, and the first line of what was raised (a ModelError's says it
        all; str(self) has the rest)."""
        exc = self.exception
        message = str(exc).partition("\n")[0]
        if isinstance(exc, ModelError):
            return f"{self.where}: {message}"
        return f"{self.where}: {type(exc).__name__}: {message}".removesuffix(": ")

    def __str__(self) -> str:
        text = (
            f"{self.kind} error in {self.where}: {type(self.exception).__name__}: {self.exception}"
        )
        if self.traceback:
            text += "\n" + self.traceback.rstrip()
        return text


ErrorSink = Callable[[BackendError], None]


def _log_only(error: BackendError) -> None:
    pass


class VirtioDevice:
    """Base class of the devices: override the queue hooks and the config."""

    device_id: int = 0  # the virtio spec's device id
    name: str = "virtio"  # its socket (<name>.sock) and its devicetree node and label
    num_queues: int = 1
    device_features: int = 0
    # Devicetree properties of its node, besides the compatible (from device_id).
    dt_properties: str = ""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.queues: list[Virtqueue] = []
        self.features = 0
        self.report: ErrorSink = _log_only
        self.connections = 0

    # Reporting

    def record_error(self, kind: str, where: str, exc: BaseException) -> BackendError:
        """Log `exc` with its traceback and hand it to whoever collects errors.

        A ModelError is a model refusing what the driver did, on purpose and with
        its reason in the message: it gets no traceback."""
        deliberate = isinstance(exc, ModelError)
        tb = "" if deliberate else "".join(traceback.format_exception(exc))
        error = BackendError(kind, where, exc, tb)
        shown = None if deliberate else exc
        log.error("%s: %s error in %s: %s", self.name, kind, where, exc, exc_info=shown)
        try:
            self.report(error)
        except BaseException:  # a broken sink must not take the device down
            log.exception("%s: error sink failed", self.name)
        return error

    # Hooks the connection calls, with `lock` held

    def attach_queues(self, queues: list[Virtqueue]) -> None:
        """A new frontend connected; these are its queues (not yet started)."""
        self.queues = queues
        self.connections += 1

    def detach_queues(self) -> None:
        """The frontend went away."""
        self.queues = []

    def reset(self) -> None:
        """Back to the power-on state of what the driver configures (new guest, RESET_OWNER)."""
        self.features = 0

    def set_features(self, features: int) -> None:
        self.features = features

    def get_config(self) -> bytes:
        return b""

    def set_config(self, offset: int, data: bytes) -> None:
        log.warning(
            "%s: driver wrote %d bytes of read-only config at %d", self.name, len(data), offset
        )

    def queue_ready(self, vq: Virtqueue) -> None:
        """`vq` became started and enabled: process what is already available."""
        self.queue_kicked(vq)

    def queue_kicked(self, vq: Virtqueue) -> None:
        """The driver made buffers available on `vq`."""
        raise NotImplementedError

    def queue_reset(self, vq: Virtqueue) -> None:
        """`vq` was stopped or set up anew: forget requests held from it without returning them."""
