"""Kernel modules by modalias: which .ko serves a device, and what it needs first.

The index is read from the `.modinfo` sections of the build's .ko files
(pyelftools), so a test names a compatible string and never a module.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field
from pathlib import Path

from elftools.common.exceptions import ELFError

from roadtest.errors import RoadtestError
from roadtest.kernel.modinfo import read_modinfo


class ModuleError(RoadtestError):
    pass


@dataclass(frozen=True)
class ModuleInfo:
    name: str
    path: Path
    aliases: tuple[str, ...]
    depends: tuple[str, ...]
    fields: dict[str, list[str]] = field(hash=False, compare=False)


def _module_name(path: Path, info: dict[str, list[str]]) -> str:
    names = info.get("name")
    return names[0] if names else path.name.removesuffix(".ko").replace("-", "_")


def params_from_cmdline(args: list[str], module: str) -> str:
    """The `module.param=value` kernel arguments of `module`, as its load parameters.

    The kernel keeps these for built-in code only; for a loadable module modprobe(8)
    reads them from /proc/cmdline, and roadtest loads modules in its place. Module
    names match with `-` and `_` alike, as modprobe matches them."""
    wanted = module.replace("-", "_")
    params = []
    for arg in args:
        name, dot, param = arg.partition(".")
        if dot and param and "=" not in name and name.replace("-", "_") == wanted:
            params.append(param)
    return " ".join(params)


def module_info(path: Path) -> ModuleInfo:
    info = read_modinfo(path)
    depends = tuple(d for d in ",".join(info.get("depends", [])).split(",") if d)
    return ModuleInfo(
        _module_name(path, info),
        path,
        tuple(info.get("alias", [])),
        tuple(d.replace("-", "_") for d in depends),
        info,
    )


class ModuleIndex:
    def __init__(self, modules_dir: Path) -> None:
        self.modules_dir = modules_dir
        self.overrides: list[Path] = []  # modules loaded in place of the kernel's
        self.by_name: dict[str, ModuleInfo] = {}
        for path in sorted(modules_dir.rglob("*.ko")):
            mod = module_info(path)
            self.by_name[mod.name] = mod

    def override(self, path: Path) -> ModuleInfo:
        """Use the module at `path` (built out of tree, say) in place of the kernel's
        module of the same name, or in addition when the kernel has none."""
        try:
            mod = module_info(path)
        except OSError as err:
            raise ModuleError(f"{path}: cannot read it: {err.strerror or err}") from None
        except ELFError as err:
            raise ModuleError(f"{path}: not a kernel module (not ELF: {err})") from None
        if "vermagic" not in mod.fields:
            raise ModuleError(f"{path}: not a kernel module (no .modinfo vermagic)")
        self.by_name[mod.name] = mod
        self.overrides.append(path)
        return mod

    def directories(self) -> list[Path]:
        """Where the modules it loads are: the overrides' directories first, then the
        kernel's (for a debugger's lx-symbols, which takes the first file of a name)."""
        overrides = [path.parent.absolute() for path in self.overrides]
        return list(dict.fromkeys([*overrides, self.modules_dir]))

    def for_modalias(self, modalias: str) -> list[ModuleInfo]:
        return [
            mod
            for mod in self.by_name.values()
            if any(fnmatch.fnmatchcase(modalias, pattern) for pattern in mod.aliases)
        ]

    def for_compatible(self, compatible: str, bus: str = "") -> ModuleInfo:
        """The module whose OF alias matches `compatible` (whatever the node's name and type),
        or for an I2C or SPI device, the module whose i2c_device_id or spi_device_id table
        has its name."""
        # What an OF device with this compatible announces, whatever its node's name and type.
        found = self.for_modalias(f"of:NdeviceT(null)C{compatible}")
        if len(found) > 1 and bus:
            # A chip with both buses has a driver module for each (bmp280-i2c, bmp280-spi)
            # with one OF table: the device's bus says which, by the module's bus aliases.
            ours = [m for m in found if any(a.startswith(f"{bus}:") for a in m.aliases)]
            if not ours:
                # Bus modules with OF tables only, no bus aliases (inv-icm42600-i2c and
                # inv-icm42600-spi): the one named after the bus.
                ours = [m for m in found if bus in m.name.split("_")]
            found = ours or found
        if not found and bus in ("i2c", "spi"):
            # The I2C and SPI cores name a devicetree device after its compatible's part
            # after the first comma (of_alias_from_compatible), and drivers without an OF
            # table match that name against their i2c_device_id or spi_device_id table:
            # MODALIAS=i2c:<name>, spi:<name>.
            found = self.for_modalias(f"{bus}:{compatible.partition(',')[2] or compatible}")
        if not found:
            raise ModuleError(
                f"no module in {self.modules_dir} has an alias for compatible {compatible!r}: "
                "add the driver's CONFIG_ option (=m) to a .config fragment next to the test"
            )
        claimants = self.claimants(compatible, bus)
        if len(claimants) > 1:
            # Two drivers claim the chip (rtc-ds1307's OF table has epson,rx8025, which
            # rtc-rx8025 matches by its i2c_device_id table): the chip's own driver is
            # the one named after it.
            chip = (compatible.partition(",")[2] or compatible).replace("-", "_")
            named = [m for m in claimants if chip in m.name]
            if named:
                return named[0]
        return found[0]

    def claimants(self, compatible: str, bus: str = "") -> list[ModuleInfo]:
        """Every module that would take a device of `compatible` on `bus`: by its OF table,
        or (I2C, SPI) by its device-id table. More than one: a bind must name the driver."""
        found = self.for_modalias(f"of:NdeviceT(null)C{compatible}")
        if bus:
            # Only modules with a driver on that bus (bmp280-i2c, not bmp280-spi).
            found = [m for m in found if any(a.startswith(f"{bus}:") for a in m.aliases)]
        if bus in ("i2c", "spi"):
            name = compatible.partition(",")[2] or compatible
            found += [m for m in self.for_modalias(f"{bus}:{name}") if m not in found]
        return found

    def load_order(self, module: ModuleInfo) -> list[ModuleInfo]:
        """`module` and its dependencies, dependencies first."""
        order: list[ModuleInfo] = []
        seen: set[str] = set()

        def visit(mod: ModuleInfo) -> None:
            if mod.name in seen:
                return
            seen.add(mod.name)
            for dep in mod.depends:
                if dep not in self.by_name:
                    raise ModuleError(
                        f"module {mod.name} needs {dep}, which is not in {self.modules_dir}"
                    )
                visit(self.by_name[dep])
            order.append(mod)

        visit(module)
        return order
