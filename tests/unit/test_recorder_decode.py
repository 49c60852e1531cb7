"""Register-level descriptions of trace events."""

from __future__ import annotations

import sys
from typing import Any

import pytest
import virtio_spec as spec

from roadtest.trace.decode import Decoder, differing_fields, register_names
from roadtest.trace.format import Header

TPS = "roadtest.models.tps6286x:TPS6286x"


def decoder(model: str = TPS, regbytes: int = 1, byteorder: str = "little") -> Decoder:
    return Decoder(
        Header(
            kernel="6.12",
            test="t::x",
            address=0x48,
            compatible="ti,tps62864",
            model=model,
            regbytes=regbytes,
            byteorder="big" if byteorder == "big" else "little",
        )
    )


def i2c(*msgs: tuple[str, bytes | int, int]) -> dict[str, Any]:
    """("w", data, status) or ("r", response or length, status) messages, FAIL_NEXT-joined."""
    out = []
    for i, (rw, data, status) in enumerate(msgs):
        flags = (2 if rw == "r" else 0) | (1 if i < len(msgs) - 1 else 0)
        if isinstance(data, int):
            length, data = data, b""
        else:
            length = len(data)
        out.append({"flags": flags, "len": length, "data": data, "status": status})
    return {"seq": 0, "t": 0, "kind": "i2c", "msgs": out}


def write(*data: int, status: int = 0) -> dict[str, Any]:
    return i2c(("w", bytes(data), status))


def read(reg: int, response: bytes, status: int = 0) -> dict[str, Any]:
    if status:
        return i2c(("w", bytes([reg]), status), ("r", len(response), status))
    return i2c(("w", bytes([reg]), 0), ("r", response, 0))


def test_register_names_come_from_the_models_reg_constants() -> None:
    assert register_names(TPS) == {0x01: "VOUT1", 0x02: "VOUT2", 0x03: "CONTROL", 0x05: "STATUS"}
    assert decoder().registers[0x03] == "CONTROL"


@pytest.mark.parametrize(
    "model",
    [
        "antigravity:Fly",  # a real module, outside roadtest: never imported
        "this_module_does_not_exist:X",
        "roadtest.models.no_such_chip:X",
        "roadtest..models:X",
        "roadtest.models.tps6286x; import os:X",
        "",
    ],
)
def test_only_roadtest_modules_are_imported_for_names(model: str) -> None:
    assert register_names(model) == {}
    assert "antigravity" not in sys.modules
    assert decoder(model).describe(write(0x03, 0x20)) == "write 0x03 = 0x20"


def test_register_writes_and_reads() -> None:
    d = decoder()
    assert d.describe(write(0x03, 0x20)) == "write CONTROL(0x03) = 0x20"
    assert d.describe(write(0x01, 0x50, 0x64)) == "write VOUT1(0x01)..VOUT2(0x02) = 0x50 0x64"
    assert d.describe(read(0x01, b"\x50")) == "read VOUT1(0x01) -> 0x50"
    assert d.describe(read(0x01, b"\x50\x64")) == "read VOUT1(0x01)..VOUT2(0x02) -> 0x50 0x64"
    assert d.describe(read(0x04, b"\x00")) == "read 0x04 -> 0x00"  # no name: the number
    assert d.describe(write(0x03)) == "select CONTROL(0x03)"
    assert d.describe(write(0xFF, 1, 2)) == "write 0xff..0x00 = 0x01 0x02"  # the pointer wraps


def test_failed_transfers_say_nack() -> None:
    d = decoder()
    assert d.describe(write(0x03, 0x20, status=1)) == "write CONTROL(0x03) = 0x20 -> NACK"
    assert d.describe(read(0x07, b"\x00", status=1)) == "read 0x07 -> NACK"
    assert d.describe(i2c(("w", b"\x01\x02", 1))) == "write VOUT1(0x01) = 0x02 -> NACK"


def test_sixteen_bit_registers_in_either_byte_order() -> None:
    big = decoder("", regbytes=2, byteorder="big")
    assert big.describe(read(0x01, b"\x12\x34")) == "read 0x01 -> 0x1234"
    assert big.describe(write(0x02, 0x12, 0x34, 0xAB, 0xCD)) == "write 0x02..0x03 = 0x1234 0xabcd"
    little = decoder("", regbytes=2)
    assert little.describe(read(0x01, b"\x12\x34")) == "read 0x01 -> 0x3412"
    # Not a whole number of registers: shown raw.
    assert big.describe(write(0x01, 0x12)) == "i2c w 01 12"
    assert big.describe(read(0x01, b"\x12")) == "i2c w 01 | r 1: 12"


def test_other_transfers_are_shown_raw() -> None:
    d = decoder()
    assert d.describe(i2c(("w", b"\x01\x02", 0), ("r", b"\x00\x11\x22", 0))) == (
        "i2c w 01 02 | r 3: 00 11 22"
    )
    assert d.describe(i2c(("w", b"", 0))) == "i2c w -"  # a quick command
    assert d.describe(i2c(("r", b"\x5a", 0))) == "i2c r 1: 5a"
    assert (
        d.describe(i2c(("w", b"\x01", 1), ("r", 2, 1))) == "read VOUT1(0x01)..VOUT2(0x02) -> NACK"
    )
    assert d.describe(i2c(("w", b"\x01\x02", 1), ("r", 2, 1))) == "i2c w 01 02 NACK | r 2: NACK"
    # Not an SMBus-style device: every transfer is raw.
    assert decoder(TPS, regbytes=0).describe(write(0x03, 0x20)) == "i2c w 03 20"


def test_a_read_whose_response_is_not_known_yet() -> None:
    # What the replayer builds from the driver's side of a transfer.
    event = i2c(("w", b"\x01", 0), ("r", 1, 0))
    assert decoder().describe(event) == "read VOUT1(0x01)"


def test_gpio_irq_and_marker_lines() -> None:
    d = decoder()

    def gpio(op: str, value: int, status: int = 0) -> dict[str, Any]:
        return {
            "kind": "gpio",
            "line": 5,
            "name": "irq",
            "op": op,
            "value": value,
            "status": status,
        }

    assert d.describe(gpio("unmask", 0)) == "gpio irq(5) unmask"
    assert d.describe(gpio("mask", 0)) == "gpio irq(5) mask"
    assert d.describe(gpio("set_direction", spec.VIRTIO_GPIO_DIRECTION_IN)) == (
        "gpio irq(5) set_direction IN"
    )
    assert d.describe(gpio("get_direction", spec.VIRTIO_GPIO_DIRECTION_OUT)) == (
        "gpio irq(5) get_direction -> OUT"
    )
    assert d.describe(gpio("set_value", 1)) == "gpio irq(5) set_value 1"
    assert d.describe(gpio("get_value", 0)) == "gpio irq(5) get_value -> 0"
    assert d.describe(gpio("get_value", 0, status=1)) == "gpio irq(5) get_value -> ERR"
    assert d.describe(gpio("set_value", 7, status=1)) == "gpio irq(5) set_value 7 -> ERR"
    irq = {"kind": "irq", "line": 5, "name": "irq", "level": 0}
    assert d.describe(irq) == "irq irq(5) level 0"
    assert d.describe({"kind": "marker", "what": "bind", "detail": None}) == "marker bind"
    inject = {"kind": "marker", "what": "inject", "detail": {"attr": "als_result", "value": 4660}}
    assert d.describe(inject) == "marker inject attr=als_result value=4660"
    assert d.describe({"kind": "marker", "what": "note", "detail": "hi"}) == "marker note hi"


SPEC_IRQ_TYPES = {
    name.removeprefix("VIRTIO_GPIO_IRQ_TYPE_"): value
    for name, value in vars(spec).items()
    if name.startswith("VIRTIO_GPIO_IRQ_TYPE_")
}


@pytest.mark.parametrize("name", SPEC_IRQ_TYPES)
def test_irq_types_are_shown_by_their_virtio_gpio_names(name: str) -> None:
    event = {"kind": "gpio", "line": 5, "name": "irq", "op": "irq_type", "status": 0}
    event["value"] = SPEC_IRQ_TYPES[name]
    assert decoder().describe(event) == f"gpio irq(5) irq_type {name}"


def inject(attr: str, value: object) -> dict[str, Any]:
    return {"kind": "marker", "what": "inject", "detail": {"attr": attr, "value": value}}


def test_a_register_value_the_test_set_is_shown_in_hex() -> None:
    # OPT3001 datasheet: the Result register is 16 bits (E[15:12], R[11:0]).
    opt3001 = Decoder(
        Header(
            kernel="k",
            test="t",
            address=0x44,
            compatible="ti,opt3001",
            regbytes=2,
            model="roadtest.models.opt3001:OPT3001",
        )
    )
    assert opt3001.describe(inject("result", 0x3456)) == "marker inject attr=result value=0x3456"
    assert opt3001.describe(inject("result", 1)) == "marker inject attr=result value=0x0001"
    # Not a register value: as it is.
    vcnl4000 = Decoder(
        Header(
            kernel="k",
            test="t",
            address=0x13,
            compatible="vishay,vcnl4000",
            regbytes=1,
            model="roadtest.models.vcnl4000:VCNL4000",
        )
    )
    assert vcnl4000.describe(inject("measurements_complete", False)) == (
        "marker inject attr=measurements_complete value=False"
    )
    assert vcnl4000.describe(inject("als_result", 0x1234)) == (
        "marker inject attr=als_result value=0x1234"
    )


def test_malformed_events_are_still_described() -> None:
    d = decoder()
    assert d.describe({"kind": "spmi", "x": 1}) == "spmi x=1"
    assert d.describe({"kind": "spi", "x": 1}) == "spi csNone None"
    assert d.describe({"kind": "spi", "cs": 1, "xfers": [{"tx": 5}]}) == (
        "spi cs1 mode None, None bits, None Hz: w -"
    )
    assert d.describe({"kind": "i2c", "msgs": "zz"}) == "i2c 'zz'"
    assert d.describe({"kind": "i2c", "msgs": [{"flags": "?"}]}) == "i2c w -"
    assert d.describe({}) == "None"


def test_expected_against_actual() -> None:
    d = decoder()
    assert d.describe_expected_actual(write(0x03, 0x30), write(0x03, 0x20)) == (
        "write CONTROL(0x03) = 0x20, expected 0x30"
    )
    assert d.describe_expected_actual(write(0x01, 1, 2), write(0x01, 1, 3)) == (
        "write VOUT1(0x01)..VOUT2(0x02) = 0x01 0x03, expected 0x01 0x02"
    )
    assert d.describe_expected_actual(read(0x01, b"\x50"), read(0x01, b"\x64")) == (
        "read VOUT1(0x01) -> 0x64, expected 0x50"
    )
    assert d.describe_expected_actual(write(0x03, 0x20), write(0x01, 0x20)) == (
        "got: write VOUT1(0x01) = 0x20; expected: write CONTROL(0x03) = 0x20"
    )
    assert d.describe_expected_actual(write(0x03, 0x20), write(0x03, 0x20, status=1)) == (
        "write CONTROL(0x03) = 0x20 -> NACK, expected OK"
    )
    assert d.describe_expected_actual(read(0x01, b"\x50"), write(0x01, 0x50)) == (
        "got: write VOUT1(0x01) = 0x50; expected: read VOUT1(0x01) -> 0x50"
    )
    partial = i2c(("w", b"\x02", 0), ("r", 1, 0))
    assert d.describe_expected_actual(read(0x01, b"\x50"), partial) == (
        "got: read VOUT2(0x02); expected: read VOUT1(0x01) -> 0x50"
    )


def test_expected_against_actual_for_other_kinds() -> None:
    d = decoder()
    one = {"kind": "gpio", "line": 3, "name": "reset", "op": "set_value", "value": 1, "status": 0}
    zero = {**one, "value": 0}
    assert d.describe_expected_actual(zero, one) == "gpio reset(3) set_value 1, expected 0"
    irq = {"kind": "irq", "line": 5, "name": "irq", "level": 1}
    assert d.describe_expected_actual(irq, {**irq, "level": 0}) == (
        "irq irq(5) level 0, expected level 1"
    )
    # The same description, different bytes: say which field.
    flagged = write(0x03, 0x20)
    flagged["msgs"][0]["flags"] = 4
    assert d.describe_expected_actual(write(0x03, 0x20), flagged) == (
        "got: write CONTROL(0x03) = 0x20; expected: write CONTROL(0x03) = 0x20 "
        "(they differ in msgs[0].flags)"
    )


def test_differing_fields_ignore_seq_and_time() -> None:
    a = {**write(0x03, 0x20), "seq": 4, "t": 10}
    b = {**write(0x03, 0x20), "seq": 9, "t": 99}
    assert differing_fields(a, b) == []
    assert differing_fields(a, {**b, "kind": "x"}) == ["kind"]


@pytest.mark.parametrize(
    "model",
    ["roadtest.guest.init:X", "roadtest.cli:X", "roadtest.models:X", "roadtest.models.base.x:X"],
)
def test_a_trace_cannot_import_roadtest_modules_other_than_models(model: str) -> None:
    # The guest's init (PID 1 of the guest) has no business running on the host.
    module = model.partition(":")[0]
    was_loaded = module in sys.modules
    assert register_names(model) == {}
    assert was_loaded or module not in sys.modules


SHT3X = "roadtest.models.sht3x:SHT3x"


def test_a_chip_of_commands_names_its_opcodes() -> None:
    """The SHT3x-DIS datasheet (Version 5): 0x2400 measures once (Table 9: high
    repeatability, no clock stretching), 0xF32D reads the status register (Table 17),
    0x30A2 is the soft reset."""
    d = decoder(SHT3X, regbytes=0)
    assert d.describe(write(0x24, 0x00)) == "i2c command MEASURE_SINGLE(0x2400)"
    assert d.describe(write(0x30, 0xA2, status=1)) == "i2c command SOFT_RESET(0x30A2) -> NACK"
    assert d.describe(i2c(("w", b"\xf3\x2d", 0), ("r", b"\x80\x10\xe1", 0))) == (
        "i2c command READ_STATUS(0xF32D) | r 3: 80 10 e1"
    )
    # An opcode the model does not name, with arguments; a write shorter than an opcode.
    assert d.describe(write(0x12, 0x34, 0x56)) == "i2c command 0x1234 56"
    assert d.describe(write(0x24)) == "i2c w 24"
    # A register chip is not one of commands.
    assert decoder(TPS, regbytes=0).describe(write(0x24, 0x00)) == "i2c w 24 00"
