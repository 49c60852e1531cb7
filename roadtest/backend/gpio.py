"""virtio-gpio (device id 41): requestq 0, eventq 1, and the lines models drive.

Config space: {le16 ngpio, u8 padding[2], le32 gpio_names_size}. A request
{le16 type, le16 gpio, le32 value} gets a response {u8 status, u8 value}
(GET_NAMES: {u8 status, names...}, the NUL-separated names blob).

Interrupts (VIRTIO_GPIO_F_IRQ), as drivers/gpio/gpio-virtio.c uses them: the
driver sets a line's trigger with IRQ_TYPE, and unmasks the line by posting
one eventq buffer {le16 gpio} / {u8 status} for it. The device returns that
buffer with status VALID when the line fires, which leaves the line masked
until the driver posts the next buffer; setting the trigger to NONE returns a
posted buffer with status INVALID. Here:

- an edge (per the trigger type) that happens while no buffer is posted is
  latched, and fires once when the next buffer arrives; several edges while
  masked make one interrupt;
- a level trigger fires whenever a buffer is posted while the level is
  active, so a level that stays active interrupts again after each unmask;
- changing the trigger type forgets a latched edge.

Line state is shared by the backend thread (the driver's requests) and the
test's threads (models driving inputs); it is guarded by the device lock.
"""

from __future__ import annotations

import logging
import struct
from collections.abc import Callable, Sequence
from typing import Final

from roadtest.backend.device import VirtioDevice
from roadtest.backend.virtqueue import Request, Virtqueue
from roadtest.trace.gpio import Direction, IrqType

log = logging.getLogger("roadtest.backend.gpio")

VIRTIO_ID_GPIO: Final = 41
VIRTIO_GPIO_F_IRQ: Final = 1 << 0

MSG_GET_NAMES: Final = 0x0001
MSG_GET_DIRECTION: Final = 0x0002
MSG_SET_DIRECTION: Final = 0x0003
MSG_GET_VALUE: Final = 0x0004
MSG_SET_VALUE: Final = 0x0005
MSG_IRQ_TYPE: Final = 0x0006

STATUS_OK: Final = 0x0
STATUS_ERR: Final = 0x1
IRQ_STATUS_INVALID: Final = 0x0
IRQ_STATUS_VALID: Final = 0x1

REQUESTQ: Final = 0
EVENTQ: Final = 1

CONFIG: Final = struct.Struct("<HxxI")
REQUEST: Final = struct.Struct("<HHI")
RESPONSE: Final = struct.Struct("<BB")
IRQ_REQUEST: Final = struct.Struct("<H")

_VALID: Final = bytes([IRQ_STATUS_VALID])
_INVALID: Final = bytes([IRQ_STATUS_INVALID])


_IRQ_TYPES: Final = frozenset(int(t) for t in IrqType)
_RESULTS: Final = frozenset({MSG_GET_DIRECTION, MSG_GET_VALUE})  # report the answer, not the arg
_DIRECTIONS: Final = frozenset(int(d) for d in Direction)

OutputListener = Callable[["GpioLine", bool], None]
# (line, op, value, status): what happened on a line, for recording. `op` is the
# driver's request ("set_direction", "get_direction", "set_value", "get_value",
# "irq_type", "unmask") or "input" when a model drives the line.
LineObserver = Callable[["GpioLine", str, int, int], None]

_OP_NAMES: Final = {
    MSG_GET_DIRECTION: "get_direction",
    MSG_SET_DIRECTION: "set_direction",
    MSG_GET_VALUE: "get_value",
    MSG_SET_VALUE: "set_value",
    MSG_IRQ_TYPE: "irq_type",
}


class GpioLine:
    """One line: its input level (driven by models) and what the driver configured.

    Models call `set(level)` to drive the line (from any thread) and read
    `output` (or add a listener) to see what the driver drives. The reset
    state, after every new guest: direction IN, output low, no trigger.
    """

    def __init__(self, device: VirtioGpio, index: int, name: str) -> None:
        self.device = device
        self.index = index
        self.name = name
        self._input = False
        self._listeners: list[OutputListener] = []
        self.observers: list[LineObserver] = []
        self.interrupts = 0  # times the line fired (buffers returned VALID)
        self.reset()

    def reset(self) -> None:
        self.direction = Direction.IN
        self.output = False
        self.irq_type = IrqType.NONE
        self.edge_latched = False
        self.event: Request | None = None
        # The driver turned a trigger off (IRQ_TYPE NONE after a real type): it is
        # disabling the line, and a buffer that comes now is handed back (see _post).
        self.disabled = False

    def __repr__(self) -> str:
        return (
            f"GpioLine({self.index}, {self.name!r}, {self.direction.name}, in={int(self._input)}, "
            f"out={int(self.output)}, irq={self.irq_type.name}, armed={self.event is not None})"
        )

    # The model side

    @property
    def input(self) -> bool:
        """The level models drive onto the line."""
        return self._input

    def set(self, level: bool) -> None:
        """Drive the line's input to `level`; fires the interrupt if the trigger says so."""
        level = bool(level)
        with self.device.lock:
            old = self._input
            self._input = level
            if old != level and _edge_matches(self.irq_type, level):
                self.edge_latched = True
            if log.isEnabledFor(logging.DEBUG):
                log.debug("gpio %d (%s) input %d -> %d", self.index, self.name, old, level)
            if self.observers:
                self.observe("input", int(level), STATUS_OK)
            self.device.check_irq(self)

    set_input = set

    @property
    def value(self) -> bool:
        """What the driver reads: its own output on an output line, the input otherwise."""
        return self.output if self.direction == Direction.OUT else self._input

    @property
    def armed(self) -> bool:
        """The driver has unmasked the interrupt (an eventq buffer is waiting)."""
        return self.event is not None

    def add_listener(self, listener: OutputListener) -> None:
        """Call `listener(line, value)` whenever the driver sets the line's output value."""
        with self.device.lock:
            self._listeners.append(listener)

    def remove_listener(self, listener: OutputListener) -> None:
        with self.device.lock:
            self._listeners.remove(listener)

    def observe(self, op: str, value: int, status: int) -> None:
        for observer in list(self.observers):
            try:
                observer(self, op, value, status)
            except BaseException as exc:  # even pytest.fail: the backend's thread lives on
                self.device.record_error("model", f"gpio {self.index} ({self.name}) observer", exc)

    # The driver side (device lock held)

    def _level_active(self) -> bool:
        if self.irq_type == IrqType.LEVEL_HIGH:
            return self._input
        if self.irq_type == IrqType.LEVEL_LOW:
            return not self._input
        return False

    def _set_output(self, value: bool) -> bool:
        """Drive the output; False if a model's listener raised (the request fails, as an
        I2C message does when its model raises)."""
        self.output = value
        ok = True
        for listener in list(self._listeners):
            try:
                listener(self, value)
            except BaseException as exc:  # even pytest.fail: the backend's thread lives on
                self.device.record_error(
                    "model", f"gpio {self.index} ({self.name}) output listener", exc
                )
                ok = False
        return ok


def _edge_matches(irq_type: int, level: bool) -> bool:
    if irq_type == IrqType.EDGE_BOTH:
        return True
    if irq_type == IrqType.EDGE_RISING:
        return level
    if irq_type == IrqType.EDGE_FALLING:
        return not level
    return False


DEFAULT_NGPIO = 64  # the lines of the guest's GPIO controller, unless a test asks otherwise


class VirtioGpio(VirtioDevice):
    device_id = VIRTIO_ID_GPIO
    name = "gpio"
    num_queues = 2
    device_features = VIRTIO_GPIO_F_IRQ
    # Fragments use <&gpio N flags> for lines and interrupt-parent = <&gpio> for interrupts.
    dt_properties = (
        "gpio-controller;\n#gpio-cells = <2>;\ninterrupt-controller;\n#interrupt-cells = <2>;"
    )

    def __init__(self, ngpio: int = DEFAULT_NGPIO, names: Sequence[str] | None = None) -> None:
        super().__init__()
        if not 1 <= ngpio <= 0xFFFF:
            raise ValueError(f"ngpio must be 1..65535, not {ngpio}")
        if names is None:
            names = [f"gpio{i}" for i in range(ngpio)]
        names = list(names)
        if len(names) != ngpio:
            raise ValueError(f"{len(names)} GPIO names for {ngpio} lines")
        self.ngpio = ngpio
        self.names_blob = b"".join(n.encode() + b"\0" for n in names) if any(names) else b""
        self.lines = [GpioLine(self, i, n) for i, n in enumerate(names)]

    def line(self, index: int) -> GpioLine:
        if not 0 <= index < self.ngpio:
            raise IndexError(f"GPIO line {index} does not exist (0-{self.ngpio - 1})")
        return self.lines[index]

    def get_config(self) -> bytes:
        return CONFIG.pack(self.ngpio, len(self.names_blob))

    def reset(self) -> None:
        super().reset()
        for line in self.lines:
            line.reset()

    def queue_reset(self, vq: Virtqueue) -> None:
        if vq.index == EVENTQ:
            for line in self.lines:
                line.event = None

    def queue_ready(self, vq: Virtqueue) -> None:
        self.queue_kicked(vq)
        if vq.index == EVENTQ:
            for line in self.lines:
                if line.event is not None:
                    self.check_irq(line)

    def queue_kicked(self, vq: Virtqueue) -> None:
        if vq.index == REQUESTQ:
            debug = log.isEnabledFor(logging.DEBUG)
            while (req := vq.pop()) is not None:
                vq.push(req, self._request(req, debug), notify=False)
        elif vq.index == EVENTQ:
            while (req := vq.pop()) is not None:
                self._post(vq, req)
        vq.notify()

    # Interrupts

    def _eventq(self) -> Virtqueue | None:
        queues = self.queues
        if len(queues) > EVENTQ and queues[EVENTQ].ready:
            return queues[EVENTQ]
        return None

    def check_irq(self, line: GpioLine) -> None:
        """Fire `line` if it is armed and its trigger condition holds (device lock held)."""
        if line.event is None or line.irq_type == IrqType.NONE:
            return
        if not line.edge_latched and not line._level_active():
            return
        vq = self._eventq()
        if vq is None:
            return  # the queue is stopped: fire when it is ready again
        req = line.event
        line.event = None
        line.edge_latched = False
        line.interrupts += 1
        if log.isEnabledFor(logging.DEBUG):
            log.debug("gpio %d (%s) interrupt", line.index, line.name)
        req.write(_VALID)
        vq.push(req, 1)

    def _post(self, vq: Virtqueue, req: Request) -> None:
        """The driver unmasked a line: it posted an eventq buffer for it."""
        if len(req.out) < IRQ_REQUEST.size or req.in_len < 1:
            self.record_error(
                "device",
                "gpio eventq",
                ValueError(
                    f"malformed buffer: {len(req.out)} readable and {req.in_len} writable bytes"
                ),
            )
            vq.push(req, 0, notify=False)
            return
        (gpio,) = IRQ_REQUEST.unpack_from(req.out)
        if gpio >= self.ngpio:
            self.record_error(
                "device", "gpio eventq", ValueError(f"buffer for GPIO line {gpio} of {self.ngpio}")
            )
            req.write(_INVALID)
            vq.push(req, 1, notify=False)
            return
        line = self.lines[gpio]
        if line.disabled:
            # The guest unmasked the line (kicking the eventq) just before it disabled
            # it (IRQ_TYPE NONE on the requestq), and the requestq was served first:
            # hand the buffer back as IRQ_TYPE NONE would have, or the guest thinks it
            # still queued and warns when it enables the line again.
            req.write(_INVALID)
            vq.push(req, 1)
            return
        if line.event is not None:
            self.record_error(
                "device",
                "gpio eventq",
                ValueError(f"second buffer for GPIO line {gpio}; the first is returned"),
            )
            line.event.write(_INVALID)
            vq.push(line.event, 1, notify=False)
        line.event = req
        if log.isEnabledFor(logging.DEBUG):
            log.debug("gpio %d (%s) unmasked", line.index, line.name)
        if line.observers:
            line.observe("unmask", 0, STATUS_OK)
        self.check_irq(line)

    # Requests

    def _request(self, req: Request, debug: bool) -> int:
        out = req.out
        if len(out) < REQUEST.size or req.in_len < 1:
            self.record_error(
                "device",
                "gpio requestq",
                ValueError(
                    f"malformed request: {len(out)} readable and {req.in_len} writable bytes"
                ),
            )
            return 0
        kind, gpio, value = REQUEST.unpack_from(out)
        if kind == MSG_GET_NAMES:
            names = self.names_blob[: req.in_len - 1]
            req.write(bytes([STATUS_OK]) + names)
            if debug:
                log.debug("gpio GET_NAMES: %d bytes", len(names))
            return 1 + len(names)
        status = STATUS_OK
        result = 0
        line: GpioLine | None = None
        if gpio >= self.ngpio:
            status = STATUS_ERR
        else:
            line = self.lines[gpio]
            if kind == MSG_GET_DIRECTION:
                result = line.direction
            elif kind == MSG_SET_DIRECTION:
                if value in _DIRECTIONS:
                    line.direction = Direction(value)
                else:
                    status = STATUS_ERR
            elif kind == MSG_GET_VALUE:
                result = int(line.value)
            elif kind == MSG_SET_VALUE:
                if value not in (0, 1) or not line._set_output(bool(value)):
                    status = STATUS_ERR
            elif kind == MSG_IRQ_TYPE:
                if value in _IRQ_TYPES and self.features & VIRTIO_GPIO_F_IRQ:
                    self._set_irq_type(line, IrqType(value))
                else:
                    status = STATUS_ERR
            else:
                status = STATUS_ERR
            if line.observers:
                op = _OP_NAMES.get(kind, f"request {kind}")
                line.observe(op, result if kind in _RESULTS else value, status)
        if debug:
            log.debug(
                "gpio request %d line %d value %d: status %d value %d",
                kind,
                gpio,
                value,
                status,
                result,
            )
        data = RESPONSE.pack(status, result)[: req.in_len]
        req.write(data)
        return len(data)

    def _set_irq_type(self, line: GpioLine, irq_type: IrqType) -> None:
        none = irq_type == IrqType.NONE
        line.disabled = none and (line.irq_type != IrqType.NONE or line.disabled)
        line.irq_type = irq_type
        line.edge_latched = False
        if irq_type == IrqType.NONE:
            req = line.event
            line.event = None
            vq = self._eventq()
            if req is not None and vq is not None:
                # Handed back before the IRQ_TYPE response, as the spec asks.
                req.write(_INVALID)
                vq.push(req, 1)
            return
        self.check_irq(line)
