"""SMBus register models: segmentation of writes and reads, byte order, the write log."""

from __future__ import annotations

import threading
from typing import Literal

import pytest

from roadtest.models import I2CModel, ModelError, SimpleSMBusModel, SMBusModel


class DictModel(SMBusModel):
    """Any register exists; reads of unwritten ones are a KeyError (a model error)."""

    def __init__(self, regbytes: int, byteorder: Literal["little", "big"] = "little") -> None:
        super().__init__(regbytes=regbytes, byteorder=byteorder)
        self.regs: dict[int, int] = {}
        self.reads: list[int] = []

    def reg_read(self, addr: int) -> int:
        self.reads.append(addr)
        return self.regs[addr]

    def reg_write(self, addr: int, val: int) -> None:
        self.regs[addr] = val


def test_byte_registers_auto_increment() -> None:
    m = DictModel(regbytes=1)
    m.write(bytes([0x12, 0x34]))
    m.write(bytes([0x13, 0xAB, 0xCD]))
    assert m.regs == {0x12: 0x34, 0x13: 0xAB, 0x14: 0xCD}

    m.write(bytes([0x12]))
    assert m.read(1) == bytes([0x34])
    m.write(bytes([0x12]))
    assert m.read(3) == bytes([0x34, 0xAB, 0xCD])


def test_word_registers_big_endian() -> None:
    m = DictModel(regbytes=2, byteorder="big")
    m.write(bytes([0x12, 0x34, 0x56, 0xAB, 0xCD]))
    # Two registers: the pointer's and the next one (auto-increment by one register).
    assert m.regs == {0x12: 0x3456, 0x13: 0xABCD}

    m.write(bytes([0x12]))
    assert m.read(2) == bytes([0x34, 0x56])
    m.write(bytes([0x13]))
    assert m.read(2) == bytes([0xAB, 0xCD])
    m.write(bytes([0x12]))
    assert m.read(4) == bytes([0x34, 0x56, 0xAB, 0xCD])


def test_word_registers_little_endian() -> None:
    m = DictModel(regbytes=2, byteorder="little")
    m.write(bytes([0x12, 0x34, 0x56, 0xAB, 0xCD]))
    assert m.regs == {0x12: 0x5634, 0x13: 0xCDAB}
    m.write(bytes([0x12]))
    assert m.read(2) == bytes([0x34, 0x56])


def test_pointer_only_write_sets_pointer_and_writes_nothing() -> None:
    m = DictModel(regbytes=2)
    m.write(bytes([0x07]))
    assert m.reg_addr == 0x07
    assert m.regs == {}
    assert m.all_reg_writes() == []


def test_pointer_does_not_move_after_an_access() -> None:
    m = DictModel(regbytes=1)
    m.write(bytes([0x10, 1, 2]))
    assert m.reg_addr == 0x10
    assert m.read(2) == bytes([1, 2])
    assert m.read(1) == bytes([1])


@pytest.mark.parametrize("payload", [b"\x01\x02", b"\x01\x02\x03\x04"])
def test_value_bytes_not_a_whole_register_are_a_model_error(payload: bytes) -> None:
    m = DictModel(regbytes=2)
    with pytest.raises(ModelError, match="not a whole number of 2-byte registers"):
        m.write(payload)
    # The length is checked first: nothing of a malformed write is written or logged.
    assert m.regs == {}
    assert m.all_reg_writes() == []


def test_partial_read_returns_the_first_bytes_of_the_register() -> None:
    big = DictModel(regbytes=2, byteorder="big")
    big.regs = {0x00: 0x1234, 0x01: 0x5678}
    assert big.read(1) == bytes([0x12])  # an SMBus read_byte gets the high byte first
    assert big.read(3) == bytes([0x12, 0x34, 0x56])
    little = DictModel(regbytes=2, byteorder="little")
    little.regs = {0x00: 0x1234}
    assert little.read(1) == bytes([0x34])
    assert little.reads == [0]  # the partly read register was read


def test_zero_length_messages() -> None:
    m = DictModel(regbytes=1)
    m.write(b"")  # a quick command / address probe
    assert m.read(0) == b""
    assert m.reads == []
    assert m.all_reg_writes() == []


def test_register_addresses_wrap_at_0xff() -> None:
    m = DictModel(regbytes=1)
    m.write(bytes([0xFF, 1, 2]))
    assert m.regs == {0xFF: 1, 0x00: 2}
    m.write(bytes([0xFF]))
    assert m.read(2) == bytes([1, 2])


def test_regbytes_must_be_positive() -> None:
    with pytest.raises(ValueError):
        DictModel(regbytes=0)


def test_write_log_assertions() -> None:
    m = DictModel(regbytes=2)
    m.write(bytes([0x01, 0xAD, 0xDE]))
    m.write(bytes([0x02, 0xEF, 0xBE]))
    m.assert_reg_write_once(0x01, 0xDEAD)
    assert m.reg_writes(0x01) == [0xDEAD]
    assert m.all_reg_writes() == [(0x01, 0xDEAD), (0x02, 0xBEEF)]

    m.write(bytes([0x01, 0xFE, 0xCA]))
    with pytest.raises(AssertionError) as info:
        m.assert_reg_write_once(0x01, 0xDEAD)
    assert str(info.value) == (
        "expected register 0x01 to be written once with 0xdead; "
        "register 0x01 was written 2 times: 0xdead, 0xcafe"
    )
    m.assert_last_reg_write(0x01, 0xCAFE)
    assert m.get_last_reg_write(0x01) == 0xCAFE
    assert m.get_last_reg_write(0x02) == 0xBEEF

    with pytest.raises(AssertionError, match="register 0x03 was never written"):
        m.get_last_reg_write(0x03)
    with pytest.raises(AssertionError) as info:
        m.assert_last_reg_write(0x02, 0x1234)
    assert "to be 0x1234; register 0x02 was written 1 time: 0xbeef" in str(info.value)

    m.reset_reg_writes()
    assert m.reg_writes(0x01) == []
    with pytest.raises(AssertionError, match="register 0x02 was never written"):
        m.assert_last_reg_write(0x02, 0xBEEF)
    with pytest.raises(AssertionError, match="was never written"):
        m.assert_reg_write_once(0x02, 0xBEEF)


def test_write_log_records_the_attempt_even_if_the_model_refuses() -> None:
    m = SimpleSMBusModel({0x01: 0}, regbytes=1)
    with pytest.raises(ModelError, match="unknown register 0x05"):
        m.write(bytes([0x05, 0x42]))
    assert m.reg_writes(0x05) == [0x42]


def test_write_log_is_safe_across_threads() -> None:
    m = DictModel(regbytes=1)
    stop = threading.Event()

    def writer() -> None:
        i = 0
        while not stop.is_set():
            m.write(bytes([i & 0x0F, i & 0xFF]))
            i += 1

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        for _ in range(20):
            m.reg_writes(3)
            m.all_reg_writes()
    finally:
        stop.set()
        thread.join()
    assert len(m.all_reg_writes()) >= 1


def test_simple_smbus_model() -> None:
    regs = {0x01: 0x12, 0x02: 0x34}
    m = SimpleSMBusModel(regs=regs, regbytes=1)
    assert m.reg_read(0x01) == 0x12
    assert m.reg_read(0x02) == 0x34
    m.reg_write(0x01, 0x56)
    assert m.reg_read(0x01) == 0x56
    assert m.reg_read(0x02) == 0x34
    assert regs[0x01] == 0x12  # the model keeps its own copy

    with pytest.raises(ModelError, match="unknown register 0x03"):
        m.reg_write(0x03, 0x00)
    with pytest.raises(ModelError, match="unknown register 0x03"):
        m.reg_read(0x03)


def test_simple_smbus_model_word_registers() -> None:
    m = SimpleSMBusModel({0x00: 0x1234, 0x01: 0}, regbytes=2, byteorder="big")
    m.write(bytes([0x01, 0xBE, 0xEF]))
    assert m.regs[0x01] == 0xBEEF
    m.write(bytes([0x00]))
    assert m.read(4) == bytes([0x12, 0x34, 0xBE, 0xEF])
    m.assert_reg_write_once(0x01, 0xBEEF)


def test_i2c_model_defaults() -> None:
    m = I2CModel()
    m.start_transfer()
    m.end_transfer()
    assert m.irq is None
    with pytest.raises(ModelError):
        m.write(b"\x00")
    with pytest.raises(ModelError):
        m.read(1)


@pytest.mark.parametrize(
    ("regbytes", "length", "value", "shown"),
    [
        (2, 2, 0x1FFFF, "0x1ffff"),  # the issue's case: OPT3001's 16-bit RESULT
        (1, 1, 0x100, "0x100"),
        (1, 3, 0x100, "0x100"),  # a multi-register read of byte registers
        (2, 4, -1, "-0x1"),
    ],
)
def test_a_register_value_too_wide_names_model_register_and_value(
    regbytes: int, length: int, value: int, shown: str
) -> None:
    m = DictModel(regbytes=regbytes, byteorder="big")
    m.regs[0x00] = value
    m.regs[0x01] = 0
    m.write(bytes([0x00]))
    with pytest.raises(ModelError) as info:
        m.read(length)
    assert str(info.value) == (
        f"DictModel read of register 0x00 returned {shown}, which does not fit {8 * regbytes} bits"
    )
