"""virtio-gpio end to end: config, names, requests, and interrupts through the eventq.

"Unmask" is what gpio-virtio.c does: post one eventq buffer for the line.
"Fires" means that buffer comes back with status VALID and the call fd rings.
The RFC's GPIO IRQ cases (level low/high, rising, falling, both) are ported
below against the real queue path.
"""

from __future__ import annotations

import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import virtio_spec as spec
from fake_frontend import FakeFrontend

from roadtest.backend.gpio import GpioLine, VirtioGpio
from roadtest.backend.server import Backend

OK, ERR = spec.VIRTIO_GPIO_STATUS_OK, spec.VIRTIO_GPIO_STATUS_ERR
VALID = bytes([spec.VIRTIO_GPIO_IRQ_STATUS_VALID])
INVALID = bytes([spec.VIRTIO_GPIO_IRQ_STATUS_INVALID])
NAMES = ["reset", "irq", "", "led"] + [f"line{i}" for i in range(4, 16)]


def wait_for(cond: Callable[[], bool], timeout: float = 2.0) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(0.0005)
    return cond()


class Env:
    def __init__(self, backend: Backend, fe: FakeFrontend) -> None:
        self.backend = backend
        self.fe = fe
        self.eventq = fe.queues[1]

    def line(self, n: int) -> GpioLine:
        return self.backend.gpio.line(n)

    def irq_type(self, n: int, irq_type: int) -> None:
        assert self.fe.gpio_value(spec.VIRTIO_GPIO_MSG_IRQ_TYPE, n, irq_type) == (OK, 0)

    def unmask(self, n: int) -> int:
        """Post the line's eventq buffer and wait until the device holds or returns it."""
        before = self.eventq.used_idx()
        head = self.fe.gpio_unmask(n)
        line = self.line(n)
        assert wait_for(lambda: line.armed or self.eventq.used_idx() != before)
        return head

    def fired(self) -> list[tuple[int, bytes]]:
        """(head, status) of eventq buffers returned since last time."""
        return [(c.head, c.buffers[0]) for c in self.eventq.get_used()]


@pytest.fixture
def env() -> Iterator[Env]:
    with tempfile.TemporaryDirectory(prefix="rt-gpio-") as d:
        with Backend(Path(d), devices=[VirtioGpio(16, NAMES)]) as backend:
            with FakeFrontend.connect(backend.gpio_socket) as fe:
                fe.setup(2)
                yield Env(backend, fe)


# Config, names, requests


def test_config_and_names(env: Env) -> None:
    blob = b"reset\0irq\0\0led\0" + b"".join(f"line{i}".encode() + b"\0" for i in range(4, 16))
    config = env.fe.get_config(8)
    assert int.from_bytes(config[0:2], "little") == 16
    assert config[2:4] == b"\0\0"
    assert int.from_bytes(config[4:8], "little") == len(blob)
    reply = env.fe.gpio_request(spec.VIRTIO_GPIO_MSG_GET_NAMES, 0, rxlen=1 + len(blob))
    assert reply == b"\x00" + blob


def test_config_space_is_offered_to_the_frontend(env: Env) -> None:
    # Virtio 1.2, 5.18.4: virtio-gpio has a config space (ngpio, gpio_names_size): a
    # vhost-user frontend reads it with GET_CONFIG, which needs protocol feature CONFIG.
    assert env.fe.protocol_features & spec.VHOST_USER_PROTOCOL_F_CONFIG


def test_no_names_means_an_empty_blob() -> None:
    from roadtest.backend.gpio import VirtioGpio

    dev = VirtioGpio(ngpio=4, names=["", "", "", ""])
    assert dev.get_config() == b"\x04\x00\x00\x00\x00\x00\x00\x00"
    assert [line.name for line in VirtioGpio(ngpio=3).lines] == ["gpio0", "gpio1", "gpio2"]
    with pytest.raises(ValueError):
        VirtioGpio(ngpio=2, names=["a"])
    with pytest.raises(IndexError):
        dev.line(4)


def test_irq_feature_is_offered(env: Env) -> None:
    assert env.backend.gpio.device_features & spec.VIRTIO_GPIO_F_IRQ
    assert env.backend.gpio.features & spec.VIRTIO_GPIO_F_IRQ


def test_direction(env: Env) -> None:
    assert env.fe.gpio_value(spec.VIRTIO_GPIO_MSG_GET_DIRECTION, 3) == (
        OK,
        spec.VIRTIO_GPIO_DIRECTION_IN,
    )
    assert env.fe.gpio_value(
        spec.VIRTIO_GPIO_MSG_SET_DIRECTION, 3, spec.VIRTIO_GPIO_DIRECTION_OUT
    ) == (OK, 0)
    assert env.fe.gpio_value(spec.VIRTIO_GPIO_MSG_GET_DIRECTION, 3) == (
        OK,
        spec.VIRTIO_GPIO_DIRECTION_OUT,
    )
    assert env.line(3).direction == spec.VIRTIO_GPIO_DIRECTION_OUT
    assert env.fe.gpio_value(
        spec.VIRTIO_GPIO_MSG_SET_DIRECTION, 3, spec.VIRTIO_GPIO_DIRECTION_NONE
    ) == (OK, 0)  # gpio free()
    assert env.fe.gpio_value(spec.VIRTIO_GPIO_MSG_GET_DIRECTION, 3) == (
        OK,
        spec.VIRTIO_GPIO_DIRECTION_NONE,
    )
    assert env.fe.gpio_value(spec.VIRTIO_GPIO_MSG_SET_DIRECTION, 3, 7)[0] == ERR


def test_bad_line_and_bad_type(env: Env) -> None:
    assert env.fe.gpio_value(spec.VIRTIO_GPIO_MSG_GET_VALUE, 16)[0] == ERR
    assert env.fe.gpio_value(0x77, 0)[0] == ERR
    assert env.fe.gpio_value(spec.VIRTIO_GPIO_MSG_IRQ_TYPE, 0, 5)[0] == ERR
    assert env.fe.gpio_value(spec.VIRTIO_GPIO_MSG_SET_VALUE, 0, 2)[0] == ERR


def test_values_inputs_and_outputs(env: Env) -> None:
    seen: list[tuple[int, bool]] = []
    env.line(3).add_listener(lambda line, value: seen.append((line.index, value)))
    # An input reads what the model drives.
    assert env.fe.gpio_value(spec.VIRTIO_GPIO_MSG_GET_VALUE, 2) == (OK, 0)
    env.line(2).set(True)
    assert env.fe.gpio_value(spec.VIRTIO_GPIO_MSG_GET_VALUE, 2) == (OK, 1)
    # gpio-virtio's direction_output: SET_VALUE, then SET_DIRECTION OUT.
    assert env.fe.gpio_value(spec.VIRTIO_GPIO_MSG_SET_VALUE, 3, 1) == (OK, 0)
    assert env.fe.gpio_value(
        spec.VIRTIO_GPIO_MSG_SET_DIRECTION, 3, spec.VIRTIO_GPIO_DIRECTION_OUT
    ) == (OK, 0)
    assert env.line(3).output is True and env.line(3).value is True
    env.line(3).set(False)  # a model driving an output line does not change what it reads
    assert env.fe.gpio_value(spec.VIRTIO_GPIO_MSG_GET_VALUE, 3) == (OK, 1)
    assert env.fe.gpio_value(spec.VIRTIO_GPIO_MSG_SET_VALUE, 3, 0) == (OK, 0)
    assert env.fe.gpio_value(spec.VIRTIO_GPIO_MSG_GET_VALUE, 3) == (OK, 0)
    assert seen == [(3, True), (3, False)]


@pytest.mark.parametrize(
    "exc",
    [
        RuntimeError("listener broke"),
        pytest.fail.Exception("listener broke"),
        SystemExit("listener broke"),
        KeyboardInterrupt("listener broke"),
    ],
    ids=lambda e: type(e).__name__,
)
def test_listener_errors_are_model_errors(env: Env, exc: BaseException) -> None:
    def bad(line: GpioLine, value: bool) -> None:
        raise exc

    env.line(1).add_listener(bad)
    # The driver's request fails, as an I2C message does when its model raises.
    assert env.fe.gpio_value(spec.VIRTIO_GPIO_MSG_SET_VALUE, 1, 1) == (ERR, 0)
    (error,) = env.backend.errors
    assert error.kind == "model" and "listener broke" in str(error)
    assert env.backend.running
    env.line(1).remove_listener(bad)
    assert env.fe.gpio_value(spec.VIRTIO_GPIO_MSG_SET_VALUE, 1, 0) == (OK, 0)
    assert len(env.backend.errors) == 1


def test_observer_base_exceptions_are_model_errors(env: Env) -> None:
    def bad(line: GpioLine, op: str, value: int, status: int) -> None:
        pytest.fail("observer broke")

    env.line(1).observers.append(bad)
    assert env.fe.gpio_value(spec.VIRTIO_GPIO_MSG_GET_VALUE, 1) == (OK, 0)
    (error,) = env.backend.errors
    assert error.kind == "model" and "observer broke" in str(error)
    env.line(1).observers.remove(bad)
    assert env.fe.gpio_value(spec.VIRTIO_GPIO_MSG_GET_VALUE, 1) == (
        OK,
        0,
    )  # the backend still serves


# Interrupts: the RFC's cases


def test_irq_level_low(env: Env) -> None:
    env.irq_type(1, spec.VIRTIO_GPIO_IRQ_TYPE_LEVEL_LOW)
    assert env.fired() == []
    head = env.unmask(1)  # the input is low: fires at once
    assert env.fired() == [(head, VALID)]
    env.line(1).set(True)
    env.unmask(1)
    assert env.fired() == []
    assert env.line(1).armed


def test_irq_level_high(env: Env) -> None:
    env.irq_type(2, spec.VIRTIO_GPIO_IRQ_TYPE_LEVEL_HIGH)
    head = env.unmask(2)
    assert env.fired() == []
    env.line(2).set(True)
    assert env.fired() == [(head, VALID)]
    assert env.eventq.called()
    env.line(2).set(False)
    env.unmask(2)
    assert env.fired() == []


def test_irq_rising(env: Env) -> None:
    env.irq_type(15, spec.VIRTIO_GPIO_IRQ_TYPE_EDGE_RISING)
    env.line(15).set(False)
    env.line(15).set(True)  # latched while masked
    assert env.fired() == []
    head = env.unmask(15)
    assert env.fired() == [(head, VALID)]
    env.line(15).set(False)
    env.line(15).set(True)
    head = env.unmask(15)
    assert env.fired() == [(head, VALID)]


def test_irq_falling(env: Env) -> None:
    env.irq_type(0, spec.VIRTIO_GPIO_IRQ_TYPE_EDGE_FALLING)
    head = env.unmask(0)
    env.line(0).set(False)  # no change: no edge
    env.line(0).set(True)  # rising: not this trigger
    assert env.fired() == []
    env.line(0).set(False)
    assert env.fired() == [(head, VALID)]
    env.line(0).set(True)
    env.line(0).set(False)
    env.line(0).set(True)  # one falling edge while masked...
    head = env.unmask(0)
    assert env.fired() == [(head, VALID)]  # ...one interrupt
    env.unmask(0)
    assert env.fired() == []


def test_irq_both(env: Env) -> None:
    env.irq_type(8, spec.VIRTIO_GPIO_IRQ_TYPE_EDGE_BOTH)
    head = env.unmask(8)
    env.line(8).set(False)
    env.line(8).set(True)
    assert env.fired() == [(head, VALID)]
    env.line(8).set(False)  # latched: masked since the interrupt
    assert env.fired() == []
    env.line(8).set(True)
    head = env.unmask(8)
    assert env.fired() == [(head, VALID)]  # several edges while masked: one interrupt
    assert env.line(8).interrupts == 2


# Interrupts: more


def test_level_retriggers_after_each_unmask(env: Env) -> None:
    env.line(4).set(True)
    env.irq_type(4, spec.VIRTIO_GPIO_IRQ_TYPE_LEVEL_HIGH)
    for _ in range(3):
        head = env.unmask(4)
        assert env.fired() == [(head, VALID)]
    env.line(4).set(False)
    env.unmask(4)
    assert env.fired() == []
    env.line(4).set(True)
    assert len(env.fired()) == 1


def test_irq_type_none_returns_the_buffer_invalid(env: Env) -> None:
    env.irq_type(5, spec.VIRTIO_GPIO_IRQ_TYPE_EDGE_RISING)
    head = env.unmask(5)
    assert env.line(5).armed
    env.irq_type(5, spec.VIRTIO_GPIO_IRQ_TYPE_NONE)
    assert env.fired() == [(head, INVALID)]
    assert not env.line(5).armed
    env.line(5).set(True)
    assert env.fired() == []
    env.irq_type(5, spec.VIRTIO_GPIO_IRQ_TYPE_NONE)  # nothing posted: nothing returned
    assert env.fired() == []


def test_buffer_posted_with_no_trigger_is_held(env: Env) -> None:
    # gpio-virtio can enable a line whose type is still NONE; returning the buffer
    # INVALID then would make the driver requeue it forever.
    env.line(6).set(True)
    env.unmask(6)
    assert env.fired() == []
    assert env.line(6).armed
    env.irq_type(6, spec.VIRTIO_GPIO_IRQ_TYPE_LEVEL_HIGH)
    assert len(env.fired()) == 1


def test_buffer_posted_after_the_trigger_was_turned_off_is_returned(env: Env) -> None:
    # free_irq racing the oneshot thread's unmask: the guest posts the buffer (eventq)
    # and then disables the line (requestq), and the requestq is served first. The
    # buffer comes back INVALID, as IRQ_TYPE NONE would have returned it.
    env.irq_type(8, spec.VIRTIO_GPIO_IRQ_TYPE_LEVEL_LOW)
    env.irq_type(8, spec.VIRTIO_GPIO_IRQ_TYPE_NONE)
    head = env.unmask(8)
    assert env.fired() == [(head, INVALID)]
    assert not env.line(8).armed
    # Enabled again: buffers are held and fire as before.
    env.irq_type(8, spec.VIRTIO_GPIO_IRQ_TYPE_LEVEL_HIGH)
    env.unmask(8)
    assert env.fired() == []
    env.line(8).set(True)
    assert len(env.fired()) == 1


def test_changing_the_trigger_forgets_a_latched_edge(env: Env) -> None:
    env.irq_type(7, spec.VIRTIO_GPIO_IRQ_TYPE_EDGE_RISING)
    env.line(7).set(True)
    assert env.line(7).edge_latched
    env.irq_type(7, spec.VIRTIO_GPIO_IRQ_TYPE_EDGE_FALLING)
    assert not env.line(7).edge_latched
    env.unmask(7)
    assert env.fired() == []


def test_irq_type_needs_the_irq_feature() -> None:
    with tempfile.TemporaryDirectory(prefix="rt-gpio-") as d:
        with Backend(Path(d)) as backend, FakeFrontend.connect(backend.gpio_socket) as fe:
            fe.setup(2, features=spec.VIRTIO_F_VERSION_1 | spec.VHOST_USER_F_PROTOCOL_FEATURES)
            assert backend.gpio.features == 0
            assert (
                fe.gpio_value(
                    spec.VIRTIO_GPIO_MSG_IRQ_TYPE, 0, spec.VIRTIO_GPIO_IRQ_TYPE_EDGE_RISING
                )[0]
                == ERR
            )
            assert fe.gpio_value(spec.VIRTIO_GPIO_MSG_GET_VALUE, 0) == (OK, 0)


def test_eventq_buffer_for_a_bad_line(env: Env) -> None:
    env.fe.gpio_unmask(99)
    (done,) = env.eventq.wait_used(1)
    assert done.buffers == [INVALID]
    assert "GPIO line 99" in str(env.backend.errors[0])


def test_second_buffer_for_a_line_returns_the_first(env: Env) -> None:
    env.irq_type(9, spec.VIRTIO_GPIO_IRQ_TYPE_EDGE_RISING)
    first = env.unmask(9)
    second = env.fe.gpio_unmask(9)
    (done,) = env.eventq.wait_used(1)
    assert (done.head, done.buffers) == (first, [INVALID])
    env.line(9).set(True)
    assert env.fired() == [(second, VALID)]
    assert env.backend.errors[0].kind == "device"


def test_interrupt_waits_for_a_disabled_queue(env: Env) -> None:
    env.irq_type(10, spec.VIRTIO_GPIO_IRQ_TYPE_EDGE_RISING)
    head = env.unmask(10)
    env.fe.protocol_features |= spec.VHOST_USER_PROTOCOL_F_REPLY_ACK
    disable = spec.VHOST_USER_VRING_STATE.pack(1, 0)
    assert env.fe.message(spec.VHOST_USER_SET_VRING_ENABLE, disable) == 0
    env.line(10).set(True)
    assert env.fired() == []  # a suspended guest: the edge stays latched
    enable = spec.VHOST_USER_VRING_STATE.pack(1, 1)
    assert env.fe.message(spec.VHOST_USER_SET_VRING_ENABLE, enable) == 0
    assert env.fired() == [(head, VALID)]


def test_lines_reset_for_a_new_guest(env: Env) -> None:
    env.irq_type(11, spec.VIRTIO_GPIO_IRQ_TYPE_LEVEL_LOW)
    env.fe.gpio_value(spec.VIRTIO_GPIO_MSG_SET_DIRECTION, 11, spec.VIRTIO_GPIO_DIRECTION_OUT)
    env.line(11).set(True)
    env.unmask(11)
    env.fe.close()
    line = env.line(11)
    assert wait_for(lambda: env.backend.gpio.queues == [])
    assert (line.direction, line.irq_type, line.armed) == (
        spec.VIRTIO_GPIO_DIRECTION_IN,
        spec.VIRTIO_GPIO_IRQ_TYPE_NONE,
        False,
    )
    assert line.input is True  # what the model drives survives the guest
    line.set(False)  # no guest: nothing to tell, nothing breaks
    with FakeFrontend.connect(env.backend.gpio_socket) as fe:
        fe.setup(2)
        assert fe.gpio_value(spec.VIRTIO_GPIO_MSG_GET_DIRECTION, 11) == (
            OK,
            spec.VIRTIO_GPIO_DIRECTION_IN,
        )


def test_lines_driven_from_other_threads(env: Env) -> None:
    env.irq_type(12, spec.VIRTIO_GPIO_IRQ_TYPE_EDGE_BOTH)
    line = env.line(12)
    stop = threading.Event()

    def toggler() -> None:
        level = False
        while not stop.is_set():
            level = not level
            line.set(level)

    thread = threading.Thread(target=toggler)
    thread.start()
    try:
        for _ in range(50):
            env.fe.gpio_unmask(12)
            env.eventq.wait_used(1)
            env.fe.gpio_value(spec.VIRTIO_GPIO_MSG_GET_VALUE, 12)
    finally:
        stop.set()
        thread.join()
    assert line.interrupts == 50
    assert env.backend.errors == []


def test_malformed_eventq_buffer(env: Env) -> None:
    env.eventq.add([b"\x01"], [1])  # one byte, not a le16
    env.eventq.kick()
    (done,) = env.eventq.wait_used(1)
    assert done.written == 0
    assert "malformed buffer" in str(env.backend.errors[0])
