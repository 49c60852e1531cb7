"""virtio-spi end to end: fake frontend -> socket -> ring -> device -> handlers -> used ring.

Every request is laid out by spi_frontend from the specification's text; every expected
value comes from the specification (or, for the model, from what the test says the chip
shifts out), never from roadtest.backend.spi.
"""

from __future__ import annotations

import logging
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import spi_frontend as spi
import virtio_spec
from fake_frontend import FakeFrontend
from spi_frontend import Xfer

from roadtest.backend.server import Backend
from roadtest.backend.spi import VirtioSpi
from roadtest.backend.spi_transfer import SPIMessage
from roadtest.models import ModelError, SPIModel

OK, PARAM_ERR, TRANS_ERR = (
    spi.VIRTIO_SPI_TRANS_OK,
    spi.VIRTIO_SPI_PARAM_ERR,
    spi.VIRTIO_SPI_TRANS_ERR,
)


class Chip(SPIModel):
    """Logs every call; answers each transfer with `answer` (cycled), or raises."""

    def __init__(self, answer: bytes = b"\xa5", raise_on: int | None = None) -> None:
        self.answer = answer
        self.raise_on = raise_on  # the index of the transfer (counted over its life) to fail
        self.calls: list[tuple[str, object]] = []
        self.seen = 0

    def select(self) -> None:
        self.calls.append(("select", None))

    def deselect(self) -> None:
        self.calls.append(("deselect", None))

    def transfer(self, tx: bytes | None, length: int, mode: int, bits_per_word: int) -> bytes:
        self.calls.append(("transfer", (tx, length, mode, bits_per_word)))
        index = self.seen
        self.seen += 1
        if index == self.raise_on:
            raise RuntimeError("the chip broke")
        return bytes(self.answer[i % len(self.answer)] for i in range(length))


class Echo(SPIModel):
    """Full duplex: shifts back each byte it received, plus one (a chip that echoes)."""

    def transfer(self, tx: bytes | None, length: int, mode: int, bits_per_word: int) -> bytes:
        assert tx is not None
        return bytes((b + 1) & 0xFF for b in tx)


class Served:
    def __init__(self, backend: Backend, fe: FakeFrontend) -> None:
        self.backend = backend
        self.fe = fe

    @property
    def device(self) -> VirtioSpi:
        return self.backend.device(VirtioSpi)

    def xfer(self, *xfers: Xfer, indirect: bool = False) -> list[tuple[int, bytes]]:
        return spi.transfer(self.fe.queues[0], *xfers, indirect=indirect)


def serve(device: VirtioSpi) -> Iterator[Served]:
    with tempfile.TemporaryDirectory(prefix="rt-spi-") as d:
        with Backend(Path(d), devices=[device]) as backend:
            with FakeFrontend.connect(backend.socket("spi")) as fe:
                fe.setup(1)
                yield Served(backend, fe)


@pytest.fixture
def env() -> Iterator[Served]:
    yield from serve(VirtioSpi())


# Config space


def test_config_space_says_what_the_bus_offers() -> None:
    device = VirtioSpi(
        cs_max_number=3,
        cs_change_supported=False,
        tx_nbits_supported=spi.NBITS_DUAL,
        rx_nbits_supported=spi.NBITS_QUAD | spi.NBITS_OCTAL,
        bits_per_word_mask=(1 << 7) | (1 << 15),  # 8 and 16 bits
        mode_func_supported=spi.MF_CPHA_0 | spi.MF_CPOL_0 | spi.MF_CPOL_1,
        max_freq_hz=10_000_000,
        max_word_delay_ns=100,
        max_cs_setup_ns=200,
        max_cs_hold_ns=300,
        max_cs_inactive_ns=400,
    )
    for served in serve(device):
        raw = served.fe.get_config(spi.VIRTIO_SPI_CONFIG.size)
    # The bytes, as the spec lays them out: four u8, then seven le32.
    assert raw == bytes(
        [3, 0, 0b001, 0b110]
        + [0x80, 0x80, 0, 0]
        + [0b1101, 0, 0, 0]
        + list((10_000_000).to_bytes(4, "little"))
        + [100, 0, 0, 0, 200, 0, 0, 0, 44, 1, 0, 0, 144, 1, 0, 0]
    )


def test_the_default_config_offers_every_mode_and_a_maximum_frequency(env: Served) -> None:
    cfg = spi.config(env.fe.get_config(spi.VIRTIO_SPI_CONFIG.size))
    assert cfg["cs_max_number"] >= 2 and cfg["cs_change_supported"] == 1
    # All four SPI modes, CS_HIGH, LSB first and loopback (bits 0-6).
    assert cfg["mode_func_supported"] == 0x7F
    assert cfg["max_freq_hz"] > 0
    assert env.backend.device(VirtioSpi).device_id == spi.VIRTIO_ID_SPI


# Messages


def test_write_then_read_is_one_message(env: Served) -> None:
    chip = Chip(answer=b"\x12\x34")
    env.device.attach(1, chip)
    result = env.xfer(Xfer(cs=1, tx=b"\x80"), Xfer(cs=1, rx=2))
    assert result == [(OK, b""), (OK, b"\x12\x34")]
    assert chip.calls == [
        ("select", None),
        ("transfer", (b"\x80", 1, 0, 8)),
        ("transfer", (None, 2, 0, 8)),
        ("deselect", None),
    ]


@pytest.mark.parametrize("indirect", [False, True])
def test_full_duplex(env: Served, indirect: bool) -> None:
    env.device.attach(0, Echo())
    assert env.xfer(Xfer(cs=0, tx=b"\x01\x02\xff", rx=3), indirect=indirect) == [
        (OK, b"\x02\x03\x00")
    ]


def test_the_device_leaves_tx_as_it_was(env: Served) -> None:
    # "The Virtio SPI device MUST NOT change the data in tx_buf."
    env.device.attach(0, Echo())
    q = env.fe.queues[0]
    head = spi.queue(q, Xfer(cs=0, tx=b"\x10\x20", rx=2))
    descs, _ = q.pending[head]
    q.kick()
    q.wait_used(1)
    desc = virtio_spec.VIRTQ_DESC
    addr, length, _, _ = env.fe.unpack(desc, q.desc + desc.size * descs[1])
    assert env.fe.read(addr, length) == b"\x10\x20"


def test_several_chip_selects_each_reach_their_own_device(env: Served) -> None:
    a, b = Chip(answer=b"\xaa"), Chip(answer=b"\xbb")
    env.device.attach(0, a)
    env.device.attach(5, b)
    assert env.xfer(Xfer(cs=0, rx=1), Xfer(cs=5, rx=1), Xfer(cs=0, rx=1)) == [
        (OK, b"\xaa"),
        (OK, b"\xbb"),
        (OK, b"\xaa"),
    ]
    # A change of chip select ends a message: three messages, two on cs 0.
    assert [c for c, _ in a.calls].count("select") == 2
    assert [c for c, _ in b.calls].count("select") == 1


def test_attaching_twice_on_one_chip_select_is_refused() -> None:
    device = VirtioSpi(cs_max_number=4)
    device.attach(2, Chip())
    with pytest.raises(ValueError, match="already has Chip"):
        device.attach(2, Chip())
    with pytest.raises(ValueError, match="not in 0-3"):
        device.attach(4, Chip())
    assert isinstance(device.detach(2), Chip)
    assert device.detach(2) is None


def test_cs_change_ends_a_message(env: Served) -> None:
    # cs_change = 1: "chipselect deasserted then asserted again" before the next transfer.
    chip = Chip()
    env.device.attach(0, chip)
    env.xfer(
        Xfer(cs=0, tx=b"\x01"),
        Xfer(cs=0, tx=b"\x02", cs_change=1),
        Xfer(cs=0, tx=b"\x03"),
        Xfer(cs=0, rx=1),
    )
    kinds = [c for c, _ in chip.calls]
    assert kinds == [
        "select",
        "transfer",
        "transfer",
        "deselect",
        "select",
        "transfer",
        "transfer",
        "deselect",
    ]


def test_each_kick_ends_its_message(env: Served) -> None:
    chip = Chip()
    env.device.attach(0, chip)
    env.xfer(Xfer(cs=0, tx=b"\x01"))
    env.xfer(Xfer(cs=0, tx=b"\x02"))
    assert [c for c, _ in chip.calls] == ["select", "transfer", "deselect"] * 2


def test_a_transfer_with_no_tx_and_one_with_no_rx(env: Served) -> None:
    chip = Chip(answer=b"\x5a")
    env.device.attach(3, chip)
    # Half-duplex write: head, tx_buf, result. Half-duplex read: head, rx_buf, result.
    assert env.xfer(Xfer(cs=3, tx=b"\x01\x02")) == [(OK, b"")]
    assert env.xfer(Xfer(cs=3, rx=3)) == [(OK, b"\x5a\x5a\x5a")]
    assert ("transfer", (b"\x01\x02", 2, 0, 8)) in chip.calls
    assert ("transfer", (None, 3, 0, 8)) in chip.calls


def test_a_half_duplex_write_returns_only_the_result(env: Served) -> None:
    env.device.attach(0, Chip())
    q = env.fe.queues[0]
    spi.queue(q, Xfer(cs=0, tx=b"\x01"))
    q.kick()
    (done,) = q.wait_used(1)
    assert done.buffers == [bytes([OK])]
    assert done.written == 1


def test_sixteen_bit_words_reach_the_chip_most_significant_byte_first(env: Served) -> None:
    # The guest's memory holds each 16-bit word little-endian; the wire carries its MSB first.
    chip = Chip(answer=b"\x12\x34")
    env.device.attach(0, chip)
    assert env.xfer(Xfer(cs=0, tx=b"\xcd\xab", rx=2, bits_per_word=16)) == [(OK, b"\x34\x12")]
    assert ("transfer", (b"\xab\xcd", 2, 0, 16)) in chip.calls


def test_nothing_on_the_chip_select_reads_an_idle_line(env: Served) -> None:
    # SPI has no acknowledge: the transfer completes and MISO, pulled up, reads ones.
    assert env.xfer(Xfer(cs=6, tx=b"\x9f", rx=1), Xfer(cs=6, rx=2)) == [
        (OK, b"\xff"),
        (OK, b"\xff\xff"),
    ]
    assert env.backend.errors == []


def test_loopback_reads_back_what_was_sent(env: Served) -> None:
    chip = Chip()
    env.device.attach(0, chip)
    assert env.xfer(Xfer(cs=0, tx=b"\x11\x22", rx=2, mode=spi.LOOP)) == [(OK, b"\x11\x22")]
    assert chip.calls == []


def test_the_mode_reaches_the_chip(env: Served) -> None:
    chip = Chip()
    env.device.attach(0, chip)
    env.xfer(Xfer(cs=0, rx=1, mode=spi.CPHA | spi.CPOL | spi.CS_HIGH))
    assert ("transfer", (None, 1, 0b111, 8)) in chip.calls


# PARAM_ERR: what the config does not offer, or what is not valid at all


def restricted() -> VirtioSpi:
    return VirtioSpi(
        cs_max_number=2,
        cs_change_supported=False,
        tx_nbits_supported=spi.NBITS_DUAL,
        rx_nbits_supported=0,
        bits_per_word_mask=1 << 7,  # 8 bits only
        mode_func_supported=spi.MF_CPHA_0 | spi.MF_CPOL_0,  # mode 0 only
        max_freq_hz=1_000_000,
        max_word_delay_ns=0,
        max_cs_setup_ns=10,
        max_cs_hold_ns=10,
        max_cs_inactive_ns=10,
    )


@pytest.fixture
def strict() -> Iterator[Served]:
    yield from serve(restricted())


REFUSED = {
    "chip select beyond cs_max_number": Xfer(cs=2, rx=1),
    "bits_per_word not in the mask": Xfer(rx=2, bits_per_word=16),
    "bits_per_word 0": Xfer(rx=1, bits_per_word=0),
    "bits_per_word above 32": Xfer(rx=4, bits_per_word=33),
    "cs_change unsupported": Xfer(rx=1, cs_change=1),
    "tx_nbits QUAD not offered": Xfer(tx=b"\x00", tx_nbits=4),
    "rx_nbits DUAL not offered": Xfer(rx=1, rx_nbits=2),
    "tx_nbits 3 is not a value": Xfer(tx=b"\x00", tx_nbits=3),
    "CPHA=1 not offered": Xfer(rx=1, mode=spi.CPHA),
    "CPOL=1 not offered": Xfer(rx=1, mode=spi.CPOL),
    "CS_HIGH not offered": Xfer(rx=1, mode=spi.CS_HIGH),
    "LSB_FIRST not offered": Xfer(rx=1, mode=spi.LSB_FIRST),
    "LOOP not offered": Xfer(rx=1, mode=spi.LOOP),
    "a mode bit the spec does not define": Xfer(rx=1, mode=1 << 5),
    "freq above max_freq_hz": Xfer(rx=1, freq=1_000_001),
    "word delay, unsupported (max 0)": Xfer(rx=2, word_delay_ns=1),
    "cs_setup_ns above its maximum": Xfer(rx=1, cs_setup_ns=11),
    "cs_delay_hold_ns above its maximum": Xfer(rx=1, cs_delay_hold_ns=11),
    "cs_change_delay_inactive_ns above its maximum": Xfer(rx=1, cs_change_delay_inactive_ns=11),
    "tx and rx of different lengths": Xfer(tx=b"\x00\x00", rx=3),
}


@pytest.mark.parametrize("xfer", REFUSED.values(), ids=REFUSED.keys())
def test_param_err(strict: Served, xfer: Xfer) -> None:
    chip0, chip1 = Chip(), Chip()
    strict.device.attach(0, chip0)
    strict.device.attach(1, chip1)
    assert strict.xfer(xfer) == [(PARAM_ERR, b"")]
    assert chip0.calls == [] and chip1.calls == []
    (error,) = strict.backend.errors
    assert error.kind == "device"
    # The bus goes on: a transfer it can do still works.
    assert strict.xfer(Xfer(cs=0, rx=1, freq=1_000_000, cs_setup_ns=10)) == [(OK, b"\xa5")]


def test_what_the_config_offers_is_taken(strict: Served) -> None:
    strict.device.attach(1, Echo())
    assert strict.xfer(Xfer(cs=1, tx=b"\x07", rx=1, tx_nbits=2, rx_nbits=1)) == [(OK, b"\x08")]


def test_a_refused_transfer_refuses_its_whole_message(env: Served) -> None:
    chip = Chip()
    env.device.attach(0, chip)
    result = env.xfer(Xfer(cs=0, tx=b"\x01"), Xfer(cs=0, rx=2, tx=b"\x00"), Xfer(cs=0, rx=1))
    assert result == [(TRANS_ERR, b""), (PARAM_ERR, b""), (TRANS_ERR, b"")]
    assert chip.calls == []


def test_a_length_that_is_not_whole_words_is_refused(env: Served) -> None:
    env.device.attach(0, Chip())
    assert env.xfer(Xfer(cs=0, rx=3, bits_per_word=16)) == [(PARAM_ERR, b"")]


# TRANS_ERR: the handler failed


def test_a_model_that_raises_fails_its_transfer_and_the_rest_of_its_message(
    env: Served, caplog: pytest.LogCaptureFixture
) -> None:
    chip = Chip(raise_on=1)
    env.device.attach(0, chip)
    with caplog.at_level(logging.ERROR, logger="roadtest.backend"):
        result = env.xfer(Xfer(cs=0, rx=1), Xfer(cs=0, rx=1), Xfer(cs=0, rx=1))
    assert result == [(OK, b"\xa5"), (TRANS_ERR, b""), (TRANS_ERR, b"")]
    assert [c for c, _ in chip.calls] == ["select", "transfer", "transfer", "deselect"]
    (error,) = env.backend.errors
    assert error.kind == "model" and "the chip broke" in str(error)
    # The backend's thread lives on.
    assert env.xfer(Xfer(cs=0, rx=1)) == [(OK, b"\xa5")]


def test_a_model_error_is_reported_without_a_traceback(env: Served) -> None:
    class Refuses(SPIModel):
        def transfer(self, tx: bytes | None, length: int, mode: int, bits_per_word: int) -> bytes:
            raise ModelError("Refuses: wrong mode")

    env.device.attach(0, Refuses())
    assert env.xfer(Xfer(cs=0, rx=1)) == [(TRANS_ERR, b"")]
    (error,) = env.backend.errors
    assert error.traceback == "" and "wrong mode" in error.summary


def test_a_short_answer_is_a_trans_err(env: Served) -> None:
    class Short(SPIModel):
        def transfer(self, tx: bytes | None, length: int, mode: int, bits_per_word: int) -> bytes:
            return b"\x00" * (length - 1)

    env.device.attach(0, Short())
    assert env.xfer(Xfer(cs=0, rx=2)) == [(TRANS_ERR, b"")]
    (error,) = env.backend.errors
    assert "returned 1 byte" in str(error)


def test_a_handler_raising_a_base_exception_does_not_stop_the_backend(env: Served) -> None:
    class Exits:
        name = "Exits"

        def message(self, message: SPIMessage) -> None:
            raise SystemExit(3)

    env.device.attach(0, Exits())
    assert env.xfer(Xfer(cs=0, rx=1)) == [(TRANS_ERR, b"")]
    env.device.detach(0)
    env.device.attach(0, Chip(answer=b"\x01"))
    assert env.xfer(Xfer(cs=0, rx=1)) == [(OK, b"\x01")]


# Malformed chains


def test_a_head_too_short_is_answered_and_the_thread_lives_on(env: Served) -> None:
    env.device.attach(0, Chip())
    q = env.fe.queues[0]
    q.add([Xfer(cs=0).head()[:31]], [1])
    q.kick()
    (done,) = q.wait_used(1)
    assert done.buffers == [bytes([PARAM_ERR])]
    (error,) = env.backend.errors
    assert error.kind == "device" and "malformed" in str(error)
    assert env.xfer(Xfer(cs=0, rx=1)) == [(OK, b"\xa5")]


def test_a_chain_without_a_result_byte_is_returned_and_the_thread_lives_on(env: Served) -> None:
    env.device.attach(0, Chip())
    q = env.fe.queues[0]
    q.add([Xfer(cs=0).head(), b"\x01"], [])
    q.kick()
    (done,) = q.wait_used(1)
    assert done.written == 0
    (error,) = env.backend.errors
    assert error.kind == "device"
    assert env.xfer(Xfer(cs=0, rx=1)) == [(OK, b"\xa5")]


def test_a_malformed_request_ends_the_message_before_it(env: Served) -> None:
    chip = Chip()
    env.device.attach(0, chip)
    q = env.fe.queues[0]
    spi.queue(q, Xfer(cs=0, tx=b"\x01"))
    q.add([b"\x00" * 8], [1])
    spi.queue(q, Xfer(cs=0, tx=b"\x02"))
    q.kick()
    q.wait_used(3)
    assert [c for c, _ in chip.calls] == ["select", "transfer", "deselect"] * 2
