"""virtio-i2c end to end: fake frontend -> socket -> rings -> device -> models -> used ring."""

from __future__ import annotations

import logging
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import virtio_spec as spec
from fake_frontend import FakeFrontend

from roadtest.backend.i2c import I2CBus
from roadtest.backend.server import Backend
from roadtest.models import I2CModel, ModelError, SimpleSMBusModel

OK, ERR = spec.VIRTIO_I2C_MSG_OK, spec.VIRTIO_I2C_MSG_ERR


class Recorder(I2CModel):
    """Logs every call; reads return `fill` bytes; optionally raises on a given call."""

    def __init__(self, name: str = "dev", fill: int = 0xA5) -> None:
        self.name = name
        self.fill = fill
        self.calls: list[tuple[str, object]] = []
        self.raise_on: str | None = None
        self.short = False

    def start_transfer(self) -> None:
        self.calls.append(("start", None))

    def end_transfer(self) -> None:
        self.calls.append(("end", None))

    def write(self, data: bytes) -> None:
        self.calls.append(("write", data))
        if self.raise_on == "write":
            raise ModelError(f"{self.name} refuses the write")

    def read(self, length: int) -> bytes:
        self.calls.append(("read", length))
        if self.raise_on == "read":
            raise RuntimeError(f"{self.name} broke")
        return bytes([self.fill]) * (length - 1 if self.short and length else length)


class Env:
    def __init__(self, backend: Backend, fe: FakeFrontend) -> None:
        self.backend = backend
        self.fe = fe

    def xfer(
        self, *msgs: tuple[int, bytes | int], indirect: bool = False
    ) -> list[tuple[int, bytes]]:
        return self.fe.i2c_transfer(list(msgs), indirect=indirect)


@pytest.fixture
def env() -> Iterator[Env]:
    with tempfile.TemporaryDirectory(prefix="rt-i2c-") as d:
        with Backend(Path(d)) as backend:
            with FakeFrontend.connect(backend.i2c_socket) as fe:
                fe.setup(1)
                yield Env(backend, fe)


def test_write(env: Env) -> None:
    dev = Recorder()
    env.backend.i2c.attach(0x20, dev)
    assert env.xfer((0x20, b"\x01\x02\x03")) == [(OK, b"")]
    assert dev.calls == [("start", None), ("write", b"\x01\x02\x03"), ("end", None)]


def test_read(env: Env) -> None:
    dev = Recorder(fill=0x5A)
    env.backend.i2c.attach(0x20, dev)
    assert env.xfer((0x20, 4)) == [(OK, b"\x5a" * 4)]
    assert dev.calls == [("start", None), ("read", 4), ("end", None)]


@pytest.mark.parametrize("indirect", [False, True])
def test_write_then_read_in_one_transfer(env: Env, indirect: bool) -> None:
    model = SimpleSMBusModel({0x00: 0x1234, 0x01: 0xABCD}, regbytes=2, byteorder="big")
    env.backend.i2c.attach(0x48, model)
    assert env.xfer((0x48, b"\x01"), (0x48, 2), indirect=indirect) == [(OK, b""), (OK, b"\xab\xcd")]
    assert env.xfer((0x48, b"\x00\xbe\xef"), indirect=indirect) == [(OK, b"")]
    model.assert_reg_write_once(0x00, 0xBEEF)


def test_address_is_decoded_from_the_shifted_field(env: Env) -> None:
    # i2c-virtio.c sends addr << 1; a raw 0x20 in the field is device 0x10.
    dev = Recorder()
    env.backend.i2c.attach(0x10, dev)
    q = env.fe.queues[0]
    q.add([spec.VIRTIO_I2C_OUT_HDR.pack(0x20, 0, spec.VIRTIO_I2C_FLAGS_M_RD)], [1, 1])
    q.kick()
    (done,) = q.wait_used(1)
    assert done.buffers == [b"\xa5", b"\x00"]
    assert done.written == 2
    assert ("read", 1) in dev.calls


def test_zero_length_messages(env: Env) -> None:
    dev = Recorder()
    env.backend.i2c.attach(0x20, dev)
    assert env.xfer((0x20, b"")) == [(OK, b"")]
    assert env.xfer((0x20, 0)) == [(OK, b"")]
    assert [c for c in dev.calls if c[0] in ("write", "read")] == [("write", b""), ("read", 0)]
    # A zero-length probe of an empty address is a NACK, as i2cdetect expects.
    assert env.xfer((0x21, b"")) == [(ERR, b"")]


def test_no_device_is_a_nack_not_a_model_error(env: Env) -> None:
    assert env.xfer((0x33, b"\x00"), (0x33, 1)) == [(ERR, b""), (ERR, b"\xee")]
    assert env.backend.errors == []


def test_failed_message_fails_the_rest_of_its_group_only(env: Env) -> None:
    dev = Recorder()
    env.backend.i2c.attach(0x20, dev)
    # The first message NACKs: the others of the group fail without reaching the model.
    result = env.xfer((0x21, b"\x00"), (0x20, b"\x01"), (0x20, 2))
    assert [status for status, _ in result] == [ERR, ERR, ERR]
    assert dev.calls == []
    # The next group starts clean.
    assert env.xfer((0x20, b"\x01"), (0x20, 2)) == [(OK, b""), (OK, b"\xa5\xa5")]


def test_model_raising_mid_group(env: Env, caplog: pytest.LogCaptureFixture) -> None:
    dev = Recorder()
    env.backend.i2c.attach(0x20, dev)
    dev.raise_on = "read"
    with caplog.at_level(logging.ERROR, logger="roadtest.backend"):
        result = env.xfer((0x20, b"\x01"), (0x20, 2), (0x20, b"\x02"))
    assert [status for status, _ in result] == [OK, ERR, ERR]
    assert dev.calls == [("start", None), ("write", b"\x01"), ("read", 2), ("end", None)]
    (error,) = env.backend.errors
    assert error.kind == "model"
    assert "i2c 0x20 Recorder.read(2)" in error.where
    assert isinstance(error.exception, RuntimeError)
    assert "Traceback" in error.traceback and "dev broke" in str(error)
    assert any("dev broke" in r.getMessage() and r.exc_info for r in caplog.records)


# What pytest.fail, pytest.skip and the interpreter's own exits raise: not Exceptions.
BASE_EXCEPTIONS = [
    pytest.fail.Exception("the model says no"),
    pytest.skip.Exception("not modelled"),
    SystemExit(7),
    KeyboardInterrupt(),
]


@pytest.mark.parametrize("exc", BASE_EXCEPTIONS, ids=lambda e: type(e).__name__)
@pytest.mark.parametrize("where", ["read", "write", "start_transfer", "end_transfer"])
def test_base_exceptions_from_a_model_fail_the_message_not_the_backend(
    env: Env, exc: BaseException, where: str
) -> None:
    class Raising(Recorder):
        def _maybe(self, name: str) -> None:
            if name == where:
                raise exc

        def start_transfer(self) -> None:
            self._maybe("start_transfer")

        def end_transfer(self) -> None:
            self._maybe("end_transfer")

        def write(self, data: bytes) -> None:
            self._maybe("write")

        def read(self, length: int) -> bytes:
            self._maybe("read")
            return super().read(length)

    env.backend.i2c.attach(0x20, Raising())
    statuses = [status for status, _ in env.xfer((0x20, b"\x01"), (0x20, 2))]
    # end_transfer comes after the last message: the transfer itself went through.
    assert statuses == (
        [OK, OK]
        if where == "end_transfer"
        else [ERR, ERR]
        if where in ("start_transfer", "write")
        else [OK, ERR]
    )
    (error,) = env.backend.errors
    assert error.kind == "model" and error.exception is exc
    assert env.backend.running
    env.backend.i2c.attach(0x21, Recorder(fill=0x5A))
    assert env.xfer((0x21, 2)) == [(OK, b"\x5a\x5a")]  # the backend still serves


def test_model_refusing_a_write(env: Env) -> None:
    dev = Recorder()
    dev.raise_on = "write"
    env.backend.i2c.attach(0x20, dev)
    assert [s for s, _ in env.xfer((0x20, b"\x01"), (0x20, 1))] == [ERR, ERR]
    assert "refuses the write" in str(env.backend.errors[0])


def test_wrong_read_length_is_a_model_error(env: Env) -> None:
    dev = Recorder()
    dev.short = True
    env.backend.i2c.attach(0x20, dev)
    assert env.xfer((0x20, 3))[0][0] == ERR
    assert "read(3) returned 2 bytes" in str(env.backend.errors[0])


def test_read_returning_not_bytes_is_a_model_error(env: Env) -> None:
    class Bad(I2CModel):
        def read(self, length: int) -> bytes:
            return [0] * length  # type: ignore[return-value]

    env.backend.i2c.attach(0x20, Bad())
    assert env.xfer((0x20, 2))[0][0] == ERR
    assert "returned list, not bytes" in str(env.backend.errors[0])


def test_hook_errors_are_reported(env: Env) -> None:
    class BadStart(Recorder):
        def start_transfer(self) -> None:
            raise ModelError("no start")

    class BadEnd(Recorder):
        def end_transfer(self) -> None:
            raise ModelError("no end")

    env.backend.i2c.attach(0x20, BadStart())
    env.backend.i2c.attach(0x21, BadEnd())
    assert env.xfer((0x20, b"\x00"))[0][0] == ERR
    assert env.xfer((0x21, b"\x00"))[0][0] == OK  # the message itself went through
    assert [str(e).splitlines()[0] for e in env.backend.errors] == [
        "model error in i2c 0x20 BadStart.start_transfer(): ModelError: no start",
        "model error in i2c 0x21 BadEnd.end_transfer(): ModelError: no end",
    ]


def test_several_devices_on_one_bus(env: Env) -> None:
    a = Recorder("a", fill=0xAA)
    b = Recorder("b", fill=0xBB)
    env.backend.i2c.attach(0x20, a)
    env.backend.i2c.attach(0x21, b)
    result = env.xfer((0x20, 1), (0x21, 1), (0x20, b"\x07"))
    assert result == [(OK, b"\xaa"), (OK, b"\xbb"), (OK, b"")]
    # Each device sees each run of messages to its address as a transfer of its own: a
    # repeated start with another address ends what it saw.
    assert a.calls == [
        *[("start", None), ("read", 1), ("end", None)],
        *[("start", None), ("write", b"\x07"), ("end", None)],
    ]
    assert b.calls == [("start", None), ("read", 1), ("end", None)]


def test_attach_and_detach() -> None:
    bus = I2CBus()
    m = Recorder()
    bus.attach(0x20, m)
    bus.attach(0x20, m)  # the same model again is fine
    with pytest.raises(ValueError, match="already has Recorder"):
        bus.attach(0x20, Recorder())
    with pytest.raises(ValueError, match="7-bit"):
        bus.attach(0x80, Recorder())
    assert bus.get(0x20) is m
    assert bus.detach(0x20) is m
    assert bus.detach(0x20) is None


def test_detached_model_no_longer_answers(env: Env) -> None:
    env.backend.i2c.attach(0x20, Recorder())
    assert env.xfer((0x20, 1))[0][0] == OK
    env.backend.i2c.detach(0x20)
    assert env.xfer((0x20, 1))[0][0] == ERR


def test_many_transfers_keep_the_ring_consistent(env: Env) -> None:
    model = SimpleSMBusModel({i: i * 3 for i in range(16)}, regbytes=1)
    env.backend.i2c.attach(0x48, model)
    for i in range(300):  # more than the 64-entry ring, several times round
        reg = i % 16
        assert env.xfer((0x48, bytes([reg])), (0x48, 1)) == [(OK, b""), (OK, bytes([reg * 3]))]
    assert env.backend.i2c.messages == 600
    assert env.backend.errors == []


def test_malformed_request_is_a_device_error(env: Env) -> None:
    q = env.fe.queues[0]
    q.add([b"\x00\x01"], [1])  # out_hdr too short
    q.kick()
    (done,) = q.wait_used(1)
    assert done.buffers == [b"\x01"]
    (error,) = env.backend.errors
    assert error.kind == "device" and "malformed request" in str(error)


def test_debug_logging_decodes_transfers(env: Env, caplog: pytest.LogCaptureFixture) -> None:
    env.backend.i2c.attach(0x20, Recorder(fill=0x42))
    with caplog.at_level(logging.DEBUG, logger="roadtest.backend.i2c"):
        env.xfer((0x20, b"\x01\x02"), (0x20, 2), (0x30, 1))
    messages = [r.getMessage() for r in caplog.records if r.name == "roadtest.backend.i2c"]
    assert "i2c 0x20 write 2: 01 02" in messages
    assert "i2c 0x20 read 2: 42 42" in messages
    assert "i2c 0x30 read: NACK, no device" in messages


def test_nothing_logged_at_the_default_level(env: Env, caplog: pytest.LogCaptureFixture) -> None:
    env.backend.i2c.attach(0x20, Recorder())
    with caplog.at_level(logging.WARNING, logger="roadtest"):
        env.xfer((0x20, b"\x01"), (0x20, 2), (0x30, 1))
    assert caplog.records == []
