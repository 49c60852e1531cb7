"""The guest half of tests/guest/test_i2c_virtio_interrupted.py, which runs it as the test
file of a pytest run of its own, on the sanitizer kernel.

A process in the guest makes an I2C_RDWR transfer on /dev/i2c-N (i2c-dev, built in) to an
address where the virtio-i2c device holds every request back unanswered; the guest sends
that process SIGTERM while it waits; then the device answers. The requests, and the buffers
the device writes the answer into, are the device's from when they are queued until it
answers (the virtio spec's used ring): the guest must not have freed them by then. KASAN
reports it if it has, and the plugin fails the test on the report. The next transfer must
then work.

The backend answers a kick at once (VirtioI2C.queue_kicked, on the backend's thread), and a
model that sleeps in its callback stops the whole backend, the agent's channel with it
(test_blocking_model.py). `Held` takes the device's kicks instead and keeps the requests;
`release` hands them, in the order they came, to the device's own kick handler, which
answers them as it would have.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from types import TracebackType
from typing import cast

from roadtest.backend.i2c import VirtioI2C
from roadtest.backend.i2c_transfer import Transfer
from roadtest.backend.virtqueue import Request, Virtqueue
from roadtest.testing import RoadtestSession
from roadtest.trace.i2c import VIRTIO_I2C_MSG_OK

ADDR = 0x2C  # no device of the session's is there: this run declares none
ANSWER = bytes([0x5A, 0xA5])  # what a read of the register at ADDR returns
PYTHON = "/usr/bin/python3"  # the guest's root is the host's (hostfs, read-only)
HOST_LIMIT = 30.0  # host seconds: only there so that nothing waits forever

# struct i2c_msg and struct i2c_rdwr_ioctl_data (include/uapi/linux/i2c.h,
# i2c-dev.h): a write of the register number, 0, then a read of two bytes, as one
# I2C_RDWR (0x0707) transfer. Prints the ioctl's result (the messages transferred) and
# the bytes read.
I2C_RDWR_PROGRAM = r"""
import ctypes, fcntl, os, sys

class Msg(ctypes.Structure):
    _fields_ = [("addr", ctypes.c_uint16), ("flags", ctypes.c_uint16),
                ("len", ctypes.c_uint16), ("buf", ctypes.c_void_p)]

class Data(ctypes.Structure):
    _fields_ = [("msgs", ctypes.POINTER(Msg)), ("nmsgs", ctypes.c_uint32)]

I2C_M_RD = 0x0001
addr = int(sys.argv[2], 0)
register = (ctypes.c_char * 1)(0)
value = (ctypes.c_char * 2)()
msgs = (Msg * 2)(
    Msg(addr, 0, 1, ctypes.addressof(register)),
    Msg(addr, I2C_M_RD, 2, ctypes.addressof(value)),
)
fd = os.open(sys.argv[1], os.O_RDWR)
done = fcntl.ioctl(fd, 0x0707, ctypes.addressof(Data(msgs, 2)))
print(done, value.raw.hex())
"""


class Register:
    """A device at ADDR whose every read returns ANSWER."""

    name = "Register"

    def transfer(self, transfer: Transfer) -> None:
        for msg in transfer.messages:
            if msg.reading:
                msg.data = ANSWER[: msg.length]
            msg.status = VIRTIO_I2C_MSG_OK


class _Replay:
    """The requests a kick brought, handed to the device's kick handler in place of
    their virtqueue: it pops them from here, and answers on the virtqueue."""

    def __init__(self, vq: Virtqueue, requests: list[Request]) -> None:
        self._vq = vq
        self._requests = deque(requests)
        self.signal = vq.signal

    def pop(self) -> Request | None:
        return self._requests.popleft() if self._requests else None

    def push(self, req: Request, written: int, notify: bool = True) -> None:
        self._vq.push(req, written, notify)

    def notify(self, after: int = 0) -> None:
        self._vq.notify(after)


class Held:
    """While in its block, the I2C device keeps the requests it is given, unanswered,
    until `release` (which the block's end does, if the test did not)."""

    def __init__(self, device: VirtioI2C) -> None:
        self.device = device
        self.kicks: list[tuple[Virtqueue, list[Request]]] = []
        self.arrived = threading.Event()  # a request came

    def __enter__(self) -> Held:
        with self.device.lock:
            self.device.queue_kicked = self._keep  # type: ignore[method-assign]
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()

    def _keep(self, vq: Virtqueue) -> None:
        # The connection calls it with the device's lock held, on the backend's thread.
        requests = []
        while (req := vq.pop()) is not None:
            requests.append(req)
        if requests:
            self.kicks.append((vq, requests))
            self.arrived.set()

    def release(self) -> None:
        """Answer what was kept, as the device would have, and keep nothing more."""
        with self.device.lock:
            if "queue_kicked" not in vars(self.device):
                return
            del self.device.queue_kicked  # the class's own again
            for vq, requests in self.kicks:
                if vq.ready:  # not if the guest that queued them is gone
                    self.device.queue_kicked(cast(Virtqueue, _Replay(vq, requests)))
            self.kicks.clear()


def ended(guest: RoadtestSession, pid: int) -> int:
    """The exit status of a process the agent spawned, once it ended."""
    deadline = time.monotonic() + HOST_LIMIT
    while (status := guest.agent.reap(pid)) is None:
        assert time.monotonic() < deadline, f"process {pid} did not end"
        time.sleep(0.05)
    return status


def test_a_signal_while_the_device_holds_a_transfer(guest: RoadtestSession) -> None:
    bus = f"/dev/i2c-{guest.i2c_bus_number}"
    transfer = [PYTHON, "-I", "-c", I2C_RDWR_PROGRAM, bus, hex(ADDR)]
    device = guest.backend.i2c
    device.attach(ADDR, Register())
    try:
        with Held(device) as held:
            pid = guest.agent.spawn(transfer, tty="/dev/null", cwd="/", env={})
            assert held.arrived.wait(HOST_LIMIT), "the transfer never reached the device"
            rc, _, err = guest.agent.run(["/bin/kill", "-TERM", str(pid)])
            assert rc == 0, err
            # Time for the signal to end the process, if the kernel lets it go now.
            guest.sleep(0.5)
            held.release()
        # Time for the answer to reach the guest (its interrupt comes after the bus time
        # of the transfer) before anything else runs there: a kernel that freed the
        # requests reads them now, while KASAN's quarantine still keeps that memory from
        # being handed out again (starting a Python process frees enough to recycle it).
        guest.sleep(0.1)
        ended(guest, pid)  # by the signal, or after the answer: either is right
        # The device answered the interrupted transfer: the next one gets its own answer.
        rc, out, err = guest.agent.run(transfer)
        assert (rc, out.split()) == (0, [b"2", ANSWER.hex().encode()]), err
    finally:
        device.detach(ADDR)
