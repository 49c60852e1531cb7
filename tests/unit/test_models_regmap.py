"""Register maps (roadtest.models.regmap): declarations, and the behaviour a model takes from them.

Expected behaviour is the access types as datasheets define them: read-only
registers refuse writes, write-only ones reads, write-1-to-clear bits clear where
a 1 is written; and the ported models' registers are their datasheets'.
"""

from __future__ import annotations

import pytest

from roadtest.models import Input, ModelError
from roadtest.models.opt3001 import OPT3001
from roadtest.models.regmap import (
    RO,
    W1C,
    WO,
    Field,
    MappedSMBusModel,
    Register,
    RegisterMap,
)
from roadtest.trace.decode import register_names

MODE = Field("MODE", 2, 1, values={"OFF": 0, "ONCE": 1, "RUN": 2})
CHIP = RegisterMap(
    [
        Register("ID", 0x00, 0xA5, RO),
        Register(
            "CTRL",
            0x01,
            0x80,
            fields=(
                Field("READY", 7, access=RO),
                Field("NA", 6, 5, reserved=True),
                Field("FLAG", 4, access=W1C),
                MODE,
                Field("EN", 0),
            ),
        ),
        Register("STATUS", 0x02, 0xF0, W1C),
        Register("KEY", 0x03, 0x00, WO),
    ]
)


class Chip(MappedSMBusModel):
    register_map = CHIP
    level = Input[int](bits=8, initial=7)


def read(m: MappedSMBusModel, reg: int) -> int:
    m.write(bytes([reg]))
    return m.read(1)[0]


def write(m: MappedSMBusModel, reg: int, value: int) -> None:
    m.write(bytes([reg, value]))


# Declarations


@pytest.mark.parametrize(
    ("declare", "message"),
    [
        (lambda: RegisterMap([Register("A", 1), Register("B", 1)]), "A and B share address 0x01"),
        (lambda: RegisterMap([Register("A", 1), Register("A", 2)]), "two registers are named A"),
        (lambda: RegisterMap([Register("A", 1, 0x100)]), "reset value 0x100 does not fit 8 bits"),
        (
            lambda: RegisterMap([Register("A", 1, fields=(Field("F", 8, 7),))]),
            "field F \\(bits 8..7\\) is outside its 8 bits",
        ),
        (
            lambda: Register("A", 1, fields=(Field("F", 3, 1), Field("G", 1, 0))),
            "overlaps another field",
        ),
        (
            lambda: Register("A", 1, fields=(Field("F", 1), Field("F", 2))),
            "two fields have one name",
        ),
        (lambda: Field("F", 1, 0, values={"BIG": 4}), "value BIG=4 does not fit 2 bits"),
        (lambda: Field("F", 0, 1), "bits 0..1 are not msb..lsb"),
        (lambda: Field("F", 0, access=WO), "may be read-only or write-1-to-clear"),
        (lambda: RegisterMap([Register("A", 1)], width=12), "width 12 is not a whole number"),
        (lambda: Register("not a name", 1), "its name is not an identifier"),
    ],
)
def test_declaration_mistakes_are_value_errors(declare: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        declare()  # type: ignore[operator]


def test_a_mapped_models_inputs_declare_their_power_on_value() -> None:
    with pytest.raises(TypeError, match="Forgetful.level: a mapped model's Input declares"):

        class Forgetful(MappedSMBusModel):
            register_map = CHIP
            level = Input[int]()

    with pytest.raises(TypeError, match="Variant.extra: a mapped model's Input declares"):

        class Variant(Chip):  # the map inherited, an input of its own
            extra = Input[int]()


def test_registers_by_address_and_name_with_the_maps_width() -> None:
    regmap = RegisterMap([Register("A", 0x10, 0x1234), Register("B", 0x11, width=8)], width=16)
    assert regmap[0x10] is regmap["A"]
    assert (regmap["A"].bits, regmap["B"].bits) == (16, 8)
    assert regmap["A"].byteorder == "little"
    assert regmap.get(0x12) is None and "A" in regmap and 0x11 in regmap
    assert [r.name for r in regmap] == ["A", "B"]
    assert regmap.names() == {0x10: "A", 0x11: "B"}
    assert regmap.reset_values() == {0x10: 0x1234, 0x11: 0}
    with pytest.raises(KeyError):
        regmap["C"]


def test_field_helpers() -> None:
    assert MODE.mask == 0b110 and MODE.max == 3 and MODE.width == 2
    assert MODE.get(0b1_1_10_1) == 0b10
    assert MODE.set(0xFF, "ONCE") == 0b1111_1011
    assert MODE.set(0x00, 3) == 0b110
    with pytest.raises(ValueError, match="does not fit 2 bits"):
        MODE.set(0, 4)
    assert CHIP["CTRL"].field("MODE") is MODE
    assert CHIP["CTRL"].reserved_mask == 0b0110_0000


# Behaviour from the map


def test_registers_start_at_their_reset_values() -> None:
    m = Chip()
    assert [read(m, a) for a in (0, 1, 2)] == [0xA5, 0x80, 0xF0]


def test_a_write_to_a_read_only_register_is_a_model_error_naming_it() -> None:
    m = Chip()
    with pytest.raises(ModelError, match=r"Chip: write of 0x01 to read-only register 0x00 \(ID\)"):
        write(m, 0x00, 0x01)
    assert read(m, 0x00) == 0xA5


def test_a_read_of_a_write_only_register_is_a_model_error_naming_it() -> None:
    m = Chip()
    write(m, 0x03, 0x5A)
    with pytest.raises(ModelError, match=r"Chip: read of write-only register 0x03 \(KEY\)"):
        read(m, 0x03)


def test_undefined_registers_are_model_errors() -> None:
    m = Chip()
    with pytest.raises(ModelError, match="Chip: read of undefined register 0x04"):
        read(m, 0x04)
    with pytest.raises(ModelError, match="Chip: write of 0x00 to undefined register 0x04"):
        write(m, 0x04, 0)


def test_write_1_to_clear_clears_the_bits_written_as_1() -> None:
    m = Chip()
    write(m, 0x02, 0b1010_0000)
    assert read(m, 0x02) == 0b0101_0000
    write(m, 0x02, 0x00)
    assert read(m, 0x02) == 0b0101_0000


def test_fields_keep_their_own_access_inside_a_read_write_register() -> None:
    m = Chip()
    m.regs[0x01] |= 0x10  # the chip sets FLAG (READY is set at reset)
    write(m, 0x01, 0x05)  # READY and FLAG written 0: both stay; MODE=RUN, EN
    assert read(m, 0x01) == 0x80 | 0x10 | 0x05
    write(m, 0x01, 0x15)  # FLAG written 1: clears
    assert read(m, 0x01) == 0x80 | 0x05


def test_writes_to_reserved_bits_are_ignored() -> None:
    m = Chip()
    write(m, 0x01, 0x60)  # NA, bits 6..5
    assert read(m, 0x01) == 0x80


def test_hooks_see_reads_and_writes() -> None:
    seen: list[tuple[str, ...]] = []

    class Hooked(Chip):
        def on_read(self, reg: Register) -> None:
            seen.append(("read", reg.name))

        def on_write(self, reg: Register, old: int, new: int) -> None:
            seen.append(("write", reg.name, hex(old), hex(new)))

    m = Hooked()
    read(m, 0x02)
    write(m, 0x02, 0x30)
    assert seen == [("read", "STATUS"), ("write", "STATUS", "0xf0", "0xc0")]


def test_reset_is_the_power_on_state() -> None:
    m = Chip()
    marks: list[tuple[str, object]] = []
    m.watch_inputs(lambda name, value: marks.append((name, value)))
    m.level = 99
    write(m, 0x01, 0x07)
    m.regs[0x00] = 0x00
    m.reset()
    assert [read(m, a) for a in (0, 1, 2)] == [0xA5, 0x80, 0xF0]
    assert m.level == 7
    assert m.reg_addr == 2  # the reads above; reset itself puts the pointer at 0
    assert m.reg_writes(0x01) == []
    assert marks == [("level", 99)]  # the reset's own sets are no test input


def test_power_on_values_override_the_maps() -> None:
    m = Chip(power_on={"CTRL": 0x81})
    assert read(m, 0x01) == 0x81
    write(m, 0x01, 0x00)
    m.reset_registers()
    assert read(m, 0x01) == 0x81


def test_register_names_for_traces_come_from_the_map() -> None:
    assert register_names("roadtest.models.opt3001:OPT3001") == {
        0x00: "RESULT",
        0x01: "CONFIGURATION",
        0x02: "LOW_LIMIT",
        0x03: "HIGH_LIMIT",
        0x7E: "MANUFACTURER_ID",
        0x7F: "DEVICE_ID",
    }
    # A model without a map keeps its REG_* names.
    assert register_names("roadtest.models.pcf8563:PCF8563")[0x02] == "VL_SECONDS"


def test_a_ported_model_resets_to_its_datasheet_state() -> None:
    m = OPT3001()
    m.result = 0x3456
    m.write(bytes([0x01, 0xCC, 0x10]))  # continuous conversions
    m.reset()
    assert m.result == 0x0000
    m.write(bytes([0x01]))
    assert m.read(2) == b"\xc8\x10"  # SBOS681B table 11: the configuration's reset value


def test_write_log_assertions_name_the_register() -> None:
    m = Chip()
    write(m, 0x01, 0x01)
    m.assert_reg_write_once(0x01, 0x01)
    with pytest.raises(
        AssertionError,
        match=r"expected register 0x01 \(CTRL\) to be written once with 0x02; "
        r"register 0x01 \(CTRL\) was written 1 time: 0x01",
    ):
        m.assert_reg_write_once(0x01, 0x02)
    with pytest.raises(AssertionError, match=r"register 0x02 \(STATUS\) was never written"):
        m.assert_last_reg_write(0x02, 0x00)
