"""The I2C and SPI drivers of a kernel tree's device subsystems: which .c files define a
`struct i2c_driver` or a `struct spi_driver` (a file that defines both, as drivers/iio/dac/
ad5064.c does, is a driver on each bus), the module and Kconfig symbol kbuild builds each
into (from the Makefiles), and the devices each matches (its of_device_id table and its
bus's i2c_device_id or spi_device_id table, or a built module's aliases). Pure functions of
the tree: what kconfig makes of the symbols is kconfig.py's."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path, PurePosixPath
from typing import Any

from roadtest.errors import RoadtestError

SUBSYSTEMS = ("iio", "hwmon", "input", "regulator", "rtc", "leds", "power", "gpio", "misc")
# The buses whose drivers the sweep binds: the struct each defines, its device id table.
BUSES = ("i2c", "spi")


def driver_key(source: str, bus: str) -> str:
    """What names one driver where a source file may hold one per bus: its source for an
    I2C driver (drivers/rtc/rtc-pcf2127.c, as before SPI was swept), `source@bus` for
    another (drivers/rtc/rtc-pcf2127.c@spi)."""
    return source if bus == "i2c" else f"{source}@{bus}"


def split_key(key: str) -> tuple[str, str]:
    """The source and bus of a driver_key()."""
    source, at, bus = key.rpartition("@")
    if at and bus in BUSES:
        return source, bus
    return key, "i2c"


@dataclass(frozen=True)
class Driver:
    """One driver: a .c file's `struct i2c_driver` or `struct spi_driver`."""

    source: str  # relative to the tree: drivers/rtc/rtc-pcf8563.c
    subsystem: str  # the directory under drivers/: rtc
    module_path: str  # its .ko as modules_install lays it out under kernel/; "" if unknown
    symbol: str  # the Kconfig symbol that builds the module, without CONFIG_; "" if unknown
    # Other symbols kbuild needs set to compile the file: those of the directories above it
    # (obj-$(CONFIG_RTC_LIB) += rtc/) and of its line in a composite module (foo-$(CONFIG_X)).
    conditions: tuple[str, ...]
    compatibles: tuple[str, ...]  # OF compatibles it matches
    # The names of its bus's id table (i2c_device_id, spi_device_id); for an SPI driver
    # without one, its driver's name, which the SPI core matches a modalias against.
    ids: tuple[str, ...]
    # target name -> kconfig allows it and the target's machine can run it
    builds: dict[str, bool] = field(default_factory=dict)
    reason: str = ""  # why it is not built for some target (or has no symbol); "" if it is
    bus: str = "i2c"  # "i2c" or "spi"
    # Its file does ISA port I/O whatever the config (isa_port_io): a machine without ISA
    # ports (Target.isa_ports) cannot run it.
    port_io: bool = False

    @property
    def key(self) -> str:
        """The driver's name where a file may hold one per bus (driver_key)."""
        return driver_key(self.source, self.bus)

    @property
    def module(self) -> str:
        """The module's name as its file is named (rtc-pcf8563), or "" if unknown."""
        return PurePosixPath(self.module_path).stem

    def as_json(self) -> dict[str, object]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Driver:
        return cls(
            source=str(data["source"]),
            subsystem=str(data["subsystem"]),
            module_path=str(data["module_path"]),
            symbol=str(data["symbol"]),
            conditions=tuple(data["conditions"]),
            compatibles=tuple(data["compatibles"]),
            ids=tuple(data["ids"]),
            builds={str(k): bool(v) for k, v in data["builds"].items()},
            reason=str(data["reason"]),
            bus=str(data.get("bus", "i2c")),
            port_io=bool(data.get("port_io", False)),
        )


# --- C source ---------------------------------------------------------------------------

# A string or character literal (kept), or a comment (blanked): in one alternation so that
# "//" inside a string is not a comment, nor a quote inside a comment a string.
_LEXEMES = re.compile(r'"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'|/\*.*?\*/|//[^\n]*', re.S)
_STRING = re.compile(r'"((?:\\.|[^"\\\n])*)"')
_BUS_DRIVER = {
    bus: re.compile(rf"\bstruct\s+{bus}_driver\s+\w+(?:\s+__\w+)*\s*=\s*\{{") for bus in BUSES
}


def strip_comments(text: str) -> str:
    """C source with its comments replaced by a space, its literals untouched."""

    def keep_literals(match: re.Match[str]) -> str:
        lexeme = match.group(0)
        return " " if lexeme.startswith("/") else lexeme

    return _LEXEMES.sub(keep_literals, text)


# asm/io.h's port accessors (inb() .. outl(), their _p twins) and a Super-I/O region's
# request; and the preprocessor lines that open, split and close a conditional block.
_PORT_IO = re.compile(r"\b(?:(?:in|out)[bwl](?:_p)?|request_muxed_region)\s*\(")
_IF_ISA = re.compile(
    r"#\s*if(?:def\s+CONFIG_ISA|\s+defined\s*\(?\s*CONFIG_ISA|\s+IS_ENABLED\s*\(\s*CONFIG_ISA)\b"
)
_IFNDEF_ISA = re.compile(r"#\s*if(?:ndef\s+CONFIG_ISA|\s+!\s*defined\s*\(?\s*CONFIG_ISA)\b")
_DIRECTIVE = re.compile(r"#\s*(if|ifdef|ifndef|elif|else|endif)\b")


def isa_port_io(code: str) -> bool:
    """Whether comment-free C code does port I/O outside its CONFIG_ISA blocks: lm78 and
    w83781d keep their ISA probe under `#ifdef CONFIG_ISA`, which UML does not set;
    dme1737 probes its Super-I/O ports at module init whatever the config."""
    # One frame per open #if: whether it tests CONFIG_ISA, and whether its current branch
    # is the one CONFIG_ISA=y compiles.
    frames: list[tuple[bool, bool]] = []
    for line in code.splitlines():
        directive = _DIRECTIVE.match(line.strip())
        if directive is None:
            if not any(isa for tests, isa in frames if tests) and _PORT_IO.search(line):
                return True
            continue
        word = directive.group(1)
        if word in ("if", "ifdef", "ifndef"):
            positive, negative = _IF_ISA.match(line.strip()), _IFNDEF_ISA.match(line.strip())
            frames.append((bool(positive or negative), bool(positive)))
        elif frames and word in ("else", "elif"):
            tests, isa = frames[-1]
            frames[-1] = (tests, tests and not isa and word == "else")
        elif frames and word == "endif":
            frames.pop()
    return False


def defines_driver(code: str, bus: str) -> bool:
    """Whether comment-free C code defines (not only declares) a `struct <bus>_driver`."""
    return _BUS_DRIVER[bus].search(code) is not None


def defines_i2c_driver(code: str) -> bool:
    """Whether comment-free C code defines (not only declares) a `struct i2c_driver`."""
    return defines_driver(code, "i2c")


def _table_bodies(code: str, struct: str) -> list[str]:
    """The initialisers of every array of `struct <struct>` the code defines, braces excluded."""
    # Attributes may come before the name or after the brackets (__maybe_unused, __initconst).
    start = re.compile(
        rf"\bstruct\s+{struct}\s+(?:__\w+\s+)*\w+\s*\[[^\]]*\]\s*(?:__\w+\s*)*=\s*\{{"
    )
    return [_closing(code, match.end()) for match in start.finditer(code)]


_OPENING = {"{": "}", "(": ")", "[": "]"}


def _closing(code: str, position: int) -> str:
    """The text from `position`, just inside an opening bracket, to its closing bracket."""
    return code[position : _scan(code, position, stop_at_comma=False) - 1]


def _scan(code: str, position: int, *, stop_at_comma: bool) -> int:
    """Where the bracket open at `position` closes (just past it), or, with stop_at_comma,
    where the first comma outside brackets is (just past it); the end if neither comes."""
    depth = 0
    i = position
    while i < len(code):
        char = code[i]
        if char == '"':
            literal = _STRING.match(code, i)
            i = literal.end() if literal else i + 1
            continue
        i += 1
        if char in _OPENING:
            depth += 1
        elif char in _OPENING.values():
            depth -= 1
            if depth < 0:
                return i
        elif char == "," and depth == 0 and stop_at_comma:
            return i
    return i


def _items(text: str) -> list[str]:
    """An initialiser list's items: split at commas outside brackets and strings."""
    items = []
    i = 0
    while i < len(text):
        end = _scan(text, i, stop_at_comma=True)
        item = text[i:end].rstrip(",").strip()
        if item:
            items.append(item)
        i = end
    return items


def _unescape(literal: str) -> str:
    return literal.encode().decode("unicode_escape")


_STRING_DEFINE = re.compile(
    r'^[ \t]*#[ \t]*define[ \t]+(\w+)[ \t]+("(?:\\.|[^"\\\n])*")[ \t]*$', re.M
)
_TOKEN = re.compile(r'"(?:\\.|[^"\\\n])*"|\w+|\S')


def string_defines(code: str) -> dict[str, str]:
    """The macros comment-free C code defines as a string literal: {"DRV_NAME": "lm75"}."""
    return {name: _unescape(value[1:-1]) for name, value in _STRING_DEFINE.findall(code)}


def _string_value(expression: str, defines: Mapping[str, str]) -> str:
    """The value of string literals and macros defined as one, side by side as C joins
    them ("adi," "ad5110", DRV_NAME); "" for any other expression."""
    value = ""
    for token in _TOKEN.findall(expression):
        if token.startswith('"'):
            value += _unescape(token[1:-1])
        elif token in defines:
            value += defines[token]
        else:
            return ""
    return value


def _member(item: str, designator: str, position: int, defines: Mapping[str, str]) -> str:
    """The string one table entry gives a member: `{ .name = X }`, the member at `position`
    of `{ X, ... }`, or the first string argument of a macro that makes the entry
    (`MAX1363_ID_TABLE("max1361", max1361)`); "" if none is a string."""
    if item.startswith("{"):
        members = _items(_closing(item, 1))
        for member in members:
            named = re.match(rf"\.{designator}\s*=(.*)$", member, re.S)
            if named:
                return _string_value(named.group(1), defines)
        positional = [m for m in members if not m.startswith(".")]
        return _string_value(positional[position], defines) if len(positional) > position else ""
    call = re.match(r"\w+\s*\(", item)
    if call is None:
        return ""
    arguments = (_string_value(a, defines) for a in _items(_closing(item, call.end())))
    return next((a for a in arguments if a), "")


def _table_strings(
    code: str, struct: str, designator: str, position: int, defines: Mapping[str, str]
) -> tuple[str, ...]:
    found = (
        _member(item, designator, position, defines)
        for body in _table_bodies(code, struct)
        for item in _items(body)
    )
    return tuple(dict.fromkeys(s for s in found if s))


def of_compatibles(code: str, defines: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """The compatibles of the of_device_id tables of comment-free C code (the struct's
    members: name, type, compatible)."""
    return _table_strings(code, "of_device_id", "compatible", 2, _defines(code, defines))


def id_names(code: str, bus: str, defines: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """The names of the <bus>_device_id tables of comment-free C code (members: name,
    driver_data, for i2c_device_id and spi_device_id alike)."""
    return _table_strings(code, f"{bus}_device_id", "name", 0, _defines(code, defines))


_DRIVER_NAME = re.compile(r"\.driver\s*(?:\.\s*name\s*=|=\s*\{[^{}]*?\.name\s*=)", re.S)


def driver_names(code: str, bus: str, defines: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """The `.driver.name` of each `struct <bus>_driver` comment-free C code defines: what
    the SPI core matches a device's modalias against when the driver has no id table
    (spi_match_device(): `strcmp(spi->modalias, drv->name)`)."""
    names = []
    for start in _BUS_DRIVER[bus].finditer(code):
        body = _closing(code, start.end())
        named = _DRIVER_NAME.search(body)
        if named is not None:
            end = _scan(body, named.end(), stop_at_comma=True)
            value = _string_value(
                body[named.end() : end].rstrip(",}").strip(), _defines(code, defines)
            )
            if value:
                names.append(value)
    return tuple(dict.fromkeys(names))


def i2c_id_names(code: str, defines: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """The names of the i2c_device_id tables of comment-free C code."""
    return id_names(code, "i2c", defines)


def _defines(code: str, more: Mapping[str, str] | None) -> dict[str, str]:
    """The code's own string macros, over those of its headers (`more`)."""
    return {**(more or {}), **string_defines(code)}


# --- kbuild Makefiles -------------------------------------------------------------------


@dataclass(frozen=True)
class Kbuild:
    """What one directory's kbuild file says about its objects (Documentation/kbuild/
    makefiles.rst): paths are relative to its directory; a symbol is "" for obj-y/obj-m."""

    objects: Mapping[str, str]  # obj-$(CONFIG_FOO) += foo.o: "foo.o" -> "FOO"
    subdirs: Mapping[str, str]  # obj-$(CONFIG_FOO) += foo/: "foo" -> "FOO"
    # Composite objects: foo-y := a.o, foo-objs := a.o, foo-$(CONFIG_BAR) += b.o:
    # "foo.o" -> {"a.o": "", "b.o": "BAR"} (the symbol the part's own line needs).
    parts: Mapping[str, Mapping[str, str]]


_ASSIGNMENT = re.compile(r"^([^\s:+?=]+)\s*(?::=|\+=|\?=|=)(.*)$")
_CONFIG_REF = re.compile(r"\$[({]CONFIG_(\w+)[)}]")
_GOAL = re.compile(r"^obj-(.+)$")
_COMPOSITE = re.compile(r"^(.+)-(y|m|objs|\$[({]CONFIG_\w+[)}])$")


def _logical_lines(text: str) -> Iterable[str]:
    """A Makefile's lines with continuations joined and comments dropped."""
    pending = ""
    for raw in text.splitlines():
        line = raw.split("#", 1)[0] if "#" in raw else raw
        if raw.endswith("\\") and "#" not in raw:
            pending += line[:-1] + " "
            continue
        yield (pending + line).strip()
        pending = ""
    if pending:
        yield pending.strip()


def _symbol_of(suffix: str) -> str | None:
    """The symbol of a variable's suffix: "y"/"m" -> "", "$(CONFIG_FOO)" -> "FOO", else None
    (a suffix that is neither, as in obj-$(foo-objs): not an object list kbuild builds)."""
    if suffix in ("y", "m"):
        return ""
    ref = _CONFIG_REF.search(suffix)
    return ref.group(1) if ref else None


def parse_kbuild(text: str) -> Kbuild:
    objects: dict[str, str] = {}
    subdirs: dict[str, str] = {}
    parts: dict[str, dict[str, str]] = {}
    for line in _logical_lines(text):
        assignment = _ASSIGNMENT.match(line)
        if assignment is None:
            continue
        name, values = assignment.group(1), assignment.group(2).split()
        if goal := _GOAL.match(name):
            symbol = _symbol_of(goal.group(1))
            if symbol is None:
                continue
            for value in values:
                if value.endswith(".o"):
                    objects.setdefault(value, symbol)
                elif value.endswith("/"):
                    subdirs.setdefault(value.rstrip("/"), symbol)
        elif composite := _COMPOSITE.match(name):
            suffix = composite.group(2)
            condition = "" if suffix in ("y", "m", "objs") else _symbol_of(suffix) or ""
            members = parts.setdefault(composite.group(1) + ".o", {})
            for value in values:
                if value.endswith(".o"):
                    members.setdefault(value, condition)
    return Kbuild(objects, subdirs, parts)


def read_kbuild(directory: Path) -> Kbuild | None:
    """A directory's kbuild file (Kbuild wins over Makefile, as in kbuild), or None."""
    for name in ("Kbuild", "Makefile"):
        path = directory / name
        if path.is_file():
            return parse_kbuild(path.read_text(errors="replace"))
    return None


@dataclass(frozen=True)
class ModuleRef:
    module_path: str  # the .ko's path relative to the tree: drivers/rtc/rtc-pcf8563.ko
    symbol: str  # "" for obj-y / obj-m
    part_condition: str  # the composite line's own symbol (foo-$(CONFIG_X) += this.o), or ""


def module_of(tree: Path, source: str) -> ModuleRef | None:
    """The module kbuild builds `source` (a .c file relative to the tree) into, from the
    kbuild file of its directory or of a directory above it up to drivers/."""
    obj = PurePosixPath(source).with_suffix(".o")
    directory = obj.parent
    while directory.parts[:1] == ("drivers",):
        kbuild = read_kbuild(tree / directory)
        if kbuild is not None:
            relative = obj.relative_to(directory).as_posix()
            if relative in kbuild.objects:
                return _module_ref(directory, relative, kbuild.objects[relative], "")
            for composite, members in kbuild.parts.items():
                if relative in members and composite in kbuild.objects:
                    symbol = kbuild.objects[composite]
                    return _module_ref(directory, composite, symbol, members[relative])
        directory = directory.parent
    return None


def _module_ref(directory: PurePosixPath, obj: str, symbol: str, condition: str) -> ModuleRef:
    return ModuleRef((directory / obj).with_suffix(".ko").as_posix(), symbol, condition)


def directory_conditions(tree: Path, directory: str) -> tuple[str, ...] | None:
    """The symbols of the obj-$(CONFIG_X) += dir/ lines that lead kbuild from drivers/ down to
    `directory` (obj-y lines need none), outermost first; None if no chain of lines does."""
    target = PurePosixPath(directory)
    current = PurePosixPath("drivers")
    symbols: list[str] = []
    while current != target:
        kbuild = read_kbuild(tree / current)
        if kbuild is None:
            return None
        # The deepest subdirectory line that leads towards the target: drivers/Makefile
        # descends into input/serio/ itself, not through input/.
        steps = [
            (current / sub, symbol)
            for sub, symbol in kbuild.subdirs.items()
            if target.is_relative_to(current / sub) and current / sub != current
        ]
        if not steps:
            return None
        current, symbol = max(steps, key=lambda step: len(step[0].parts))
        if symbol:
            symbols.append(symbol)
    return tuple(symbols)


# --- the scan ---------------------------------------------------------------------------


def driver_sources(tree: Path) -> list[Path]:
    """Every .c file of the subsystems' directories, sorted by path."""
    drivers = tree / "drivers"
    if not (drivers / "Makefile").is_file():
        raise RoadtestError(f"{tree}: not a kernel source tree (no drivers/Makefile)")
    return sorted(p for sub in SUBSYSTEMS for p in (drivers / sub).rglob("*.c") if p.is_file())


_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*(?:"([^"]+)"|<(linux/[^>]+)>)', re.M)


def included_headers(tree: Path, source: Path, code: str) -> list[Path]:
    """The headers a source file includes that may name its devices: its own ("foo.h",
    beside it) and <linux/...> ones (the tree's include/linux/)."""
    headers = []
    for local, linux in _INCLUDE.findall(code):
        path = source.parent / local if local else tree / "include" / linux
        if path.is_file():
            headers.append(path)
    return headers


def scanned_paths(tree: Path) -> list[Path]:
    """What scan() reads, and the directories whose listings it depends on (a new file
    changes its directory's mtime): what a cached scan is keyed by."""
    drivers, linux = tree / "drivers", tree / "include" / "linux"
    paths = [drivers, drivers / "Makefile", linux, *sorted(linux.rglob("*.h"))]
    for sub in SUBSYSTEMS:
        paths += [drivers / sub, *sorted((drivers / sub).rglob("*"))]
    return paths


def scan(tree: Path) -> list[Driver]:
    """The I2C and SPI drivers of the tree's subsystems, from their sources and kbuild files
    (builds not yet decided: kconfig.py does that): a file's I2C driver before its SPI one."""
    return [d for path in driver_sources(tree) for d in read_drivers(tree, path)]


def read_drivers(tree: Path, path: Path) -> list[Driver]:
    """The records of one source file (builds not decided), one per bus it defines a driver
    of (none: it defines no driver): for a few named drivers, without scanning the tree."""
    code = strip_comments(path.read_text(errors="replace"))
    buses = [bus for bus in BUSES if defines_driver(code, bus)]
    if not buses:
        return []
    defines: dict[str, str] = {}
    for header in included_headers(tree, path, code):
        defines.update(string_defines(strip_comments(header.read_text(errors="replace"))))
    return [_driver(tree, path.relative_to(tree).as_posix(), code, defines, b) for b in buses]


def read_driver(tree: Path, path: Path, bus: str = "i2c") -> Driver | None:
    """The record of one source file's driver on `bus`, or None if it defines none."""
    return next((d for d in read_drivers(tree, path) if d.bus == bus), None)


def _driver(tree: Path, source: str, code: str, defines: Mapping[str, str], bus: str) -> Driver:
    subsystem = PurePosixPath(source).parts[1]
    compatibles, ids = of_compatibles(code, defines), id_names(code, bus, defines)
    if bus == "spi" and not ids:
        ids = driver_names(code, bus, defines)  # what the SPI core matches without a table
    ref = module_of(tree, source)
    if ref is None:
        reason = f"no kbuild file in drivers/ names {PurePosixPath(source).with_suffix('.o')}"
        return Driver(source, subsystem, "", "", (), compatibles, ids, reason=reason, bus=bus)
    gates = directory_conditions(tree, PurePosixPath(ref.module_path).parent.as_posix())
    conditions = (*(gates or ()), *([ref.part_condition] if ref.part_condition else []))
    reason = "" if ref.symbol else "its module has no Kconfig symbol (obj-y or obj-m)"
    if gates is None:
        reason = f"no kbuild line leads from drivers/ to {PurePosixPath(ref.module_path).parent}"
    return Driver(
        source,
        subsystem,
        ref.module_path,
        ref.symbol,
        conditions,
        compatibles,
        ids,
        {},
        reason,
        bus,
        isa_port_io(code),
    )


# --- a built module's aliases -----------------------------------------------------------

# modpost's aliases (scripts/mod/file2alias.c): "of:N<name>T<type>C<compatible>", with "*"
# for an empty name or type and a twin ending in "C*"; "i2c:<name>" and "spi:<name>".
_OF_ALIAS = re.compile(r"^of:N(?:[^T]*)T(?:[^C]*?)\*?C(.+)$")


def alias_devices(
    aliases: Iterable[str], bus: str = "i2c"
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The OF compatibles and the `bus` id names of a module's `alias=` values."""
    compatibles: list[str] = []
    names: list[str] = []
    for alias in aliases:
        if alias.startswith(f"{bus}:"):
            names.append(alias.removeprefix(f"{bus}:"))
        elif (of := _OF_ALIAS.match(alias)) and not alias.endswith("C*"):
            compatibles.append(of.group(1))
    return tuple(dict.fromkeys(compatibles)), tuple(dict.fromkeys(names))


def with_module_aliases(driver: Driver, modinfo: Mapping[str, list[str]]) -> Driver:
    """The driver with its built module's devices added to those read from its source (a
    table made by macros is only in the module). A module holds the OF table of every bus
    its file drives; the names are its driver's bus's."""
    compatibles, names = alias_devices(modinfo.get("alias", []), driver.bus)
    return replace(
        driver,
        compatibles=tuple(dict.fromkeys([*driver.compatibles, *compatibles])),
        ids=tuple(dict.fromkeys([*driver.ids, *names])),
    )
