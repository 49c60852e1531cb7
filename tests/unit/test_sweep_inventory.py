"""The sweep's inventory: kbuild Makefiles (Documentation/kbuild/makefiles.rst), the device
tables of C sources, struct i2c_driver definitions, modpost's module aliases
(scripts/mod/file2alias.c), the Kconfig language (kconfig-language.rst), the listing and
its cache. Small trees written here; no kernel tree, no make."""

from __future__ import annotations

import argparse
import json
from dataclasses import replace
from pathlib import Path

import pytest

import roadtest.kernel
from roadtest import cli
from roadtest.errors import RoadtestError, UsageError
from roadtest.sweep import command, kconfig
from roadtest.sweep.inventory import (
    Driver,
    ModuleRef,
    alias_devices,
    defines_i2c_driver,
    directory_conditions,
    i2c_id_names,
    isa_port_io,
    module_of,
    of_compatibles,
    parse_kbuild,
    scan,
    strip_comments,
    with_module_aliases,
)
from roadtest.sweep.kconfig import (
    Evaluator,
    KconfigTree,
    Outcome,
    machine_limits,
    parse_expr,
    requests,
    show,
    wanted_symbols,
    why_unset,
)


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


# --- kbuild Makefiles -------------------------------------------------------------------


def test_a_module_of_one_object_is_named_by_its_goal_line() -> None:
    kbuild = parse_kbuild(
        "# SPDX-License-Identifier: GPL-2.0\n"
        "obj-$(CONFIG_RTC_DRV_PCF8563)\t+= rtc-pcf8563.o\n"
        "obj-y += always.o\n"
        "obj-m += module.o\n"
    )
    assert kbuild.objects == {"rtc-pcf8563.o": "RTC_DRV_PCF8563", "always.o": "", "module.o": ""}


def test_one_goal_line_may_name_several_objects_over_continued_lines() -> None:
    kbuild = parse_kbuild("obj-$(CONFIG_FOO) += a.o \\\n\tb.o\nobj-$(CONFIG_BAR) := c.o # c\n")
    assert kbuild.objects == {"a.o": "FOO", "b.o": "FOO", "c.o": "BAR"}


def test_composite_objects_list_their_parts_in_y_objs_and_config_lines() -> None:
    kbuild = parse_kbuild(
        "obj-$(CONFIG_INV_MPU6050_I2C) += inv-mpu6050-i2c.o\n"
        "inv-mpu6050-i2c-y := inv_mpu_i2c.o \\\n\t\tinv_mpu_acpi.o\n"
        "obj-$(CONFIG_BMP280) += bmp280.o\n"
        "bmp280-objs := bmp280-core.o bmp280-regmap.o\n"
        "obj-$(CONFIG_ITG3200) += itg3200.o\n"
        "itg3200-y := itg3200_core.o\n"
        "itg3200-$(CONFIG_IIO_BUFFER) += itg3200_buffer.o\n"
        "ccflags-y += -DDEBUG\n"
    )
    assert kbuild.parts["inv-mpu6050-i2c.o"] == {"inv_mpu_i2c.o": "", "inv_mpu_acpi.o": ""}
    assert kbuild.parts["bmp280.o"] == {"bmp280-core.o": "", "bmp280-regmap.o": ""}
    assert kbuild.parts["itg3200.o"] == {"itg3200_core.o": "", "itg3200_buffer.o": "IIO_BUFFER"}


def test_directory_lines_are_subdirectories() -> None:
    kbuild = parse_kbuild(
        "obj-$(CONFIG_IIO) += iio/\nobj-y += leds/\nobj-$(CONFIG_SERIO) += input/serio/\n"
    )
    assert kbuild.subdirs == {"iio": "IIO", "leds": "", "input/serio": "SERIO"}
    assert kbuild.objects == {}


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A kernel tree's drivers/: an RTC driver, a composite IIO module in a subdirectory,
    and a driver no Makefile line names."""
    write(
        tmp_path / "drivers/Makefile",
        "obj-$(CONFIG_IIO) += iio/\nobj-$(CONFIG_RTC_LIB) += rtc/\nobj-y += misc/\n",
    )
    write(tmp_path / "drivers/rtc/Makefile", "obj-$(CONFIG_RTC_DRV_X) += rtc-x.o\n")
    write(tmp_path / "drivers/iio/Makefile", "obj-y += imu/\n")
    write(tmp_path / "drivers/iio/imu/Makefile", "obj-$(CONFIG_IIO_IMU) += inv/\n")
    write(
        tmp_path / "drivers/iio/imu/inv/Makefile",
        "obj-$(CONFIG_INV_I2C) += inv-i2c.o\ninv-i2c-y := inv_i2c.o inv_acpi.o\n"
        "inv-i2c-$(CONFIG_INV_MAGN) += inv_magn.o\n",
    )
    write(tmp_path / "drivers/misc/Makefile", "obj-$(CONFIG_OTHER) += other.o\n")
    return tmp_path


def test_a_simple_module(tree: Path) -> None:
    assert module_of(tree, "drivers/rtc/rtc-x.c") == ModuleRef(
        "drivers/rtc/rtc-x.ko", "RTC_DRV_X", ""
    )


def test_a_part_of_a_composite_module(tree: Path) -> None:
    ref = ModuleRef("drivers/iio/imu/inv/inv-i2c.ko", "INV_I2C", "")
    assert module_of(tree, "drivers/iio/imu/inv/inv_i2c.c") == ref
    magn = ModuleRef("drivers/iio/imu/inv/inv-i2c.ko", "INV_I2C", "INV_MAGN")
    assert module_of(tree, "drivers/iio/imu/inv/inv_magn.c") == magn


def test_an_object_the_parent_directory_names(tree: Path) -> None:
    write(tree / "drivers/rtc/Makefile", "obj-$(CONFIG_RTC_DRV_Y) += sub/rtc-y.o\n")
    assert module_of(tree, "drivers/rtc/sub/rtc-y.c") == ModuleRef(
        "drivers/rtc/sub/rtc-y.ko", "RTC_DRV_Y", ""
    )


def test_kbuild_wins_over_makefile(tree: Path) -> None:
    write(tree / "drivers/rtc/Kbuild", "obj-$(CONFIG_FROM_KBUILD) += rtc-x.o\n")
    ref = module_of(tree, "drivers/rtc/rtc-x.c")
    assert ref is not None and ref.symbol == "FROM_KBUILD"


def test_no_line_names_the_object(tree: Path) -> None:
    assert module_of(tree, "drivers/rtc/rtc-unknown.c") is None


def test_the_directories_lines_from_drivers_down(tree: Path) -> None:
    assert directory_conditions(tree, "drivers/iio/imu/inv") == ("IIO", "IIO_IMU")
    assert directory_conditions(tree, "drivers/misc") == ()
    assert directory_conditions(tree, "drivers/nowhere") is None


def test_the_deepest_directory_line_leads(tree: Path) -> None:
    write(
        tree / "drivers/Makefile",
        "obj-$(CONFIG_INPUT) += input/\nobj-$(CONFIG_SERIO) += input/serio/\n",
    )
    write(tree / "drivers/input/Makefile", "obj-$(CONFIG_INPUT_MISC) += misc/\n")
    assert directory_conditions(tree, "drivers/input/serio") == ("SERIO",)
    assert directory_conditions(tree, "drivers/input/misc") == ("INPUT", "INPUT_MISC")


# --- C sources --------------------------------------------------------------------------


def test_comments_go_and_strings_stay() -> None:
    code = 'a /* b "c" */ d // e\nf "g // h /* i */" \'"\' j'
    assert strip_comments(code) == 'a   d  \nf "g // h /* i */" \'"\' j'


@pytest.mark.parametrize(
    ("code", "defines"),
    [
        ("static struct i2c_driver lm75_driver = {\n\t.class = I2C_CLASS_HWMON,\n};", True),
        ("static struct i2c_driver foo_driver __refdata = {", True),
        ("struct i2c_driver d={", True),
        ("static struct i2c_driver foo_driver;", False),  # a declaration
        ("\tstruct i2c_driver *driver = to_i2c_driver(dev->driver);", False),
        ("/* static struct i2c_driver foo_driver = { */", False),
        ("static struct spi_driver foo_driver = {", False),
    ],
)
def test_an_i2c_driver_is_a_definition(code: str, defines: bool) -> None:
    assert defines_i2c_driver(strip_comments(code)) is defines


OF_TABLE = """
static const struct of_device_id __maybe_unused lm75_of_match[] = {
	{
		.compatible = "adi,adt75",
		.data = (void *)adt75
	},
	{ .compatible = "national,lm75", .data = (void *)lm75 },
	/* { .compatible = "gone,commented" }, */
	MAX1363_COMPATIBLE("maxim,max1361", max1361),
	{ .compatible = "adi," "joined" },
	{ },
};
static const struct of_device_id other[] = { { .compatible = "x,second-table" }, {} };
"""


def test_of_compatibles_of_every_table() -> None:
    assert of_compatibles(strip_comments(OF_TABLE)) == (
        "adi,adt75",
        "national,lm75",
        "maxim,max1361",
        "adi,joined",
        "x,second-table",
    )


I2C_TABLE = """
#define DRV_NAME "lp3952"
static const struct i2c_device_id lm75_ids[] = {
	{ "adt75", adt75, },
	{ .name = "named", .driver_data = 3 },
	{ .driver_data = 4, .name = "named-second" },
	{ DRV_NAME },
	{ HEADER_NAME, 1 },
	MAX1363_ID_TABLE("max1361", max1361),
	{ "a,b{}" },
	{ }
};
"""


def test_i2c_id_names_literal_named_macro_and_header_defined() -> None:
    names = i2c_id_names(strip_comments(I2C_TABLE), {"HEADER_NAME": "from-header"})
    assert names == ("adt75", "named", "named-second", "lp3952", "from-header", "max1361", "a,b{}")


def test_a_name_no_string_gives_is_left_out() -> None:
    code = "static const struct i2c_device_id ids[] = { { UNKNOWN_MACRO }, { } };"
    assert i2c_id_names(code) == ()


# --- modpost's aliases ------------------------------------------------------------------


def test_alias_devices() -> None:
    aliases = [
        "of:N*T*Cti,opt3001",
        "of:N*T*Cti,opt3001C*",  # modpost's wildcard twin of each OF alias
        "of:N*TtypeName*Cvendor,typed",  # an entry with a type: "*C" after it
        "of:NnodeT*",  # no compatible
        "i2c:opt3001",
        "acpi*:OPT3001:*",
    ]
    assert alias_devices(aliases) == (("ti,opt3001", "vendor,typed"), ("opt3001",))


def test_a_module_adds_what_the_source_did_not_show() -> None:
    driver = Driver("drivers/x/x.c", "x", "drivers/x/x.ko", "X", (), ("a,one",), ("one",))
    modinfo = {"alias": ["of:N*T*Ca,two", "of:N*T*Ca,one", "i2c:two"], "license": ["GPL"]}
    completed = with_module_aliases(driver, modinfo)
    assert completed.compatibles == ("a,one", "a,two")
    assert completed.ids == ("one", "two")


# --- the scan ---------------------------------------------------------------------------


def test_scan_finds_the_i2c_and_spi_drivers_of_the_subsystems(tree: Path) -> None:
    write(tree / "include/linux/rtc-x.h", '#define RTC_X_NAME "rtc-x"\n')
    write(
        tree / "drivers/rtc/rtc-x.c",
        "#include <linux/rtc-x.h>\n"
        'static const struct of_device_id ids[] = { { .compatible = "v,rtc-x" }, {} };\n'
        "static const struct i2c_device_id i2c_ids[] = { { RTC_X_NAME }, {} };\n"
        "static struct i2c_driver rtc_x_driver = {\n};\n",
    )
    write(tree / "drivers/rtc/rtc-spi.c", "static struct spi_driver d = {\n};\n")
    write(tree / "drivers/rtc/rtc-decl.c", "extern struct spi_driver d;\n")
    write(tree / "drivers/iio/imu/inv/inv_i2c.c", "static struct i2c_driver d = {\n};\n")
    write(tree / "drivers/misc/lost.c", "static struct i2c_driver d = {\n};\n")
    write(tree / "drivers/net/not-a-subsystem.c", "static struct i2c_driver d = {\n};\n")
    found = {d.key: d for d in scan(tree)}
    assert sorted(found) == [
        "drivers/iio/imu/inv/inv_i2c.c",
        "drivers/misc/lost.c",
        "drivers/rtc/rtc-spi.c@spi",
        "drivers/rtc/rtc-x.c",
    ]
    assert found["drivers/rtc/rtc-spi.c@spi"].bus == "spi"
    assert found["drivers/rtc/rtc-x.c"] == Driver(
        "drivers/rtc/rtc-x.c",
        "rtc",
        "drivers/rtc/rtc-x.ko",
        "RTC_DRV_X",
        ("RTC_LIB",),
        ("v,rtc-x",),
        ("rtc-x",),
    )
    inv = found["drivers/iio/imu/inv/inv_i2c.c"]
    assert (inv.module, inv.symbol, inv.conditions) == ("inv-i2c", "INV_I2C", ("IIO", "IIO_IMU"))
    lost = found["drivers/misc/lost.c"]
    assert (lost.module, lost.symbol) == ("", "")
    assert "drivers/misc/lost.o" in lost.reason


def test_scan_of_a_directory_that_is_no_kernel_tree(tmp_path: Path) -> None:
    with pytest.raises(RoadtestError, match="not a kernel source tree"):
        scan(tmp_path)


def test_a_driver_survives_json(tree: Path) -> None:
    driver = Driver("drivers/a/b.c", "a", "drivers/a/b.ko", "B", ("A",), ("v,b",), ("b",))
    driver = Driver(**{**driver.__dict__, "builds": {"um": True}, "reason": "why"})
    assert Driver.from_json(json.loads(json.dumps(driver.as_json()))) == driver
    driver = replace(driver, port_io=True)
    assert Driver.from_json(json.loads(json.dumps(driver.as_json()))) == driver


# --- ISA port I/O: what UML's machine cannot run ----------------------------------------

SUPERIO_AT_INIT = """
static inline void superio_outb(int ioreg, int reg, int val)
{
	outb(reg, ioreg);
	outb(val, ioreg + 1);
}
static int __init dme_init(void) { superio_outb(0x2e, 0x07, 0x0a); return 0; }
"""
UNDER_CONFIG_ISA = """
#ifdef CONFIG_ISA
static int lm_isa_read(int addr) { outb_p(0x40, addr); return inb_p(addr + 1); }
#else
static int lm_isa_read(int addr) { return 0; }
#endif
"""


@pytest.mark.parametrize(
    ("code", "does"),
    [
        (SUPERIO_AT_INIT, True),
        (UNDER_CONFIG_ISA, False),
        (UNDER_CONFIG_ISA.replace("#ifdef CONFIG_ISA", "#if IS_ENABLED(CONFIG_ISA)"), False),
        (UNDER_CONFIG_ISA.replace("#ifdef CONFIG_ISA", "#if defined(CONFIG_ISA)"), False),
        # The other branch of the test is what a kernel without ISA compiles.
        (UNDER_CONFIG_ISA.replace("return 0;", "return inb(addr);"), True),
        ("#ifndef CONFIG_ISA\nstatic int f(void) { return inw(0x60); }\n#endif\n", True),
        ("#ifndef CONFIG_ISA\n#else\nstatic int f(void) { return inw(0x60); }\n#endif\n", False),
        # A block nested in the ISA one ends without ending it.
        ("#ifdef CONFIG_ISA\n#if X\n#endif\noutl(1, 2);\n#endif\n", False),
        ("#if X\noutl(1, 2);\n#endif\n", True),
        ("static int pinb(int x); u8 v = readb(p); int r = request_region(0x2e, 2, n);", False),
        ("if (!request_muxed_region(0x2e, 2, DRVNAME)) return -EBUSY;", True),
    ],
)
def test_isa_port_io_outside_config_isa(code: str, does: bool) -> None:
    assert isa_port_io(code) is does


def test_a_machine_without_isa_ports_does_not_run_port_io() -> None:
    from roadtest.arch.um import UM
    from roadtest.arch.x86_64 import X86_64

    ports = Driver("drivers/hwmon/d.c", "hwmon", "", "D", (), (), ("d",), port_io=True)
    plain = Driver("drivers/hwmon/p.c", "hwmon", "", "P", (), (), ("p",))
    unbuilt = Driver("drivers/hwmon/u.c", "hwmon", "", "U", (), (), ("u",), port_io=True)
    outcome = Outcome({ports.source: True, plain.source: True, unbuilt.source: False}, {})
    on_um = machine_limits(outcome, [ports, plain, unbuilt], UM)
    assert on_um.builds == {ports.source: False, plain.source: True, unbuilt.source: False}
    assert "ISA port I/O" in on_um.reasons[ports.source]
    assert unbuilt.source not in on_um.reasons  # kconfig's own reason is the one to give
    assert machine_limits(outcome, [ports, plain, unbuilt], X86_64) == outcome


# --- the Kconfig language ---------------------------------------------------------------


@pytest.fixture
def kconfig_tree(tmp_path: Path) -> KconfigTree:
    write(
        tmp_path / "Kconfig",
        'mainmenu "Linux/$(ARCH)"\n'
        "cc-option = $(success,true)\n"
        'source "arch/$(SRCARCH)/Kconfig"\n'
        'source "drivers/Kconfig"\n',
    )
    write(tmp_path / "arch/um/Kconfig", "config UML\n\tdef_bool y\n")
    write(
        tmp_path / "drivers/Kconfig",
        'menu "Device drivers"\n'
        "config I2C\n"
        '\ttristate "I2C support"\n'
        "menuconfig IIO\n"
        '\ttristate "IIO"\n'
        "if IIO\n"
        'rsource "accel/Kconfig"\n'
        "endif # IIO\n"
        'menu "Joysticks"\n'
        "\tdepends on !UML\n"
        "config JOY\n"
        '\ttristate "A joystick" if EXPERT\n'
        "\tdepends on I2C\n"
        "\thelp\n"
        "\t  Help text is not Kconfig: if it were,\n"
        "\n"
        "\t  endif and config FAKE would break the blocks.\n"
        "endmenu\n"
        "choice\n"
        '\tprompt "Pick one"\n'
        "config PICKED\n"
        '\tbool "picked"\n'
        "endchoice\n"
        "config EXPERT\n"
        '\tbool "expert"\n'
        "endmenu\n",
    )
    write(
        tmp_path / "drivers/accel/Kconfig",
        "config ACC\n"
        '\ttristate "accelerometer"\n'
        "\tdepends on I2C && OTHER=n\n"
        "\tselect ACC_I2C if I2C\n"
        "config ACC_I2C\n"
        "\ttristate\n"
        "\tdepends on ACC\n"
        "config OTHER\n"
        '\ttristate "the other one"\n',
    )
    return KconfigTree(tmp_path, {"ARCH": "um", "SRCARCH": "um"})


def test_a_symbol_has_its_blocks_dependencies_and_its_own(kconfig_tree: KconfigTree) -> None:
    (acc,) = kconfig_tree.symbols["ACC"]
    assert acc.depends == ("IIO", "I2C && OTHER=n")
    assert (acc.kind, acc.prompt, acc.where) == ("tristate", True, "drivers/accel/Kconfig:1")
    (joy,) = kconfig_tree.symbols["JOY"]
    assert joy.depends == ("!UML", "EXPERT", "I2C")  # the menu's, its prompt's, its own
    assert "FAKE" not in kconfig_tree.symbols  # help text


def test_selects_choices_and_prompts(kconfig_tree: KconfigTree) -> None:
    assert kconfig_tree.selected_by == {"ACC_I2C": ["ACC"]}
    (acc_i2c,) = kconfig_tree.symbols["ACC_I2C"]
    assert not acc_i2c.prompt
    (picked,) = kconfig_tree.symbols["PICKED"]
    assert picked.in_choice
    assert not kconfig_tree.symbols["UML"][0].prompt


def test_an_unbalanced_block_is_an_error(tmp_path: Path) -> None:
    write(tmp_path / "Kconfig", "if FOO\nconfig BAR\n\tbool\n")
    with pytest.raises(RoadtestError, match="unbalanced"):
        KconfigTree(tmp_path, {})


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("A && B || C", "A && B || C"),
        ("A && (B || C)", "A && (B || C)"),
        ("!(A || B)", "!(A || B)"),
        ('X="y" && !Y', 'X="y" && !Y'),
        ("FOO != n", "FOO!=n"),
    ],
)
def test_expressions_read_and_shown(text: str, shown: str) -> None:
    assert show(parse_expr(text)) == shown


def test_expressions_by_tristate_logic(kconfig_tree: KconfigTree) -> None:
    config = {"CONFIG_I2C": "y", "CONFIG_IIO": "m", "CONFIG_UML": "y"}
    evaluate = Evaluator(config, kconfig_tree.symbols).value
    assert evaluate(parse_expr("I2C")) == 2
    assert evaluate(parse_expr("IIO")) == 1
    assert evaluate(parse_expr("I2C && IIO")) == 1  # the least
    assert evaluate(parse_expr("OTHER || IIO")) == 1  # the greatest
    assert evaluate(parse_expr("!IIO")) == 1  # y minus m
    assert evaluate(parse_expr("!UML")) == 0
    assert evaluate(parse_expr("OTHER=n")) == 2
    assert evaluate(parse_expr("IIO=y")) == 0
    assert evaluate(parse_expr("NOT_DEFINED_HERE")) == 0


def test_the_symbols_an_expression_wants() -> None:
    expr = parse_expr("(A || B) && !C && D=y && E!=n && F=n && !(G && !H)")
    assert list(wanted_symbols(expr)) == ["A", "B", "D", "E", "H"]


def test_requests_follow_dependencies_and_selects(kconfig_tree: KconfigTree) -> None:
    drivers = [
        Driver("drivers/accel/acc_i2c.c", "iio", "drivers/accel/acc_i2c.ko", "ACC_I2C", (), (), ()),
        Driver("drivers/joy.c", "input", "drivers/joy.ko", "JOY", ("IIO",), (), ()),
        Driver("drivers/picked.c", "misc", "drivers/picked.ko", "PICKED", (), (), ()),
    ]
    # ACC_I2C has no prompt: ACC, which selects it, is asked for as the driver (m); the
    # dependencies with y; the choice's member, and UML (no prompt), are left to kconfig.
    assert requests(kconfig_tree, drivers) == {
        "ACC": "m",
        "IIO": "y",
        "I2C": "y",
        "JOY": "m",
        "EXPERT": "y",
    }


def test_why_a_symbol_is_unset(kconfig_tree: KconfigTree) -> None:
    config = {"CONFIG_I2C": "y", "CONFIG_IIO": "y", "CONFIG_UML": "y", "CONFIG_OTHER": "m"}
    assert why_unset("JOY", kconfig_tree, config) == (
        "depends on !UML && EXPERT "
        "(EXPERT: kconfig leaves EXPERT unset though its dependencies hold)"
    )
    assert why_unset("ACC", kconfig_tree, config) == "depends on OTHER=n"
    assert why_unset("ACC_I2C", kconfig_tree, config) == (
        "depends on ACC (ACC: depends on OTHER=n)"
    )
    assert why_unset("NOWHERE", kconfig_tree, config) == "no Kconfig file defines NOWHERE"


# --- the listing and its cache ----------------------------------------------------------


def parse_sweep(args: list[str]) -> argparse.Namespace:
    top = cli._Parser(prog="roadtest")
    command.register(top.add_subparsers(dest="command", required=True))
    return top.parse_args(["sweep", *args])


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--examples", "0"], "1 or more"),
        (["-n", "0"], "1 or more"),
        (["--shard", "3/2"], "shard"),
        (["--shard", "x"], "shard"),
        (["merge", "out.db"], "at least one"),
    ],
)
def test_bad_sweep_options_are_usage_errors_before_anything_is_built(
    argv: list[str], message: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_build(*_: object, **__: object) -> None:
        raise AssertionError("a kernel was asked for before the options were checked")

    monkeypatch.setattr(roadtest.kernel, "cached_kernel", no_build)
    monkeypatch.setattr("roadtest.kernel.variants.ensure_kernel", no_build)
    args = parse_sweep(argv)
    with pytest.raises(UsageError, match=message):
        args.func(args)


def test_a_tree_that_is_no_directory_is_a_usage_error(tmp_path: Path) -> None:
    args = parse_sweep(["--list", "--tree", str(tmp_path / "missing")])
    with pytest.raises(UsageError, match="no such directory"):
        args.func(args)


def test_without_a_built_kernel_the_user_is_told_to_build(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(roadtest.kernel, "cached_kernel", lambda *_, **__: None)
    args = parse_sweep(["--list"])
    with pytest.raises(RoadtestError, match="roadtest build"):
        args.func(args)


def _driver(source: str, subsystem: str, builds: dict[str, bool], reason: str = "") -> Driver:
    module = f"drivers/{subsystem}/{Path(source).stem}.ko"
    return Driver(source, subsystem, module, "S", (), (), (), builds, reason)


def test_listing_sorted_with_counts() -> None:
    drivers = [
        _driver("drivers/rtc/rtc-b.c", "rtc", {"um": True, "x86_64": True}),
        _driver("drivers/input/joy.c", "input", {"um": False, "x86_64": True}, "um: no"),
        _driver("drivers/rtc/rtc-a.c", "rtc", {"um": False, "x86_64": False}, "never"),
    ]
    assert command.listing(drivers) == [
        "joy    input  i2c  x86_64     um: no",
        "rtc-a  rtc    i2c  -          never",
        "rtc-b  rtc    i2c  um x86_64",
        "",
        "subsystem  drivers  um  x86_64  neither",
        "input            1   0       1        0",
        "rtc              2   1       1        1",
        "total            3   1       2        1",
    ]


def test_listing_names_the_bus_and_counts_each() -> None:
    both = _driver("drivers/rtc/rtc-b.c", "rtc", {"um": True, "x86_64": True})
    drivers = [
        replace(both, bus="spi"),
        both,
        _driver("drivers/input/joy.c", "input", {"um": False, "x86_64": True}, "um: no"),
    ]
    assert command.listing(drivers) == [
        "joy    input  i2c  x86_64     um: no",
        "rtc-b  rtc    i2c  um x86_64",
        "rtc-b  rtc    spi  um x86_64",
        "",
        "subsystem  drivers  um  x86_64  neither",
        "input            1   0       1        0",
        "rtc              2   2       2        0",
        "i2c total        2   1       2        0",
        "spi total        1   1       1        0",
        "total            3   2       3        0",
    ]


def test_the_inventory_is_cached_until_what_it_read_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tree = tmp_path / "linux"
    source = write(tree / "drivers/rtc/rtc-a.c", "")
    computed: list[Path] = []

    def compute(tree: Path) -> list[Driver]:
        computed.append(tree)
        return [_driver("drivers/rtc/rtc-a.c", "rtc", {})]

    def buildability(
        tree: Path, drivers: list[Driver], *_: object
    ) -> tuple[list[Driver], list[Path]]:
        return [Driver(**{**d.__dict__, "builds": {"um": True}}) for d in drivers], []

    monkeypatch.setattr(command, "scan", compute)
    monkeypatch.setattr(command, "scanned_paths", lambda tree: [source])
    monkeypatch.setattr(kconfig, "config_files", lambda *_: [])
    monkeypatch.setattr(kconfig, "buildability", buildability)

    def load() -> list[Driver]:
        return command.load_inventory(
            tree, cache_dir=tmp_path / "cache", repo_root=tmp_path, progress=lambda _: None
        )

    first = load()
    assert first[0].builds == {"um": True}
    assert load() == first and len(computed) == 1
    source.write_text("changed\n")
    assert load() == first and len(computed) == 2
    cache = command.cache_file(tmp_path / "cache", tree)
    assert [p.name for p in cache.parent.iterdir() if p.suffix == ".tmp"] == []
    cache.write_text("{ half a file")  # what a non-atomic write would leave: recomputed
    assert load() == first and len(computed) == 3
