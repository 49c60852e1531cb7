"""Module lookup by modalias from .modinfo sections, and dependency order."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import make_ko

from roadtest.kernel.modinfo import read_modinfo
from roadtest.testing.modules import ModuleError, ModuleIndex, params_from_cmdline


@pytest.fixture
def modules(tmp_path: Path) -> Path:
    root = tmp_path / "lib/modules/6.12.0-roadtest"
    make_ko(
        root / "kernel/drivers/iio/light/opt3001.ko",
        "alias=i2c:opt3001",
        "alias=of:N*T*Cti,opt3001C*",
        "alias=of:N*T*Cti,opt3001",
        "depends=industrialio-buffer",
        "name=opt3001",
        "license=GPL",
    )
    make_ko(
        root / "kernel/drivers/iio/industrialio-buffer.ko",
        "depends=industrialio",
        "name=industrialio_buffer",
    )
    make_ko(root / "kernel/drivers/iio/industrialio.ko", "depends=", "name=industrialio")
    # A driver with no OF match table: it binds through its i2c_device_id table only.
    make_ko(
        root / "kernel/drivers/hwmon/sensor9.ko",
        "alias=i2c:sensor9",
        "alias=i2c:sensor9b",
        "depends=",
        "name=sensor9",
    )
    # A chip with both buses: one OF table in each bus's module.
    for bus in ("spi", "i2c"):
        make_ko(
            root / f"kernel/drivers/iio/pressure/dual-{bus}.ko",
            f"alias={bus}:dual",
            "alias=of:N*T*Cacme,dualC*",
            "alias=of:N*T*Cacme,dual",
            "depends=",
            f"name=dual_{bus}",
        )
    make_ko(
        root / "kernel/drivers/misc/broken.ko",
        "alias=of:N*T*Cacme,broken",
        "depends=missing_mod",
        "name=broken",
    )
    return root


def test_modinfo_fields_are_read(modules: Path) -> None:
    info = read_modinfo(modules / "kernel/drivers/iio/light/opt3001.ko")
    assert info["alias"] == ["i2c:opt3001", "of:N*T*Cti,opt3001C*", "of:N*T*Cti,opt3001"]
    assert info["license"] == ["GPL"]


def test_compatible_finds_the_module_and_its_dependencies_first(modules: Path) -> None:
    index = ModuleIndex(modules)
    module = index.for_compatible("ti,opt3001")
    assert module.name == "opt3001"
    assert [m.name for m in index.load_order(module)] == [
        "industrialio",
        "industrialio_buffer",
        "opt3001",
    ]


def test_modalias_matching(modules: Path) -> None:
    index = ModuleIndex(modules)
    assert [m.name for m in index.for_modalias("of:Nlight-sensorT(null)Cti,opt3001")] == ["opt3001"]
    assert [m.name for m in index.for_modalias("i2c:opt3001")] == ["opt3001"]
    assert index.for_modalias("i2c:nothing") == []


def test_compatible_with_no_module_says_what_to_do(modules: Path) -> None:
    with pytest.raises(
        ModuleError, match=r"no module .* compatible 'acme,none': add the driver's CONFIG_"
    ):
        ModuleIndex(modules).for_compatible("acme,none")


def test_missing_dependency_is_reported(modules: Path) -> None:
    index = ModuleIndex(modules)
    with pytest.raises(ModuleError, match="broken needs missing_mod"):
        index.load_order(index.for_compatible("acme,broken"))


def test_an_override_replaces_the_kernel_module_of_its_name(modules: Path, tmp_path: Path) -> None:
    index = ModuleIndex(modules)
    mine = make_ko(
        tmp_path / "out/opt3001.ko",
        "alias=of:N*T*Cti,opt3001",
        "depends=industrialio-buffer",
        "name=opt3001",
        "vermagic=6.12.0-roadtest mod_unload",
    )
    index.override(mine)
    order = index.load_order(index.for_compatible("ti,opt3001"))
    assert [m.path for m in order][-1] == mine
    assert [m.name for m in order] == ["industrialio", "industrialio_buffer", "opt3001"]


def test_an_override_that_is_not_a_module_is_one_clear_error(tmp_path: Path) -> None:
    index = ModuleIndex(tmp_path)
    text = tmp_path / "notes.ko"
    text.write_text("hello")
    with pytest.raises(ModuleError, match=r"notes.ko: not a kernel module \(not ELF: "):
        index.override(text)
    with pytest.raises(ModuleError, match="gone.ko: cannot read it: No such file or directory"):
        index.override(tmp_path / "gone.ko")
    plain = make_ko(tmp_path / "plain.ko", "name=plain")
    with pytest.raises(ModuleError, match="no .modinfo vermagic"):
        index.override(plain)


def test_an_i2c_device_finds_a_driver_by_its_i2c_id_table(modules: Path) -> None:
    # The I2C core names a devicetree client after the part of its compatible after the
    # first comma, and matches that against the driver's i2c_device_id table.
    index = ModuleIndex(modules)
    assert index.for_compatible("acme,sensor9b", "i2c").name == "sensor9"
    with pytest.raises(ModuleError, match="add the driver's CONFIG_"):
        index.for_compatible("acme,sensor9b", "platform")
    with pytest.raises(ModuleError):
        index.for_compatible("other,sensor9c", "i2c")


def test_module_parameters_on_the_kernel_command_line_as_modprobe_takes_them() -> None:
    # modprobe(8): "<module>.<option>" on the kernel command line; '-' and '_' match alike.
    cmdline = [
        "quiet",
        "opt3001.dyndbg=+p",
        "vcnl4000.dyndbg=+p",
        'tps6286x-regulator.dyndbg="+p"',
        "opt3001.debug=1",
        "dyndbg=module opt3001 +p",
    ]
    assert params_from_cmdline(cmdline, "opt3001") == "dyndbg=+p debug=1"
    assert params_from_cmdline(cmdline, "tps6286x_regulator") == 'dyndbg="+p"'
    assert params_from_cmdline(cmdline, "pcf8563") == ""


def test_a_chip_with_both_buses_gets_its_buss_module(modules: Path) -> None:
    index = ModuleIndex(modules)
    assert index.for_compatible("acme,dual", "i2c").name == "dual_i2c"
    assert index.for_compatible("acme,dual", "spi").name == "dual_spi"


def test_a_chip_whose_bus_modules_have_no_bus_aliases_gets_its_buss_module(tmp_path: Path) -> None:
    # inv-icm42600-i2c and -spi: OF tables, and no bus aliases (no MODULE_DEVICE_TABLE of
    # the I2C driver's id table, no spi_device_id table).
    make_ko(tmp_path / "imu-i2c.ko", "name=imu_i2c", "alias=of:N*T*Cacme,imu")
    make_ko(tmp_path / "imu-spi.ko", "name=imu_spi", "alias=of:N*T*Cacme,imu")
    index = ModuleIndex(tmp_path)
    assert index.for_compatible("acme,imu", "spi").name == "imu_spi"
    assert index.for_compatible("acme,imu", "i2c").name == "imu_i2c"


def test_a_chip_two_drivers_claim_goes_to_the_one_named_after_it(tmp_path: Path) -> None:
    # rtc-ds1307's OF table has epson,rx8025; rtc-rx8025 has only an i2c_device_id table.
    make_ko(
        tmp_path / "rtc-ds1307.ko",
        "name=rtc_ds1307",
        "alias=of:N*T*Cepson,rx8025",
        "alias=of:N*T*Cdallas,ds1307",
        "alias=i2c:ds1307",
        "alias=i2c:rx8025",
    )
    make_ko(tmp_path / "rtc-rx8025.ko", "name=rtc_rx8025", "alias=i2c:rx8025")
    index = ModuleIndex(tmp_path)
    assert [m.name for m in index.claimants("epson,rx8025", "i2c")] == [
        "rtc_ds1307",
        "rtc_rx8025",
    ]
    assert index.for_compatible("epson,rx8025", "i2c").name == "rtc_rx8025"
    assert index.for_compatible("dallas,ds1307", "i2c").name == "rtc_ds1307"
    assert [m.name for m in index.claimants("dallas,ds1307", "i2c")] == ["rtc_ds1307"]
