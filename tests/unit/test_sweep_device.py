"""The sweep's invented device: the register file and its plans (device.py), the constants
mined from a driver's C source (constants.py), and its devicetree node (devicetree.py).

Expected values come from the specifications: the I2C bus (UM10204: a write's first bytes
address the register, a read continues where the last access ended), SMBus (System
Management Bus Specification 3.x: read/write word low byte first, block read = command,
repeated start, byte count, data), the C language (what a constant expression is worth),
kbuild's and the devicetree's conventions. No guest, no kernel tree."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from helpers import drawn, found, serve

from roadtest.backend.i2c import I2CBus
from roadtest.fuzz.lying_device import HostileHandler, HostilePlan
from roadtest.sweep.constants import Mined, is_identity_name, mine, mine_code, source_files
from roadtest.sweep.device import BLOCK_MAX, ByteOrder, RegisterFile, RegisterPlan, plans
from roadtest.sweep.devicetree import (
    Binding,
    Bindings,
    DeviceNode,
    DtsError,
    NewDevice,
    devices,
    examples,
    node_from_compatible,
    node_name,
    parse,
    relocate,
    schema_compatibles,
)
from roadtest.sweep.inventory import Driver
from roadtest.testing.devicetree import compile_dts, fill, source
from roadtest.trace.i2c import VIRTIO_I2C_MSG_OK

ADDR = 0x48
OK = VIRTIO_I2C_MSG_OK


def on_bus(model: RegisterFile) -> I2CBus:
    bus = I2CBus()
    bus.attach(ADDR, model)
    return bus


def reads(bus: I2CBus, *msgs: bytes | int) -> list[bytes]:
    """One transfer; the data of its read messages (all must succeed)."""
    statuses, faults = serve(bus, ADDR, *msgs)
    assert faults == [] and all(status == OK for status, _ in statuses)
    return [data for (_, data), msg in zip(statuses, msgs, strict=True) if isinstance(msg, int)]


# --- the register file ----------------------------------------------------------------


def test_a_write_is_read_back() -> None:
    bus = on_bus(RegisterFile())
    reads(bus, b"\x10\xab")  # SMBus write byte: command 0x10, data 0xab
    assert reads(bus, b"\x10", 1) == [b"\xab"]  # read byte: command, Sr, data


def test_a_register_never_written_answers_the_plan() -> None:
    plan = RegisterPlan(registers=((0xD0, 0x58), (0x0F, 0x33)), default=0xA5)
    bus = on_bus(RegisterFile(plan))
    assert reads(bus, b"\xd0", 1) == [b"\x58"]
    assert reads(bus, b"\x0f", 1) == [b"\x33"]
    assert reads(bus, b"\x00", 1) == [b"\xa5"]  # not listed: the default
    reads(bus, b"\xd0\x12")
    assert reads(bus, b"\xd0", 1) == [b"\x12"]  # written: what was written
    assert reads(bus, b"\xd0", 1) == [b"\x12"]  # and again: a register keeps its value


def test_the_plain_device_answers_zero_everywhere() -> None:
    bus = on_bus(RegisterFile())
    assert reads(bus, b"\x42", 4) == [b"\x00" * 4]


def test_writes_and_reads_auto_increment() -> None:
    model = RegisterFile(RegisterPlan(default=0x77))
    bus = on_bus(model)
    reads(bus, b"\x20\x01\x02\x03")  # one write, three registers: 0x20, 0x21, 0x22
    assert model.all_reg_writes() == [(0x20, 0x01), (0x21, 0x02), (0x22, 0x03)]
    assert reads(bus, b"\x20", 2) == [b"\x01\x02"]
    # A read without a register pointer (SMBus receive byte) continues where the last
    # one ended: 0x22, then 0x23, which was never written.
    assert reads(bus, 1) == [b"\x03"]
    assert reads(bus, 1) == [b"\x77"]


def test_a_plain_read_continues_after_a_write() -> None:
    bus = on_bus(RegisterFile(RegisterPlan(registers=((0x31, 0x44),))))
    reads(bus, b"\x30\x99")
    assert reads(bus, 1) == [b"\x44"]  # after 0x30 comes 0x31


def test_eight_bit_addresses_wrap() -> None:
    model = RegisterFile()
    bus = on_bus(model)
    reads(bus, b"\xff\x01\x02")
    assert model.all_reg_writes() == [(0xFF, 0x01), (0x00, 0x02)]
    assert reads(bus, b"\xff", 2) == [b"\x01\x02"]


@pytest.mark.parametrize(
    ("byteorder", "wire"),
    [("little", b"\x34\x12"), ("big", b"\x12\x34")],  # SMBus words: low byte first
)
def test_sixteen_bit_registers_in_either_byte_order(byteorder: ByteOrder, wire: bytes) -> None:
    model = RegisterFile(value_bits=16, byteorder=byteorder)
    bus = on_bus(model)
    reads(bus, b"\x01" + wire)
    assert model.value(0x01) == 0x1234
    assert reads(bus, b"\x01", 2) == [wire]


@pytest.mark.parametrize(("byteorder", "value"), [("little", 0xCDAB), ("big", 0xABCD)])
def test_sixteen_bit_registers_auto_increment_by_register(byteorder: ByteOrder, value: int) -> None:
    model = RegisterFile(value_bits=16, byteorder=byteorder)
    bus = on_bus(model)
    reads(bus, b"\x05\xab\xcd\x11\x22")
    assert [reg for reg, _ in model.all_reg_writes()] == [0x05, 0x06]
    assert model.value(0x05) == value
    assert reads(bus, 2) == [b"\x00\x00"]  # the next register, 0x07


def test_a_read_ending_inside_a_register_gets_its_first_bytes() -> None:
    model = RegisterFile(RegisterPlan(registers=((0x00, 0x1234),)), value_bits=16, byteorder="big")
    assert reads(on_bus(model), b"\x00", 1) == [b"\x12"]  # the MSB goes out first


@pytest.mark.parametrize(("byteorder", "value"), [("little", 0x12AB), ("big", 0xAB34)])
def test_a_write_cut_inside_a_register_replaces_its_first_bytes(
    byteorder: ByteOrder, value: int
) -> None:
    plan = RegisterPlan(registers=((0x02, 0x1234),))
    model = RegisterFile(plan, value_bits=16, byteorder=byteorder)
    reads(on_bus(model), b"\x02\xab")  # SMBus write byte to a 16-bit register
    assert model.value(0x02) == value


@pytest.mark.parametrize(("order", "address"), [("big", 0x1234), ("little", 0x3412)])
def test_sixteen_bit_register_addresses(order: ByteOrder, address: int) -> None:
    model = RegisterFile(address_bits=16, address_byteorder=order)
    bus = on_bus(model)
    reads(bus, b"\x12\x34\xab\xcd")
    assert model.all_reg_writes() == [(address, 0xAB), (address + 1, 0xCD)]
    assert reads(bus, b"\x12\x34", 2) == [b"\xab\xcd"]


def test_sixteen_bit_addresses_and_values_together() -> None:
    plan = RegisterPlan(registers=((0x0100, 0xBEEF),))
    model = RegisterFile(plan, value_bits=16, byteorder="big", address_bits=16)
    assert reads(on_bus(model), b"\x01\x00", 2) == [b"\xbe\xef"]


def test_sixteen_bit_addresses_wrap() -> None:
    model = RegisterFile(address_bits=16)
    reads(on_bus(model), b"\xff\xff\x01\x02")
    assert model.all_reg_writes() == [(0xFFFF, 0x01), (0x0000, 0x02)]


def test_an_address_cut_short_changes_nothing() -> None:
    model = RegisterFile(RegisterPlan(default=0x5A), address_bits=16)
    bus = on_bus(model)
    reads(bus, b"\x00\x10\x01")
    reads(bus, b"\x00")  # half an address, then stop
    assert model.all_reg_writes() == [(0x0010, 0x01)]
    assert reads(bus, 1) == [b"\x5a"]  # the pointer is still past 0x0010


def test_quick_commands_and_empty_reads_are_acknowledged() -> None:
    bus = on_bus(RegisterFile())
    assert serve(bus, ADDR, b"")[0] == [(OK, b"")]
    assert reads(bus, 0) == [b""]


def test_an_smbus_block_read_answers_the_count_then_the_data() -> None:
    plan = RegisterPlan(registers=((0x30, 0x0A), (0x31, 0x0B), (0x32, 0x0C)), block_length=3)
    bus = on_bus(RegisterFile(plan, block_commands=[0x30]))
    assert reads(bus, b"\x30", 4) == [b"\x03\x0a\x0b\x0c"]
    assert reads(bus, b"\x30", 1) == [b"\x03"]  # what virtio-i2c asks for: the count


def test_an_smbus_block_write_is_read_back_with_its_length() -> None:
    model = RegisterFile(block_commands=[0x40])
    bus = on_bus(model)
    reads(bus, b"\x40\x02\xaa\xbb")  # command, byte count 2, two data bytes
    assert model.all_reg_writes() == [(0x40, 0xAA), (0x41, 0xBB)]
    assert reads(bus, b"\x40", 3) == [b"\x02\xaa\xbb"]


def test_other_commands_are_not_blocks() -> None:
    bus = on_bus(RegisterFile(RegisterPlan(default=0x09), block_commands=[0x40]))
    assert reads(bus, b"\x41", 2) == [b"\x09\x09"]
    reads(bus, b"\x40", 1)
    assert reads(bus, 1) == [b"\x09"]  # a read without a command is no block read


def test_reset_is_power_on() -> None:
    model = RegisterFile(RegisterPlan(default=0x11))
    bus = on_bus(model)
    reads(bus, b"\x01\x22")
    model.reset()
    assert model.all_reg_writes() == [] and model.reg_addr == 0
    assert reads(bus, b"\x01", 1) == [b"\x11"]


def test_a_hostile_device_lies_with_the_register_file_s_width() -> None:
    model = RegisterFile(value_bits=16, byteorder="big")
    bus = I2CBus()
    bus.attach(ADDR, HostileHandler(model, HostilePlan(lies=((0, 0xBEEF),))))
    statuses, _ = serve(bus, ADDR, b"\x00", 2)
    assert statuses[1] == (OK, b"\xbe\xef")


def test_widths_other_than_eight_and_sixteen_bits_are_refused() -> None:
    with pytest.raises(ValueError, match="value_bits must be 8 or 16"):
        RegisterFile(value_bits=12)
    with pytest.raises(ValueError, match="address_bits must be 8 or 16"):
        plans(address_bits=7)


# --- plans ----------------------------------------------------------------------------


def test_plans_shrink_to_the_plain_device() -> None:
    strategy = plans(values=[0x58, 0x60], registers=[0xD0], pairs=[(0xD0, 0x58)])
    assert found(strategy, lambda plan: True) == RegisterPlan()
    assert RegisterPlan() == RegisterPlan(registers=(), default=0, block_length=1)


def test_plans_shrink_to_the_one_register_that_matters() -> None:
    strategy = plans(registers=[0x10])
    plan = found(strategy, lambda p: p.answer(0x10) != 0 and p.answer(0x11) == 0)
    assert plan == RegisterPlan(registers=((0x10, 0x01),))


def test_plans_reach_a_mined_id_at_a_mined_register() -> None:
    # 16-bit addresses and values: 2**32 combinations, out of reach of uniform draws.
    strategy = plans(values=[0xBEEF], registers=[0x1234], value_bits=16, address_bits=16)
    plan = found(strategy, lambda p: p.answer(0x1234) == 0xBEEF and p.answer(0) != 0xBEEF)
    assert plan.registers == ((0x1234, 0xBEEF),)


def test_plans_reach_a_mined_pair() -> None:
    strategy = plans(pairs=[(0x4321, 0xCAFE)], value_bits=16, address_bits=16)
    plan = found(strategy, lambda p: p.answer(0x4321) == 0xCAFE and p.default != 0xCAFE)
    assert plan.registers == ((0x4321, 0xCAFE),)


def test_a_mined_value_wider_than_a_register_is_drawn_in_pieces() -> None:
    # An ID compared whole (0x5449, "TI") is read from two 8-bit registers.
    assert found(plans(values=[0x5449]), lambda p: p.default == 0x54).default == 0x54
    assert found(plans(values=[0x5449]), lambda p: p.default == 0x49).default == 0x49


def test_drawn_plans_fit_their_widths() -> None:
    strategy = plans(
        values=[0x1FF, 0x58], registers=[0x1FF, 0x10], pairs=[(0x300, 1), (0x10, 0x2FF)]
    )
    for plan in drawn(strategy, 200):
        assert 0 <= plan.default <= 0xFF and 1 <= plan.block_length <= BLOCK_MAX
        assert all(0 <= a <= 0xFF and 0 <= v <= 0xFF for a, v in plan.registers)
        assert len({a for a, _ in plan.registers}) == len(plan.registers)


def test_a_plan_says_what_it_does() -> None:
    assert str(RegisterPlan()) == "every register holds 0x0"
    plan = RegisterPlan(registers=((0xD0, 0x58),), default=1, block_length=4)
    assert str(plan) == "register 0xd0 holds 0x58; the others hold 0x1; a block counts 4 bytes"


# --- mined constants ------------------------------------------------------------------


def values(code: str, kind: str | None = None) -> set[int]:
    mined = mine_code(code)
    return set(mined.values if kind is None else mined.of_kind(kind))


def test_identity_defines_in_their_styles() -> None:
    code = """
    #define FOO_CHIP_ID         0x58
    #define FOO_WHO_AM_I_VAL    (0x33)
    #define FOO_DEVICE_ID       (BIT(4) | 0x2)
    #define FOO_PART_NUMBER     0x1234U
    #define FOO_MANUFACTURER    'T'
    #define FOO_REVISION \\
            GENMASK(3, 2)
    #define FOO_VERSION_A       012
    #define FOO_SIGNATURE       (FOO_CHIP_ID + 1)
    #define BAR_CHIP_ID_MASK    0xf0
    #define BAR_REG_CHIP_ID     0xd0
    #define BAR_CONFIG          0x42
    #define BAR_NAME_ID         "bar"
    """
    # 0x12 = BIT(4) | 2; 'T' = 84; GENMASK(3, 2) = 0b1100; 012 is octal: 10.
    assert values(code, "identity") == {0x58, 0x33, 0x12, 0x1234, 84, 0xC, 10, 0x59}
    assert 0xD0 in mine_code(code).registers  # a register's address, not a value


def test_identity_names() -> None:
    assert is_identity_name("BMP280_CHIP_ID") and is_identity_name("partid")
    assert is_identity_name("LSM6DSX_WHOAMI") and is_identity_name("FOO_WHO_AM_I")
    assert not is_identity_name("FOO_REG_ID") and not is_identity_name("FOO_ID_MASK")
    assert not is_identity_name("FOO_CONFIG") and not is_identity_name("VALID")


def test_a_macro_read_as_a_register_is_no_value() -> None:
    code = """
    #define FOO_PART_ID 0x86
    static int probe(struct i2c_client *client)
    { return i2c_smbus_read_byte_data(client, FOO_PART_ID); }
    """
    assert 0x86 not in values(code) and 0x86 in mine_code(code).registers


def test_comparisons_with_a_read_pair_its_register_with_the_value() -> None:
    code = """
    #define FOO_REG_ID 0x0f
    #define FOO_ID 0x33
    static int probe(struct i2c_client *client)
    {
        int ret = i2c_smbus_read_byte_data(client, FOO_REG_ID);
        if (ret < 0)
            return ret;
        if (ret != FOO_ID)
            return -ENODEV;
        return 0;
    }
    """
    mined = mine_code(code)
    assert mined.pairs == ((0x0F, 0x33),)
    assert mined.values[0] == 0x33


def test_a_regmap_read_result_is_its_out_argument_not_its_error() -> None:
    code = """
    static int probe(struct foo *data)
    {
        unsigned int val;
        int ret;

        ret = regmap_read(data->map, 0x75, &val);
        if (ret == 0x01)
            return ret;
        if (val == 0x68)
            return 0;
        return -ENODEV;
    }
    """
    assert mine_code(code).pairs == ((0x75, 0x68),)


def test_a_read_call_compared_directly_and_in_yoda_order() -> None:
    code = """
    static int detect(struct i2c_client *c)
    {
        if (i2c_smbus_read_byte_data(c, 7) == 0xA1 && 0x44 != i2c_smbus_read_byte_data(c, 0xfe))
            return 0;
        return -ENODEV;
    }
    """
    assert set(mine_code(code).pairs) == {(7, 0xA1), (0xFE, 0x44)}


def test_shifts_fields_and_masks_put_a_value_where_the_register_holds_it() -> None:
    code = """
    static int probe(struct foo *data)
    {
        unsigned int id, rev, part;

        regmap_read(data->map, 0x10, &id);
        if ((id >> 4) != 0x8)
            return -ENODEV;
        regmap_read(data->map, 0x11, &rev);
        if (FIELD_GET(GENMASK(7, 5), rev) == 3)
            return 1;
        regmap_read(data->map, 0x12, &part);
        if ((part & 0xf0) == 0x50)
            return 2;
        return 0;
    }
    """
    assert set(mine_code(code).pairs) == {(0x10, 0x80), (0x11, 0x60), (0x12, 0x50)}


def test_a_bulk_read_pairs_each_byte_with_its_register() -> None:
    code = """
    static int probe(struct foo *data)
    {
        u8 buf[2];
        int ret = regmap_bulk_read(data->map, 0x20, buf, 2);
        if (buf[0] != 0x12 || buf[1] != 0x34)
            return -ENODEV;
        return ret;
    }
    """
    assert set(mine_code(code).pairs) == {(0x20, 0x12), (0x21, 0x34)}


def test_errnos_and_comparisons_of_two_constants_are_left_out() -> None:
    code = """
    #define A 3
    #if A == 3
    #endif
    static int f(int ret) { if (ret == -1 || ret == -EPROBE_DEFER) return 0; return ret == 5; }
    """
    assert values(code) == {5}


def test_a_read_pairs_only_within_its_function() -> None:
    code = """
    static int one(struct foo *d) { unsigned int val; regmap_read(d->map, 0x01, &val); return val; }
    static bool two(unsigned int val) { return val == 0x99; }
    """
    mined = mine_code(code)
    assert mined.pairs == () and 0x99 in mined.of_kind("comparison")


def test_case_labels_and_a_switch_on_a_read() -> None:
    code = """
    enum { CHIP_A = 0x10, CHIP_B };
    static int probe(struct i2c_client *client)
    {
        int id = i2c_smbus_read_byte_data(client, 0x00);
        switch (id) {
        case CHIP_A:
        case CHIP_B:
        case 0x20 ... 0x22:
            return 0;
        }
        return -ENODEV;
    }
    """
    mined = mine_code(code)
    assert set(mined.of_kind("case")) == {0x10, 0x11, 0x20, 0x22}
    assert set(mined.pairs) == {(0, 0x10), (0, 0x11), (0, 0x20)}


def test_a_case_label_naming_a_register_is_no_value() -> None:
    code = """
    #define FOO_REG_STATUS 0x07
    static bool volatile_reg(struct device *dev, unsigned int reg)
    { switch (reg) { case FOO_REG_STATUS: return true; default: return false; } }
    """
    assert values(code) == set()


def test_integer_driver_data_of_the_device_tables() -> None:
    code = """
    enum foo_type { foo = 2, bar, baz };
    static const struct foo_info qux_info = { .x = 1 };
    static const struct i2c_device_id foo_id[] = {
        { "foo", foo },
        { "bar", bar, },
        { .name = "seven", .driver_data = 7 },
        { "qux", (kernel_ulong_t)&qux_info },
        { }
    };
    static const struct of_device_id foo_of_match[] = {
        { .compatible = "acme,baz", .data = (void *)baz },
        { .compatible = "acme,qux", .data = &qux_info },
        { }
    };
    """
    assert values(code, "driver data") == {2, 3, 7, 4}


def test_identity_members_and_arrays_and_the_shift_they_are_compared_through() -> None:
    code = """
    static const u8 foo_chip_ids[] = { 0x58, 0x60 };
    static const struct foo_chip_info infos[] = {
        { .partid = 0x08, .id_reg = 0x86, .ids = foo_chip_ids },
        { .partid = 0x09, .id_reg = 0x86, .ids = foo_chip_ids },
    };
    static int probe(struct foo *data)
    {
        int partid, id;

        regmap_read(data->map, data->info->id_reg, &partid);
        if ((partid >> 4) != data->info->partid)
            return -ENODEV;
        regmap_read(data->map, 0xd0, &id);
        if (id != data->info->ids[0])
            return -ENODEV;
        return 0;
    }
    """
    mined = mine_code(code)
    assert {0x08, 0x09, 0x80, 0x90, 0x58, 0x60} <= set(mined.of_kind("identity"))
    assert {(0x86, 0x80), (0x86, 0x90), (0xD0, 0x58), (0xD0, 0x60)} <= set(mined.pairs)


def test_strings_and_comments_hide_nothing_and_add_nothing() -> None:
    code = """
    static int f(int ret) {
        dev_info(dev, "id == 0x42\\n");
        if (ret == 0x17) return 1;
        return 0;
    }
    """
    assert values(code) == {0x17}


def test_the_sources_of_a_driver_split_in_an_i2c_part_and_a_core(tmp_path: Path) -> None:
    d = tmp_path / "drivers/iio/foo"
    (d).mkdir(parents=True)
    (tmp_path / "include/linux/mfd").mkdir(parents=True)
    (tmp_path / "include/linux/mfd/foo.h").write_text("#define FOO_DEVICE_ID 0x61\n")
    (tmp_path / "include/linux/mfd/other.h").write_text("#define OTHER_CHIP_ID 0x62\n")
    (d / "foo.h").write_text('#include "foo-regs.h"\n#define FOO_CHIP_ID 0x58 /* bmp */\n')
    (d / "foo-regs.h").write_text("#define FOO_REG_ID 0xd0\n")
    (d / "foo-i2c.c").write_text(
        '#include <linux/mfd/foo.h>\n#include <linux/mfd/other.h>\n#include "foo.h"\n'
    )
    (d / "foo-core.c").write_text(
        '#include "foo.h"\nint probe(struct foo *d) { unsigned int v; '
        "regmap_read(d->map, FOO_REG_ID, &v); return v == 0x60; }\n"
    )
    (d / "foo-spi.c").write_text('#include "foo.h"\n#define FOO_SPI_ID 0x70\n')
    (d / "foobar.c").write_text('#include "foo.h"\n#define FOOBAR_ID 0x71\n')
    (d / "foo-other.c").write_text("#define FOO_OTHER_ID 0x72\n")  # shares no header
    names = [p.relative_to(tmp_path).as_posix() for p in source_files(tmp_path, d / "foo-i2c.c")]
    assert names == [
        "drivers/iio/foo/foo-i2c.c",
        "drivers/iio/foo/foo-core.c",
        "drivers/iio/foo/foo.h",
        "include/linux/mfd/foo.h",
        "drivers/iio/foo/foo-regs.h",
    ]
    mined = mine(tmp_path, "drivers/iio/foo/foo-i2c.c")
    assert set(mined.values) == {0x58, 0x60, 0x61}
    assert mined.pairs == ((0xD0, 0x60),)


def test_a_driver_in_one_file_is_mined_alone(tmp_path: Path) -> None:
    (tmp_path / "drivers/hwmon").mkdir(parents=True)
    (tmp_path / "drivers/hwmon/baz.c").write_text("#define BAZ_CHIP_ID 0x21\n")
    (tmp_path / "drivers/hwmon/baz-extra.c").write_text("#define BAZ_EXTRA_ID 0x22\n")
    assert mine(tmp_path, "drivers/hwmon/baz.c") == Mined(
        constants=mine_code("#define BAZ_CHIP_ID 0x21\n").constants
    )


# --- the devicetree node ---------------------------------------------------------------

# Our tree: an I2C adapter and a GPIO controller, labelled as the machines label them.
ROOT = """/ {
    compatible = "roadtest,test";
    #address-cells = <1>;
    #size-cells = <0>;
    i2c: i2c { #address-cells = <1>; #size-cells = <0>; };
    gpio: gpio {
        gpio-controller;
        #gpio-cells = <2>;
        interrupt-controller;
        #interrupt-cells = <2>;
    };
};
"""


@pytest.fixture
def include_root(tmp_path: Path) -> Path:
    """A stand-in for the kernel tree's dt-bindings headers."""
    bindings = tmp_path / "ksrc/scripts/dtc/include-prefixes/dt-bindings"
    (bindings / "gpio").mkdir(parents=True)
    (bindings / "interrupt-controller").mkdir(parents=True)
    (bindings / "gpio/gpio.h").write_text(
        "#ifndef G\n#define G\n#define GPIO_ACTIVE_HIGH 0\n#define GPIO_ACTIVE_LOW 1\n#endif\n"
    )
    (bindings / "interrupt-controller/irq.h").write_text(
        "#ifndef I\n#define I\n"
        "#define IRQ_TYPE_EDGE_RISING 1\n#define IRQ_TYPE_LEVEL_LOW 8\n#endif\n"
    )
    return tmp_path / "ksrc"


def compiled(node: DeviceNode, include_root: Path, gpios: dict[str, int] | None = None) -> str:
    """The node placed at 0x42 under our adapter, through cpp and dtc, decompiled."""
    placed = fill(node.compatible, node.dts, 0x42, gpios or {})
    dtb = compile_dts(source([placed], ROOT), include_root, include_root / "t.dtb")
    return subprocess.run(
        ["dtc", "-q", "-I", "dtb", "-O", "dts", str(dtb)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout


def test_the_node_from_a_compatible_alone(include_root: Path) -> None:
    node = node_from_compatible("ti,opt3001")
    assert (
        node.dts == 'opt3001@$addr$ {\n    compatible = "ti,opt3001";\n    reg = <0x$addr$>;\n};\n'
    )
    assert (node.binding, node.example, node.dropped) == ("", "", ())
    tree = compiled(node, include_root)
    assert re.search(r'opt3001@42 \{\s*compatible = "ti,opt3001";\s*reg = <0x42>;', tree)


def test_node_names_are_the_devicetree_s() -> None:
    # DT specification: 1 to 31 characters of [A-Za-z0-9,._+-], starting with a letter.
    assert node_name("ti,opt3001") == "opt3001"
    assert node_name("atmel,24c02") == "device"
    assert node_name("acme,chip/rev b") == "chip-rev-b"
    assert node_name("acme," + "x" * 40) == "x" * 31
    assert node_name("lm75") == "lm75"


def test_a_driver_without_a_compatible_is_instantiated_by_name() -> None:
    # Documentation/i2c/instantiating-devices.rst: echo eeprom 0x50 > .../new_device
    assert NewDevice("lm75").line(0x48) == "lm75 0x48"
    driver = Driver("drivers/hwmon/foo.c", "hwmon", "", "", (), (), ("foo", "foo2"))
    assert devices(driver, Bindings([])) == [NewDevice("foo"), NewDevice("foo2")]
    with_of = Driver("drivers/hwmon/foo.c", "hwmon", "", "", (), ("acme,foo",), ("foo",))
    assert devices(with_of, Bindings([])) == [node_from_compatible("acme,foo")]
    acpi_only = Driver("drivers/input/foo.c", "input", "", "", (), (), ())
    assert devices(acpi_only, Bindings([])) == []


BINDING = """\
# SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
%YAML 1.2
---
$id: http://devicetree.org/schemas/iio/light/acme,als.yaml#
$schema: http://devicetree.org/meta-schemas/core.yaml#

title: ACME ambient light sensors

description: |
  Not to be confused with the acme,other, which is not one of these.

properties:
  compatible:
    enum:
      - acme,als100
      - acme,als200

  reg:
    maxItems: 1

allOf:
  - if:
      properties:
        compatible:
          contains:
            const: acme,als300
    then:
      required: [interrupts]

additionalProperties: false

examples:
  - |
    #include <dt-bindings/interrupt-controller/irq.h>
    #include <dt-bindings/gpio/gpio.h>
    i2c {
        #address-cells = <1>;
        #size-cells = <0>;

        als: light-sensor@29 {
            compatible = "acme,als100";
            reg = <0x29>;
            interrupt-parent = <&gpio1>;
            interrupts = <17 IRQ_TYPE_LEVEL_LOW>;   /* the INT pin */
            reset-gpios = <&gpio1 3 GPIO_ACTIVE_LOW>;
            vdd-supply = <&ldo3>;
            clocks = <&osc 1>;
            clock-names = "ref";
            pinctrl-names = "default";
            pinctrl-0 = <&als_pins>;
            acme,gain = <4>;   // kept
            label = "ambient; light {x}";
            acme,boolean;
        };
    };
# A comment between the items
  - |+
    spi {
        #address-cells = <1>;
        #size-cells = <0>;

        light-sensor@0 {
            compatible = "acme,als200";
            reg = <0>;
            spi-max-frequency = <1000000>;
        };
    };
...
"""


def test_a_binding_s_examples_and_compatibles_read_as_text() -> None:
    shown = examples(BINDING)
    assert len(shown) == 2
    assert shown[0].startswith("#include <dt-bindings/interrupt-controller/irq.h>\n")
    assert "\n    als: light-sensor@29 {\n" in shown[0]  # the block's indentation removed
    assert shown[1].startswith("spi {\n") and shown[1].endswith("};\n")
    # The schema's compatible keys; not the description's, nor the examples'.
    assert schema_compatibles(BINDING) == {"acme,als100", "acme,als200", "acme,als300"}
    assert examples("properties:\n  compatible: true\n") == []


def test_an_example_s_node_moved_onto_our_bus(include_root: Path) -> None:
    node = relocate(examples(BINDING)[0], "acme,als100", binding="b.yaml")
    assert node is not None and node.binding == "b.yaml" and node.example == ""
    dropped = {d.name: (d.kind, d.reason) for d in node.dropped}
    assert dropped == {
        "interrupt-parent": ("interrupt", "refers to &gpio1, not in our tree"),
        "reset-gpios": ("gpio", "refers to &gpio1, not in our tree"),
        "vdd-supply": ("supply", "refers to &ldo3, not in our tree"),
        "clocks": ("clock", "refers to &osc, not in our tree"),
        "pinctrl-0": ("other", "refers to &als_pins, not in our tree"),
        "interrupts": ("interrupt", "no interrupt parent in our tree"),
        "clock-names": ("clock", "goes with clocks, not kept"),
        "pinctrl-names": ("other", "goes with pinctrl-0, not kept"),
    }
    assert {d.value for d in node.dropped if d.name == "reset-gpios"} == {
        "<&gpio1 3 GPIO_ACTIVE_LOW>"
    }
    assert node.dts.startswith(
        "#include <dt-bindings/interrupt-controller/irq.h>\n#include <dt-bindings/gpio/gpio.h>\n"
        "light-sensor@$addr$ {\n"  # its label went: nothing refers to it
        '    compatible = "acme,als100";\n'
        "    reg = <0x$addr$>;\n"
    )
    tree = compiled(node, include_root)
    assert re.search(r"light-sensor@42 \{", tree) and "reg = <0x42>;" in tree
    assert "acme,gain = <0x04>;" in tree and "acme,boolean;" in tree
    assert 'label = "ambient; light {x}";' in tree
    assert "interrupts" not in tree and "gpios" not in tree and "supply" not in tree


def test_labels_of_our_tree_are_kept(include_root: Path) -> None:
    example = """
    i2c {
        sensor@10 {
            compatible = "acme,als100";
            reg = <0x10>;
            interrupt-parent = <&gpio>;
            interrupts = <5 IRQ_TYPE_LEVEL_LOW>;
            reset-gpios = <&gpio 6 GPIO_ACTIVE_LOW>;
        };
    };
    """
    # An example's &gpio is another board's: dropped unless the caller says it is ours.
    assert {d.name for d in must(relocate(example, "acme,als100")).dropped} == {
        "interrupt-parent",
        "interrupts",
        "reset-gpios",
    }
    node = must(relocate(example, "acme,als100", labels=("gpio",)))
    assert node.dropped == ()
    assert "interrupts = <0x05 0x08>;" in compiled(node, include_root)


def test_references_inside_the_node_are_kept_with_their_labels(include_root: Path) -> None:
    example = """
    board_reg: regulator { };
    pmic@34 {
        compatible = "acme,pmic";
        reg = <0x34>;
        #interrupt-cells = <1>;
        interrupt-controller;
        regulators {
            buck1: buck1 { regulator-name = "buck1"; };
            ldo1: ldo1 {
                vin-supply = <&buck1>;
                bypass-supply = <&board_reg>;
            };
        };
        charger {
            interrupts = <3>;  /* from the PMIC itself: it is an interrupt controller */
        };
    };
    """
    node = must(relocate(example, "acme,pmic"))
    assert [(d.node, d.name) for d in node.dropped] == [("regulators/ldo1", "bypass-supply")]
    assert "buck1: buck1 {" in node.dts and "ldo1: ldo1" not in node.dts
    tree = compiled(node, include_root)
    assert "vin-supply = <0x" in tree and "interrupts = <0x03>;" in tree


def test_a_child_without_an_interrupt_controller_above_it_loses_its_interrupts() -> None:
    example = """
    device@1 { compatible = "acme,x"; reg = <1>; child { interrupts = <3>; }; };
    """
    node = must(relocate(example, "acme,x"))
    assert [(d.node, d.name, d.kind) for d in node.dropped] == [
        ("child", "interrupts", "interrupt")
    ]


def test_the_i2c_example_is_preferred_and_an_spi_one_loses_its_bus_properties() -> None:
    example = """
    spi { s@0 { compatible = "acme,y"; reg = <0>; spi-max-frequency = <1000000>; }; };
    i2c { i@50 { compatible = "acme,y"; reg = <0x50>; }; };
    """
    assert must(relocate(example, "acme,y")).dts.startswith("i@$addr$ {")
    spi_only = must(relocate(examples(BINDING)[1], "acme,als200"))
    assert [(d.name, d.reason) for d in spi_only.dropped] == [
        ("spi-max-frequency", "a property of an SPI bus")
    ]


def test_status_reg_names_and_extra_compatibles() -> None:
    example = """
    i2c {
        lbl: dev@50 {
            compatible = "acme,z-rev2", "acme,z";
            reg = <0x50>, <0x51>;
            reg-names = "main", "aux";
            status = "disabled";
        };
    };
    """
    node = must(relocate(example, "acme,z"))
    assert node.dts == 'dev@$addr$ {\n    compatible = "acme,z";\n    reg = <0x$addr$>;\n};\n'
    assert [d.name for d in node.dropped] == ["reg-names", "status"]


def test_an_example_without_the_compatible_gives_nothing() -> None:
    assert relocate(examples(BINDING)[0], "acme,als999") is None


def test_bindings_choose_the_own_example_then_a_sibling_s_then_the_compatible() -> None:
    own = Binding(
        "b/acme,als.yaml", frozenset(schema_compatibles(BINDING)), tuple(examples(BINDING))
    )
    trivial = Binding(
        "b/trivial-devices.yaml",
        frozenset({"acme,t1", "acme,t2"}),
        ('i2c { t@1 { compatible = "acme,t1"; reg = <1>; }; };\n',),
    )
    broken = Binding(
        "b/broken.yaml",
        frozenset({"acme,broken"}),
        ('i2c { b@1 { compatible = "acme,broken"; reg = <1>; };\n',),  # not closed
    )
    bindings = Bindings([own, trivial, broken])
    node = bindings.node("acme,als100")
    assert (node.binding, node.example) == ("b/acme,als.yaml", "")
    sibling = bindings.node("acme,als300")  # listed by the schema, shown by no example
    assert (sibling.binding, sibling.example) == ("b/acme,als.yaml", "acme,als100")
    assert sibling.dts.count('compatible = "acme,als300";') == 1
    assert "acme,als100" not in sibling.dts
    assert bindings.node("acme,t2") == node_from_compatible("acme,t2")  # no kin in a list
    assert bindings.node("acme,t1").binding == "b/trivial-devices.yaml"  # its own example
    assert bindings.node("acme,broken") == node_from_compatible("acme,broken")
    assert bindings.node("acme,unknown") == node_from_compatible("acme,unknown")


def test_bindings_of_a_tree(tmp_path: Path) -> None:
    directory = tmp_path / "Documentation/devicetree/bindings/iio/light"
    directory.mkdir(parents=True)
    (directory / "acme,als.yaml").write_text(BINDING)
    (directory / "acme,none.yaml").write_text("properties:\n  compatible:\n    const: acme,n\n")
    bindings = Bindings.scan(tmp_path)
    assert [b.path for b in bindings.bindings] == [
        "Documentation/devicetree/bindings/iio/light/acme,als.yaml"
    ]
    assert bindings.node("acme,als200").binding.endswith("acme,als.yaml")


def test_devicetree_source_this_reader_does_not_follow_is_an_error() -> None:
    with pytest.raises(DtsError):
        parse("a { b = <1>; ")
    with pytest.raises(DtsError):
        parse("a { }; };")


def must(node: DeviceNode | None) -> DeviceNode:
    assert node is not None
    return node
