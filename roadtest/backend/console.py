"""virtio-console (virtio 1.x, section 5.3), one port: the agent's channel under simulated time.

A UML tty fed from a host fd takes input whenever the host writes, at no
defined point of the guest's time (arch/um/drivers/chan_kern.c says so). This
device carries the same byte stream through virtqueues instead, so input reaches
the guest as an in-band notification, at one instant of the calendar. The host
side is a socketpair: `host_end` is the agent's channel for the test.

receiveq (0) takes the host's bytes into the buffers the driver posted;
transmitq (1) gives the driver's bytes to the host, once the guest has nothing
left to do at the instant they came (as the test's input waits for): what the
guest does after the agent replied (an interrupt thread woken during the request)
then comes before whatever the test does next, on every run. The calendar learns
from the stream whether the agent works on a request or waits for the next one
(`Controller.agent_idle`): the protocol (roadtest.guest.protocol) is length-
prefixed messages, the agent's "ready" first, then one reply per request.
"""

from __future__ import annotations

import logging
import socket
import struct

from roadtest.backend.device import VirtioDevice
from roadtest.backend.virtqueue import Virtqueue
from roadtest.simtime.controller import Controller

log = logging.getLogger("roadtest.backend.console")

RECEIVEQ = 0
TRANSMITQ = 1
_LENGTH = struct.Struct("<I")


class MessageCounter:
    """Counts the length-prefixed messages that start and end in a byte stream."""

    def __init__(self) -> None:
        self.started = 0
        self.ended = 0
        self._header = b""
        self._left = 0  # bytes of the current message's body still to come

    def feed(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            if self._left:
                n = min(self._left, len(view))
                self._left -= n
                view = view[n:]
                if not self._left:
                    self.ended += 1
                continue
            if not self._header:
                self.started += 1
            need = _LENGTH.size - len(self._header)
            self._header += bytes(view[:need])
            view = view[need:]
            if len(self._header) == _LENGTH.size:
                (self._left,) = _LENGTH.unpack(self._header)
                self._header = b""
                if not self._left:
                    self.ended += 1


class VirtioConsole(VirtioDevice):
    device_id = 3
    name = "console"
    num_queues = 2

    def __init__(self, controller: Controller) -> None:
        super().__init__()
        self.controller = controller
        self._device_end: socket.socket | None = None
        self._guests_end: socket.socket | None = None
        self._pending = bytearray()  # the host's bytes not yet in the guest's buffers
        self._to_guest = MessageCounter()
        self._from_guest = MessageCounter()
        self._delivery_queued = False
        self._outgoing = bytearray()  # the guest's bytes not yet handed to the host's end
        self._handover_queued = False
        # The request (by count) from which the agent powers the guest off and waits for
        # nobody: time then runs on for the shutdown.
        self._leaving_at: int | None = None

    def new_channel(self) -> socket.socket:
        """A fresh channel for the next guest's agent (from any thread, the backend running):
        the host's end, which the caller owns."""
        host_end, device_end = socket.socketpair(
            socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC
        )
        device_end.setblocking(False)
        with self.lock:
            old, self._device_end = self._device_end, device_end
            self._pending.clear()
            self._outgoing.clear()
            self._handover_queued = False  # the last guest's may never run
            self._to_guest = MessageCounter()
            self._from_guest = MessageCounter()
            self._leaving_at = None
        loop = self.controller.loop

        def swap() -> None:
            if old is not None:
                loop.remove_reader(old.fileno())
                old.close()
            loop.add_reader(device_end.fileno(), lambda: self._host_readable(device_end))

        self.controller.soon(swap)
        return host_end

    def attach_queues(self, queues: list[Virtqueue]) -> None:
        super().attach_queues(queues)
        # hvc's put_chars spins on the used ring (virtio_console.c, __send_to_port).
        queues[TRANSMITQ].driver_spins = True
        self._guests_end = self._device_end  # the channel of the guest that connected

    def detach_queues(self) -> None:
        """The guest went away (poweroff, crash, killed): the host's end of its channel sees
        it close, as it would a UML line's, and a call in flight fails now. (The next
        guest's channel may exist already: it is another.)"""
        super().detach_queues()
        device_end, self._guests_end = self._guests_end, None
        if device_end is not None:
            if device_end is self._device_end:
                self._hand_over()  # what the guest said last, before its end
            try:
                device_end.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def agent_leaves(self) -> None:
        """The agent's next request is to power the guest off (from any thread): from its
        delivery on, time runs for the guest's shutdown. (Not before: the guest would run
        through its timers for as long as the host takes to send it.)"""
        with self.lock:
            self._leaving_at = self._to_guest.started + 1  # the next request, poweroff
        self.controller.soon(self._update_agent)

    def close(self) -> None:
        """The backend stops (its loop's thread has ended)."""
        if self._device_end is not None:
            self._device_end.close()
            self._device_end = None

    # The host's side (loop thread)

    def _host_readable(self, device_end: socket.socket) -> None:
        try:
            data = device_end.recv(65536)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data or device_end is not self._device_end:
            self.controller.loop.remove_reader(device_end.fileno())
            return
        with self.lock:
            self._pending += data
        self._queue_delivery()

    def _queue_delivery(self) -> None:
        if self._delivery_queued:
            return
        self._delivery_queued = True
        # Input is the test's: it reaches the guest once the guest has nothing left to do now.
        self.controller.at(self.controller.now, self._deliver, after_guest=True)

    def _deliver(self) -> None:
        with self.lock:
            self._delivery_queued = False
            vq = self.queues[RECEIVEQ] if len(self.queues) > RECEIVEQ else None
            if vq is None or not vq.ready or not self._pending:
                return
            delivered = 0
            while self._pending and (req := vq.pop()) is not None:
                n = min(req.in_len, len(self._pending))
                chunk = bytes(self._pending[:n])
                req.write(chunk)
                vq.push(req, n, notify=False)
                del self._pending[:n]
                self._to_guest.feed(chunk)
                delivered += n
            if delivered:
                self._update_agent()
                vq.notify()

    def _update_agent(self) -> None:
        # The agent's "ready" counts as the reply to a request it had before boot.
        working = self._to_guest.started + 1 - self._from_guest.ended
        leaving = self._leaving_at is not None and self._to_guest.started >= self._leaving_at
        self.controller.agent_idle(working <= 0 and not leaving)

    # The driver's side (lock held)

    def queue_ready(self, vq: Virtqueue) -> None:
        self.queue_kicked(vq)

    def queue_kicked(self, vq: Virtqueue) -> None:
        if vq.index == RECEIVEQ:
            if self._pending:
                self.controller.soon(self._queue_delivery)  # new buffers for what waits
            return
        out = bytearray()
        while (req := vq.pop()) is not None:
            out += req.out
            vq.push(req, 0, notify=False)
        vq.notify()
        if out and self._device_end is not None:
            self._from_guest.feed(bytes(out))
            # Before the test can have the reply: it may read the calendar once it has.
            self._update_agent()
            self._outgoing += out
            if not self._handover_queued:
                self._handover_queued = True
                self.controller.soon(self._queue_handover)

    def _queue_handover(self) -> None:
        # Output is the test's input too: the test acts on it, so it waits as input does.
        self.controller.at(self.controller.now, self._hand_over, after_guest=True)

    def _hand_over(self) -> None:
        with self.lock:
            self._handover_queued = False
            out, self._outgoing = bytes(self._outgoing), bytearray()
            device_end = self._device_end
        if not out or device_end is None:
            return
        try:
            device_end.setblocking(True)
            device_end.sendall(out)
        except OSError as err:
            log.warning("console: the host's end is gone: %s", err)
        finally:
            device_end.setblocking(False)
