"""The sweep's SPI drivers: the inventory's records per bus, their devicetree nodes on an SPI
bus, the register file framed on SPI (and the framing a driver's regmap_config says), and
the bus in the results, reports, triage, selection and reproducers.

Expected values come from the kernel: regmap's flag masks as regmap_set_work_buf_flag_mask()
puts them on the wire (drivers/base/regmap/regmap.c), regmap-spi's default read flag 0x80
(drivers/base/regmap/regmap-spi.c), the SPI core's modalias (of_alias_from_compatible()),
modpost's `spi:` aliases (scripts/mod/file2alias.c), and the datasheets' command bytes."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from roadtest.errors import UsageError
from roadtest.sweep import kcidb
from roadtest.sweep.campaign import select
from roadtest.sweep.constants import Mined
from roadtest.sweep.device import (
    REGMAP_SPI_READ_FLAG,
    RegisterPlan,
    SPIRegisterFile,
    SPIShape,
    spi_shape,
)
from roadtest.sweep.devicetree import Binding, Bindings, DeviceNode, devices, relocate
from roadtest.sweep.inventory import (
    Driver,
    alias_devices,
    driver_key,
    id_names,
    read_drivers,
    split_key,
    strip_comments,
)
from roadtest.sweep.kcidb import kcidb_report, validate
from roadtest.sweep.outcome import DriverResult, Finding, Kind, Stage
from roadtest.sweep.report import render_html, summary
from roadtest.sweep.results import ResultsDB, finding_id, merge
from roadtest.sweep.runner import Plan, plan_of, reproducer
from roadtest.sweep.triage import Triage, TriageError, Verdict

# --- the inventory ----------------------------------------------------------------------

# A DAC family with both buses in one file, as drivers/iio/dac/ad5064.c has them.
BOTH = """
static const struct of_device_id dac_of[] = { { .compatible = "adi,dac1" }, {} };
static const struct spi_device_id dac_spi_ids[] = { {"dac1-spi", 1}, {"dac2-spi", 2}, {} };
static const struct i2c_device_id dac_i2c_ids[] = { {"dac1-i2c", 1}, {} };
static struct spi_driver dac_spi_driver = { .id_table = dac_spi_ids, };
static struct i2c_driver dac_i2c_driver = { .id_table = dac_i2c_ids, };
"""


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_a_file_with_both_buses_is_a_driver_on_each(tmp_path: Path) -> None:
    write(tmp_path / "drivers/Makefile", "obj-$(CONFIG_IIO) += iio/\n")
    write(tmp_path / "drivers/iio/Makefile", "obj-$(CONFIG_DAC) += dac.o\n")
    source = write(tmp_path / "drivers/iio/dac.c", BOTH)
    i2c, spi = read_drivers(tmp_path, source)
    assert (i2c.bus, i2c.ids, i2c.key) == ("i2c", ("dac1-i2c",), "drivers/iio/dac.c")
    assert (spi.bus, spi.ids, spi.key) == ("spi", ("dac1-spi", "dac2-spi"), "drivers/iio/dac.c@spi")
    assert i2c.compatibles == spi.compatibles == ("adi,dac1",)
    assert (spi.module, spi.symbol) == (i2c.module, i2c.symbol) == ("dac", "DAC")
    assert Driver.from_json(spi.as_json()) == spi


def test_an_spi_driver_without_an_id_table_is_named_by_its_driver(tmp_path: Path) -> None:
    # rtc-ds1305.c's form and adis16201.c's: spi_match_device() compares the modalias
    # with drv->name when there is no id table.
    write(tmp_path / "drivers/Makefile", "obj-y += rtc/\n")
    write(tmp_path / "drivers/rtc/Makefile", "obj-$(CONFIG_A) += a.o b.o\n")
    a = write(
        tmp_path / "drivers/rtc/a.c",
        'static struct spi_driver ds1305_driver = {\n\t.driver.name\t= "rtc-ds1305",\n};\n',
    )
    b = write(
        tmp_path / "drivers/rtc/b.c",
        '#define NAME "adis16201"\nstatic struct spi_driver d = {\n\t.driver = {\n'
        "\t\t.name = NAME,\n\t},\n\t.probe = p,\n};\n",
    )
    assert [d.ids for d in read_drivers(tmp_path, a)] == [("rtc-ds1305",)]
    assert [d.ids for d in read_drivers(tmp_path, b)] == [("adis16201",)]


def test_spi_id_names_and_aliases() -> None:
    code = strip_comments(BOTH)
    assert id_names(code, "spi") == ("dac1-spi", "dac2-spi")
    aliases = ["of:NdacT(null)Cadi,dac1", "of:NdacT(null)Cadi,dac1C*", "spi:dac1-spi", "i2c:x"]
    assert alias_devices(aliases, "spi") == (("adi,dac1",), ("dac1-spi",))
    assert alias_devices(aliases, "i2c") == (("adi,dac1",), ("x",))


def test_driver_keys_name_the_bus_unless_i2c() -> None:
    assert driver_key("drivers/rtc/rtc-pcf2127.c", "i2c") == "drivers/rtc/rtc-pcf2127.c"
    assert driver_key("drivers/rtc/rtc-pcf2127.c", "spi") == "drivers/rtc/rtc-pcf2127.c@spi"
    assert split_key("drivers/rtc/rtc-pcf2127.c@spi") == ("drivers/rtc/rtc-pcf2127.c", "spi")
    assert split_key("drivers/rtc/rtc-pcf2127.c") == ("drivers/rtc/rtc-pcf2127.c", "i2c")


# --- devicetree nodes on SPI ------------------------------------------------------------

# Documentation/devicetree/bindings/rtc/nxp,pcf2123.yaml's example, with a width added.
PCF2123_EXAMPLE = """
    #include <dt-bindings/interrupt-controller/irq.h>
    spi {
        #address-cells = <1>;
        #size-cells = <0>;

        rtc@3 {
            compatible = "nxp,pcf2123";
            reg = <3>;
            interrupts-extended = <&gpio1 4 IRQ_TYPE_LEVEL_LOW>;
            spi-cs-high;
            spi-max-frequency = <1000000>;
            spi-rx-bus-width = <2>;
        };
    };
"""


def test_an_spi_node_keeps_its_spi_properties_but_the_widths() -> None:
    node = relocate(PCF2123_EXAMPLE, "nxp,pcf2123", bus="spi")
    assert node is not None
    assert "spi-cs-high;" in node.dts and "spi-max-frequency = <1000000>;" in node.dts
    assert "spi-rx-bus-width" not in node.dts
    assert "reg = <0x$addr$>;" in node.dts and "rtc@$addr$ {" in node.dts
    assert {d.name for d in node.dropped} == {"spi-rx-bus-width", "interrupts-extended"}


def test_the_same_example_on_i2c_drops_every_spi_property() -> None:
    node = relocate(PCF2123_EXAMPLE, "nxp,pcf2123")
    assert node is not None and "spi-" not in node.dts


TWO_BUSES = """
    i2c {
        dac@48 { compatible = "adi,dac1"; reg = <0x48>; };
    };
    spi {
        dac@0 { compatible = "adi,dac1"; reg = <0>; spi-cpha; };
    };
"""


def test_the_example_on_the_drivers_bus_is_taken() -> None:
    spi_node = relocate(TWO_BUSES, "adi,dac1", bus="spi")
    i2c_node = relocate(TWO_BUSES, "adi,dac1", bus="i2c")
    assert spi_node is not None and "spi-cpha;" in spi_node.dts
    assert i2c_node is not None and "spi-cpha" not in i2c_node.dts


def test_an_spi_driver_without_a_compatible_binds_by_modalias() -> None:
    driver = Driver("drivers/x/y.c", "x", "drivers/x/y.ko", "Y", (), (), ("y-chip",), bus="spi")
    (node,) = devices(driver, Bindings([]))
    assert isinstance(node, DeviceNode) and node.id_name == "y-chip"
    compatible = node.compatible
    # of_alias_from_compatible(): the modalias is the compatible after its comma.
    assert compatible.partition(",")[2] == "y-chip"
    plan = Plan(driver, node, Mined())
    assert (plan.how, plan.match) == ("id-table", "y-chip")


def test_an_spi_driver_with_a_compatible_gets_its_binding_example() -> None:
    binding = Binding("b/nxp,pcf2123.yaml", frozenset({"nxp,pcf2123"}), (PCF2123_EXAMPLE,))
    driver = Driver("drivers/rtc/rtc-pcf2123.c", "rtc", "", "", (), ("nxp,pcf2123",), (), bus="spi")
    (node,) = devices(driver, Bindings([binding]))
    assert isinstance(node, DeviceNode) and "spi-cs-high;" in node.dts


# --- the register file on SPI -----------------------------------------------------------


def clock(model: SPIRegisterFile, *transfers: bytes, mode: int = 0) -> list[bytes]:
    """One message: the chip selected, each transfer's RX, the chip released."""
    model.select()
    try:
        return [model.transfer(tx, len(tx), mode, 8) for tx in transfers]
    finally:
        model.deselect()


def test_a_read_command_answers_the_plan_from_its_register_on() -> None:
    model = SPIRegisterFile(RegisterPlan(((0x0F, 0x58), (0x10, 0x01)), default=0x33))
    # regmap-spi's framing: 0x80 | 0x0F reads register 0x0F, then 0x10 (auto-increment).
    (rx,) = clock(model, bytes([0x8F, 0, 0, 0]))
    assert rx == bytes([0xFF, 0x58, 0x01, 0x33])  # SDO idles high during the command
    assert model.reads == [(0x0F, 0x58), (0x10, 0x01), (0x11, 0x33)]


def test_a_write_is_read_back_and_a_half_written_register_keeps_its_rest() -> None:
    shape = SPIShape(value_bits=16)
    model = SPIRegisterFile(RegisterPlan(((0x02, 0xABCD),)), shape)
    clock(model, bytes([0x01, 0x12, 0x34, 0x56]))  # register 1 whole, register 2 half
    (rx,) = clock(model, bytes([0x81, 0, 0, 0, 0]))
    assert rx == bytes([0xFF, 0x12, 0x34, 0x56, 0xCD])  # big-endian, first byte replaced


def test_it_takes_any_mode_and_a_split_message() -> None:
    model = SPIRegisterFile(RegisterPlan(((0x05, 0x42),)))
    # spi_write_then_read(): the command in one transfer, the data in the next, CPOL|CPHA.
    assert clock(model, bytes([0x85]), bytes(1), mode=0x3 | 0x4) == [b"\xff", b"\x42"]


REGMAPS = {
    # rtc-pcf2123.c: PCF2123_READ = BIT(4) | BIT(7), PCF2123_WRITE = BIT(4): the datasheet's
    # subaddress 001 in bits 6..4, R/W in bit 7, the register in bits 3..0.
    "pcf2123": (
        "#define PCF2123_WRITE BIT(4)\n#define PCF2123_READ (BIT(4) | BIT(7))\n"
        "static const struct regmap_config pcf2123_regmap_config = {\n"
        "  .reg_bits = 8, .val_bits = 8, .read_flag_mask = PCF2123_READ,\n"
        "  .write_flag_mask = PCF2123_WRITE, .max_register = 0xF,\n};\n",
        (8, 7, 1, 0x0F, 8),
    ),
    # ens160_spi.c: read_flag_mask = 0x1, the register shifted up by one (reg_shift).
    "ens160": (
        "static const struct regmap_config ens160_regmap_spi_conf = {\n"
        "  .reg_bits = 8, .val_bits = 8, .read_flag_mask = 0x1,\n};\n",
        (8, 0, 1, 0xFE, 8),
    ),
    # A 16-bit register with regmap-spi's default mask: its byte 0 goes on the first byte
    # on the wire, the command word's high byte: bit 15.
    "wide": (
        "static const struct regmap_config w_config = { .reg_bits = 16, .val_bits = 16 };\n",
        (16, 15, 1, 0x7FFF, 16),
    ),
    # A write flag alone: bit 7 set to write, clear to read.
    "write-flag": (
        "static const struct regmap_config w_config = {\n"
        "  .reg_bits = 8, .val_bits = 8, .write_flag_mask = 0x80 };\n",
        (8, 7, 0, 0x7F, 8),
    ),
}


@pytest.mark.parametrize("name", sorted(REGMAPS))
def test_the_framing_of_a_regmap_config(name: str) -> None:
    code, (command_bits, read_bit, read_level, address_mask, value_bits) = REGMAPS[name]
    shape = spi_shape(strip_comments(code))
    framing = shape.framing
    assert (framing.command_bits, framing.read_bit, framing.read_level) == (
        command_bits,
        read_bit,
        read_level,
    )
    assert (framing.address_mask, shape.value_bits) == (address_mask, value_bits)
    assert shape.source.startswith("regmap_config ")


def test_pcf2123s_own_read_command_reaches_its_register() -> None:
    shape = spi_shape(strip_comments(REGMAPS["pcf2123"][0]))
    model = SPIRegisterFile(RegisterPlan(((0x04, 0x59),)), shape)
    # The datasheet's read of the seconds register (04h): 1001 0100b = 0x94.
    (rx,) = clock(model, bytes([0x94, 0]))
    assert rx[1] == 0x59


def test_without_a_regmap_config_the_common_convention() -> None:
    shape = spi_shape("static int x;\n")
    assert shape == SPIShape()
    assert 1 << shape.framing.read_bit == REGMAP_SPI_READ_FLAG
    assert shape.framing.modes == frozenset({0, 1, 2, 3})


# --- results, reports, triage -----------------------------------------------------------

OOPS = Finding(Kind.BUG, "bug: NULL pointer in dac_read", "BUG: kernel NULL pointer", "r")


def result(bus: str, findings: tuple[Finding, ...] = ()) -> DriverResult:
    return DriverResult(
        module="dac",
        subsystem="iio",
        source="drivers/iio/dac.c",
        machine="um",
        device="example",
        match="adi,dac1",
        stage=Stage.EXERCISED,
        findings=findings,
        bus=bus,
    )


def test_a_files_two_buses_are_two_rows_and_merge_keeps_both(tmp_path: Path) -> None:
    path = tmp_path / "a.sqlite"
    with ResultsDB.open(path, tree="t", kernel="k") as db:
        db.record(result("i2c"))
        db.record(result("spi", (OOPS,)))
        assert db.done() == {("drivers/iio/dac.c", "i2c"), ("drivers/iio/dac.c", "spi")}
        assert db.results() == [result("i2c"), result("spi", (OOPS,))]
    assert merge([path], tmp_path / "out.sqlite") == 2


def test_a_finding_of_an_spi_driver_is_named_with_its_bus() -> None:
    assert finding_id(result("spi", (OOPS,)), 0) == "drivers/iio/dac.c@spi:1"
    assert finding_id(result("i2c", (OOPS,)), 0) == "drivers/iio/dac.c:1"


def test_the_summary_counts_each_bus_and_names_it() -> None:
    lines = summary([result("i2c"), result("spi", (OOPS,))])
    assert any(line.startswith("i2c total") for line in lines)
    assert any(line.startswith("spi total") for line in lines)
    assert any(OOPS.signature in line and "dac (spi): new" in line for line in lines)
    assert "<td>spi</td>" in render_html([result("spi")], title="t")


def test_kcidb_tells_the_buses_apart() -> None:
    data = kcidb_report(
        [result("i2c"), result("spi", (OOPS,))],
        origin="roadtest",
        checkout_id="c",
        build_id="b",
        tree="t",
        git_commit=None,
        arch="um",
        config_name="roadtest-sweep",
    )
    validate(data)
    assert [t["path"] for t in data["tests"]] == [
        "roadtest.sweep.iio.i2c.dac",
        "roadtest.sweep.iio.spi.dac",
    ]
    assert len({t["id"] for t in data["tests"]}) == 2
    assert kcidb.test_path(result("spi")) == "roadtest.sweep.iio.spi.dac"


def test_triage_matches_the_bus_and_an_old_entry_is_i2c(tmp_path: Path) -> None:
    path = tmp_path / "triage.toml"
    path.write_text(
        '[[finding]]\ndriver = "drivers/iio/dac.c"\nbus = "spi"\n'
        f'signature = "{OOPS.signature}"\nverdict = "open"\nreason = "r"\n'
        '[[finding]]\ndriver = "drivers/iio/dac.c"\n'
        f'signature = "{OOPS.signature}"\nverdict = "artefact"\nreason = "r"\n'
    )
    triage = Triage.load(path)
    assert triage.of(result("spi"), OOPS).verdict is Verdict.OPEN
    assert triage.of(result("i2c"), OOPS).verdict is Verdict.ARTEFACT
    path.write_text(
        '[[finding]]\ndriver = "d"\nbus = "usb"\nsignature = "s"\nverdict = "open"\nreason = "r"\n'
    )
    with pytest.raises(TriageError, match="bus 'usb'"):
        Triage.load(path)


# --- selection and reproducers ----------------------------------------------------------

I2C_DAC = Driver("drivers/iio/dac.c", "iio", "drivers/iio/dac.ko", "DAC", (), (), ())
SPI_DAC = replace(I2C_DAC, bus="spi")
RTC = Driver("drivers/rtc/rtc-x.c", "rtc", "drivers/rtc/rtc-x.ko", "X", (), (), ())
ALL = [I2C_DAC, SPI_DAC, RTC]


def test_select_by_bus_and_by_key() -> None:
    assert select(ALL, [], ["spi"]) == [SPI_DAC]
    assert select(ALL, ["dac"]) == [I2C_DAC, SPI_DAC]
    assert select(ALL, ["drivers/iio/dac.c@spi"]) == [SPI_DAC]
    assert select(ALL, ["iio"], ["i2c"]) == [I2C_DAC]
    with pytest.raises(UsageError, match="bus 'usb'"):
        select(ALL, [], ["usb"])


def test_a_reproducer_keeps_its_bus() -> None:
    plan = RegisterPlan(((0x0F, 0x58),))
    again = reproducer(Plan(SPI_DAC, None, Mined()), plan)
    assert plan_of(again) == ("drivers/iio/dac.c@spi", plan)
