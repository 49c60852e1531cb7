"""The integer constants a driver checks what its device answers against, mined from its
source, so that the sweep's invented device (device.py) can answer them: a probe that
reads an ID register and gives up on a value it does not know gets past it only if the
device answers one it does.

Recall matters more than precision: a value that is no ID costs a plan a few draws, a
missed one can keep every plan from getting past a probe. The heuristics, on the C code
with its comments removed:

- **Sources**: the driver's .c file; for a driver split into an I2C part and a core
  (`bmp280-i2c.c`, `bmp280-core.c`), the .c files beside it whose name starts with its own
  less the `-i2c`/`_i2c` suffix and that include one of its local headers (not the SPI or
  I3C parts); the headers these include with `#include "..."`, transitively, inside
  the tree; and the headers of include/ they include that are named after their chip
  (`<linux/regulator/mt6311.h>` for mt6311-regulator.c).
- **Values** come from constant expressions: integer and character literals, object-like
  macros and enumerators of those sources, `BIT()`, `GENMASK()`, casts and arithmetic.
  Negative values (errnos) are left out.
  - *identity*: a `#define` whose name has a word that names an identity (ID, WHOAMI,
    WHO_AM_I, CHIP, DEVICE, PART, MANUFACTURER, REV, VERSION, SIGNATURE and their usual
    abbreviations, see `IDENTITY_WORDS`) and none that names a register or a bit field
    (REG, ADDR, MASK, SHIFT, ...); the same for a designated initialiser (`.partid = 0x08`)
    and the elements of an array (`bmp280_chip_ids[] = { ... }`). A macro that is the
    register argument of a read call is a register, not a value, whatever its name.
  - *comparison*: the constant side of every `==` and `!=` whose other side is not
    constant; when the other side is a read call, or a variable a read call set before
    (`ret = i2c_smbus_read_byte_data(c, REG)`, `regmap_read(map, REG, &val)`), the pair
    (register, value) is kept too. A shift or field on the read side, `(id >> 4) == 8`
    or `FIELD_GET(GENMASK(7, 4), id) == 8`, moves the value to where the register holds
    it (0x80); a mask, `(id & 0xf0) == 0x50`, keeps it. A shift compared with something
    not constant (`(partid >> 4) != info->partid`) shifts every identity value too.
  - *case*: every `case` label (both ends of a `case A ... B:` range); a `switch` on a
    read gives pairs as a comparison does.
  - *driver data*: the `driver_data` of `i2c_device_id` entries and the `.data` of
    `of_device_id` entries, when they are integers (an enumerator, a cast constant).
- **Registers**: the constant register argument (the second) of the kernel's SMBus and
  regmap read calls and of any function with `read` in its name (a driver's own
  accessor, `foo_read_reg(data, REG)`), then macros named as registers (REG, ADDR).

What this does not see: values computed at run time, tables of structs compared through
a pointer without an identity-named member, and constants of shared code in other
directories (drivers/iio/common/).
"""

from __future__ import annotations

import ast
import bisect
import codecs
import operator
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from roadtest.sweep.inventory import strip_comments

# Words (of a name split at underscores, case ignored) that name an identity...
IDENTITY_WORDS = frozenset(
    {
        "ID", "IDS", "WHOAMI", "WHO", "WAI", "CID", "CHIP", "CHIPID", "DEVICE", "DEVID", "DEVICEID",
        "PART", "PARTID", "PARTNO", "PRODUCT", "PRODID", "PID", "MANUFACTURER", "MANUF",
        "MANUFAC", "MFR", "MFG", "MANID", "VENDOR", "VID", "REV", "REVID", "REVISION",
        "VERSION", "VER", "SIGNATURE", "SIG", "MAGIC",
    }
)  # fmt: skip
# ...and words that make such a name a register's or a bit field's, not a value's.
_NOT_VALUE_WORDS = frozenset(
    {
        "REG", "REGS", "ADDR", "ADDRESS", "CMD", "MASK", "MSK", "SHIFT", "SHFT", "OFFSET",
        "OFF", "POS", "LEN", "LENGTH", "SIZE", "NUM", "COUNT", "CNT", "BIT", "BITS",
    }
)  # fmt: skip
_REGISTER_WORDS = frozenset({"REG", "REGS", "ADDR"})

# The kernel's SMBus and regmap read calls (their register is the second argument) and
# where their result goes: None for the return value, else the argument that receives it.
_KERNEL_READS: dict[str, int | None] = {
    "i2c_smbus_read_byte_data": None,
    "i2c_smbus_read_word_data": None,
    "i2c_smbus_read_word_swapped": None,
    "i2c_smbus_read_block_data": 2,
    "i2c_smbus_read_i2c_block_data": 3,
    "regmap_read": 2,
    "regmap_bulk_read": 2,
    "regmap_raw_read": 2,
    "regmap_noinc_read": 2,
    "regmap_read_poll_timeout": 2,
    "regmap_read_poll_timeout_atomic": 2,
}
# Calls with "read" in their name that read no device register.
_NOT_READS = re.compile(r"property|fwnode|^of_|^readl|^readw|^readb|^ioread|^__raw|_byte$")
# Conversions a read result goes through before it is compared (they keep its register).
_CONVERSIONS = re.compile(
    r"(?:le|be)(?:16|32)_to_cpu[p]?|get_unaligned(?:_(?:le|be)(?:16|24|32))?|swab(?:16|32)"
)

_MAX_SHIFT = 64
_MAX_VALUE = 0xFFFF_FFFF  # the widest a register pair's ID is compared as


@dataclass(frozen=True)
class Constant:
    """One value found, how (`kind`) and from what (a macro, member or operator)."""

    value: int
    kind: str  # "pair", "comparison", "identity", "case", "driver data"
    name: str


# The order a plan favours values in: the surest first.
_RANK = {"pair": 0, "read comparison": 1, "identity": 2, "comparison": 3, "case": 4}


@dataclass(frozen=True)
class Mined:
    """What a driver's sources compare against and read (see the module's docstring)."""

    constants: tuple[Constant, ...] = ()
    registers: tuple[int, ...] = ()  # register addresses it reads, then those it names
    pairs: tuple[tuple[int, int], ...] = ()  # (register, value) it compares a read with

    @property
    def values(self) -> tuple[int, ...]:
        """Every value found, once, the surest kinds first (pairs, compared reads,
        identities, other comparisons, case labels, driver data)."""
        ranked = sorted(self.constants, key=lambda c: _RANK.get(c.kind, len(_RANK)))
        return tuple(dict.fromkeys(c.value for c in ranked))

    def of_kind(self, kind: str) -> tuple[int, ...]:
        return tuple(dict.fromkeys(c.value for c in self.constants if c.kind == kind))


# --- reading the sources --------------------------------------------------------------

_LOCAL_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*"([^"]+)"', re.M)
_OTHER_BUS = re.compile(r"[-_](?:spi|i3c)$")


def _local_headers(tree: Path, path: Path, code: str) -> list[Path]:
    found = []
    for name in _LOCAL_INCLUDE.findall(code):
        header = (path.parent / name).resolve()
        if header.is_file() and header.is_relative_to(tree.resolve()):
            found.append(header)
    return found


_SYSTEM_INCLUDE = re.compile(r"^[ \t]*#[ \t]*include[ \t]*<([^>]+)>", re.M)


def _chip(stem: str) -> str:
    """A file name's first word: the chip or family it is about (mt6311-regulator: mt6311)."""
    return re.split(r"[-_]", stem.lower())[0]


def _chip_headers(tree: Path, path: Path, code: str) -> list[Path]:
    """The tree's include/ headers a file includes that are about its chip
    (<linux/regulator/mt6311.h> for mt6311-regulator.c)."""
    chip = _chip(path.stem)
    found = []
    for name in _SYSTEM_INCLUDE.findall(code):
        header = tree / "include" / name
        if len(chip) >= 3 and _chip(Path(name).stem) == chip and header.is_file():
            found.append(header)
    return found


def source_files(tree: Path, source: str | Path) -> list[Path]:
    """The files mined for a driver: its .c file, its family's core beside it, and their
    local headers and the chip's own headers under include/ (see the module's
    docstring), in that order, each once."""
    path = tree / source
    code = strip_comments(path.read_text(errors="replace"))
    headers = _local_headers(tree, path, code)
    files = [path]
    base = re.sub(r"[-_]i2c$", "", path.stem)
    if base != path.stem and headers:
        shared = set(headers)
        for sibling in sorted(path.parent.glob("*.c")):
            if sibling == path or _OTHER_BUS.search(sibling.stem):
                continue
            if sibling.stem != base and not re.match(rf"{re.escape(base)}[-_]", sibling.stem):
                continue
            text = strip_comments(sibling.read_text(errors="replace"))
            if shared & set(_local_headers(tree, sibling, text)):
                files.append(sibling)
    todo = [p for f in files for p in _local_headers(tree, f, _read(f))]
    todo += [p for f in files for p in _chip_headers(tree, f, _read(f))]
    seen = {p.resolve() for p in files}
    while todo:
        header = todo.pop(0)
        if header in seen:
            continue
        seen.add(header)
        files.append(header)
        todo += _local_headers(tree, header, _read(header))
    return files


def _read(path: Path) -> str:
    return strip_comments(path.read_text(errors="replace"))


def mine(tree: Path, source: str | Path) -> Mined:
    """The constants of the driver whose .c file is `source` (relative to `tree`)."""
    files = source_files(tree, source)
    # Headers first, so that a .c file's own macros win, as the preprocessor has them.
    ordered = [f for f in files if f.suffix == ".h"][::-1] + [f for f in files if f.suffix != ".h"]
    return mine_code("\n".join(_read(f) for f in ordered))


# --- constant expressions -------------------------------------------------------------

_DEFINE = re.compile(r"^[ \t]*#[ \t]*define[ \t]+(\w+)(?![\w(])[ \t]*(.*)$", re.M)
_CONTINUED = re.compile(r"\\\n")
_ENUM = re.compile(r"\benum\s+(?:\w+\s*)?\{")
_CAST = re.compile(
    r"\(\s*(?:const\s+)?(?:(?:unsigned|signed)\s+)?"
    r"(?:(?:__)?[us](?:8|16|32|64)|char|short|int|long(?:\s+long)?|kernel_ulong_t|uintptr_t|"
    r"size_t|void\s*\*)?\s*\)(?=\s*[\w('(])"
)
_EXPR_TOKEN = re.compile(
    r"(?P<num>0[xX][0-9a-fA-F]+|0[bB][01]+|\d+)[uUlL]*"
    r"|(?P<chr>'(?:\\.|[^'\\])+')"
    r"|(?P<name>[A-Za-z_]\w*)"
    r"|(?P<op><<|>>|[-+*/%&|^~(),])"
    r"|(?P<space>\s+)"
    r"|(?P<other>.)",
    re.S,
)
_FUNCTIONS: dict[str, Callable[..., int]] = {
    "BIT": lambda n: 1 << n,
    "BIT_ULL": lambda n: 1 << n,
    "GENMASK": lambda h, lo: ((1 << (h - lo + 1)) - 1) << lo,
    "GENMASK_ULL": lambda h, lo: ((1 << (h - lo + 1)) - 1) << lo,
    "U": lambda n: n,
    "UL": lambda n: n,
    "ULL": lambda n: n,
}
_BINARY: dict[type[ast.operator], Callable[[int, int], int]] = {
    ast.BitOr: operator.or_,
    ast.BitAnd: operator.and_,
    ast.BitXor: operator.xor,
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
}


class Symbols:
    """The object-like macros and enumerators of some C code, and the value of constant
    expressions over them (None for what is not one)."""

    def __init__(self, code: str) -> None:
        joined = _CONTINUED.sub(" ", code)
        self.defines = {name: body.strip() for name, body in _DEFINE.findall(joined)}
        self.enums: dict[str, str | int | None] = {}
        for match in _ENUM.finditer(code):
            self._enumerators(_inside(code, match.end()))
        self._values: dict[str, int | None] = {}
        self._busy: set[str] = set()

    def _enumerators(self, body: str) -> None:
        previous: str | int | None = -1
        for item in _split(body):
            name, _, expr = item.partition("=")
            name = name.strip()
            if not re.fullmatch(r"[A-Za-z_]\w*", name):
                continue
            if expr.strip():
                previous = expr.strip()
            elif isinstance(previous, int):
                previous += 1
            else:  # after an expression: that expression + 1, evaluated when asked
                previous = f"({previous}) + 1" if previous is not None else None
            self.enums[name] = previous

    def value_of(self, name: str) -> int | None:
        """The value of a macro or enumerator."""
        if name in self._values:
            return self._values[name]
        if name in self._busy:  # a macro that expands to itself
            return None
        self._busy.add(name)
        body = self.defines.get(name, self.enums.get(name))
        value = body if isinstance(body, int) or body is None else self.evaluate(body)
        self._busy.discard(name)
        self._values[name] = value
        return value

    def evaluate(self, expression: str) -> int | None:
        """The value of a C constant expression, or None."""
        python = []
        for match in _EXPR_TOKEN.finditer(_CAST.sub(" ", expression)):
            kind, text = match.lastgroup, match.group(0)
            if kind == "num":
                python.append(str(_c_int(match.group("num"))))
            elif kind == "chr":
                python.append(str(_c_char(text)))
            elif kind == "name":
                if text in _FUNCTIONS:
                    python.append(text)
                    continue
                value = self.value_of(text)
                if value is None:
                    return None
                python.append(f"({value})")
            elif kind == "op":
                python.append("//" if text == "/" else text)
            elif kind == "other":
                return None
        try:
            tree = ast.parse("".join(python) or "x", mode="eval")
            return _eval(tree.body)
        except (SyntaxError, ValueError, TypeError, ZeroDivisionError, RecursionError):
            return None


def _c_int(literal: str) -> int:
    if literal[:2].lower() == "0b":
        return int(literal[2:], 2)
    if literal[:2].lower() == "0x":
        return int(literal, 16)
    if len(literal) > 1 and literal.startswith("0"):
        return int(literal, 8)
    return int(literal)


def _c_char(literal: str) -> int:
    text = codecs.decode(literal[1:-1], "unicode_escape")
    if len(text) != 1:
        raise ValueError(literal)
    return ord(text)


def _eval(node: ast.expr) -> int:
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, ast.UnaryOp):
        operand = _eval(node.operand)
        if isinstance(node.op, ast.Invert):
            return ~operand
        if isinstance(node.op, ast.USub):
            return -operand
        if isinstance(node.op, ast.UAdd):
            return operand
    if isinstance(node, ast.BinOp):
        left, right = _eval(node.left), _eval(node.right)
        if isinstance(node.op, (ast.LShift, ast.RShift)):
            if not 0 <= right <= _MAX_SHIFT:
                raise ValueError("shift out of range")
            return left << right if isinstance(node.op, ast.LShift) else left >> right
        operation = _BINARY.get(type(node.op))
        if operation is not None:
            return operation(left, right)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and not node.keywords:
        function = _FUNCTIONS.get(node.func.id)
        if function is not None:
            arguments = [_eval(a) for a in node.args]
            if any(not 0 <= a <= _MAX_SHIFT for a in arguments) and node.func.id != "U":
                raise ValueError("bit out of range")
            return function(*arguments)
    raise ValueError(f"not a constant: {ast.dump(node)}")


# --- C text ---------------------------------------------------------------------------

_STRING = re.compile(r'"(?:\\.|[^"\\\n])*"')


def _blank_strings(code: str) -> str:
    """Strings emptied (their length kept): nothing inside one is an operator or bracket."""
    return _STRING.sub(lambda m: '"' + " " * (len(m.group(0)) - 2) + '"', code)


def _inside(code: str, start: int) -> str:
    """The text from `start` (just inside an opening bracket) to its closing bracket."""
    return code[start : _close(code, start)]


def _close(code: str, start: int) -> int:
    depth = 0
    for i in range(start, len(code)):
        char = code[i]
        if char in "([{":
            depth += 1
        elif char in ")]}":
            if depth == 0:
                return i
            depth -= 1
    return len(code)


def _split(text: str) -> list[str]:
    """Items separated by commas outside brackets."""
    items, depth, start = [], 0, 0
    for i, char in enumerate(text):
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        elif char == "," and depth == 0:
            items.append(text[start:i].strip())
            start = i + 1
    items.append(text[start:].strip())
    return [item for item in items if item]


def _is_name(text: str) -> bool:
    return re.fullmatch(r"\s*[A-Za-z_]\w*\s*", text) is not None


def _words(name: str) -> set[str]:
    return {word for word in name.upper().split("_") if word}


def is_identity_name(name: str) -> bool:
    """Whether a macro or member name names a chip's identity (not a register's address
    or a bit field): CHIP_ID, WHO_AM_I_VAL, partid; not REG_CHIP_ID, ID_MASK."""
    words = _words(name)
    return bool(words & IDENTITY_WORDS) and not words & _NOT_VALUE_WORDS


def _comparison_operator(code: str, i: int) -> bool:
    """Whether the '<' or '>' at `i` compares (not a shift, nor the '>' of '->')."""
    pair = code[i - 1 : i + 1], code[i : i + 2]
    return not ({"<<", ">>", "->"} & set(pair))


def _right_operand(code: str, start: int) -> str:
    depth, i = 0, start
    while i < len(code):
        char = code[i]
        if char in "([":
            depth += 1
        elif char in ")]":
            if depth == 0:
                break
            depth -= 1
        elif depth == 0:
            pair = code[i : i + 2]
            if char in ";,?:{}" or pair in ("&&", "||", "==", "!=", "<=", ">=") or char == "=":
                break
            if char in "<>" and _comparison_operator(code, i):
                break
            if pair in ("<<", ">>"):
                i += 2
                continue
        i += 1
    return code[start:i].strip()


def _left_operand(code: str, end: int) -> str:
    depth, i = 0, end - 1
    while i >= 0:
        char = code[i]
        if char in ")]":
            depth += 1
        elif char in "([":
            if depth == 0:
                break
            depth -= 1
        elif depth == 0:
            if char in ";,?:{}=" or code[i - 1 : i + 1] in ("&&", "||"):
                break
            if char in "<>" and _comparison_operator(code, i):
                break
            if code[i - 1 : i + 1] in ("<<", ">>"):
                i -= 2
                continue
        i -= 1
    text = code[i + 1 : end].strip()
    return re.sub(r"^(?:return|case|else)\b", "", text).strip()


def _unparen(text: str) -> str:
    text = text.strip()
    while text.startswith("(") and _close(text, 1) == len(text) - 1:
        text = text[1:-1].strip()
    return text


def _is_read(function: str) -> bool:
    return function in _KERNEL_READS or (
        "read" in function.lower() and not _NOT_READS.search(function)
    )


@dataclass
class _Read:
    position: int
    register: int
    variable: str  # what holds its result ("" when nothing named does)


@dataclass
class _Miner:
    code: str
    symbols: Symbols
    found: list[Constant] = field(default_factory=list)
    registers: list[int] = field(default_factory=list)
    pairs: list[tuple[int, int]] = field(default_factory=list)
    shifts: set[int] = field(default_factory=set)
    register_names: set[str] = field(default_factory=set)
    reads: list[_Read] = field(default_factory=list)
    member_values: dict[str, list[int]] = field(default_factory=dict)  # .partid = 8
    member_registers: dict[str, list[int]] = field(default_factory=dict)  # .id_reg = 0xd0
    bodies: list[int] = field(default_factory=list)  # where top-level blocks start

    def add(self, value: int | None, kind: str, name: str) -> None:
        if value is not None and 0 <= value <= _MAX_VALUE:
            self.found.append(Constant(value, kind, " ".join(name.split())))

    # reads

    def registers_of_call(self, function: str, arguments: list[str]) -> list[int]:
        """The registers a call reads, if it is a read call: its constant register, or
        the values a member that names one is given (`info->id_reg`, `.id_reg = 0xd0`)."""
        if not _is_read(function) or len(arguments) < 2:
            return []
        register = self.symbols.evaluate(arguments[1])
        if register is not None:
            return [register] if register >= 0 else []
        member = re.search(r"(?:->|\.)\s*(\w+)\s*$", arguments[1])
        return self.member_registers.get(member.group(1), []) if member else []

    def find_reads(self) -> None:
        for match in re.finditer(r"\b([A-Za-z_]\w*)\s*\(", self.code):
            arguments = _split(_inside(self.code, match.end()))
            registers = self.registers_of_call(match.group(1), arguments)
            if not registers:
                continue
            names = re.findall(r"[A-Za-z_]\w*", arguments[1])
            self.register_names.update(n for n in names if n in self.symbols.defines)
            self.registers += registers
            result = self._result_of(match, arguments)
            self.reads += [_Read(match.start(), r, result) for r in registers]

    def _result_of(self, call: re.Match[str], arguments: list[str]) -> str:
        """What holds a read's result: the kernel call's result argument, a `&var`
        argument of another read call, or else what its return value is assigned to."""
        function = call.group(1)
        if function in _KERNEL_READS:
            result = _KERNEL_READS[function]
            if result is not None:
                return _variable(arguments[result]) if len(arguments) > result else ""
        else:
            out = [a for a in arguments[2:] if a.startswith("&")]
            if out:
                return _variable(out[0])
        before = self.code[max(0, call.start() - 80) : call.start()]
        assigned = re.search(r"([\w.>\-\[\]]+)\s*(?<![=!<>])=\s*(?:\([^()]*\)\s*)?$", before)
        return _variable(assigned.group(1)) if assigned else ""

    def read_behind(self, subject: str, position: int) -> list[int]:
        """The registers `subject` holds a read of, when compared at `position`: a read
        call itself, or what the last read before `position` in the same function was
        stored in (`buf[1]` of a bulk read into `buf`: the register after)."""
        subject = _unparen(subject)
        conversion = re.fullmatch(rf"(?:{_CONVERSIONS.pattern})\s*\((.*)\)", subject, re.S)
        if conversion:
            subject = _unparen(conversion.group(1))
        call = re.fullmatch(r"([A-Za-z_]\w*)\s*\((.*)\)", subject, re.S)
        if call:
            return self.registers_of_call(call.group(1), _split(call.group(2)))
        index = 0
        indexed = re.fullmatch(r"(.*)\[([^\]]+)\]", subject, re.S)
        if indexed:
            subject, index = indexed.group(1), self.symbols.evaluate(indexed.group(2)) or 0
        variable = _variable(subject)
        body = self.body_of(position)
        last = [r for r in self.reads if body <= r.position < position and r.variable == variable]
        return [r.register + index for r in last if r.position == last[-1].position]

    def body_of(self, position: int) -> int:
        """Where the top-level block (a function's body) holding `position` starts: a
        variable holds a read only in the function that made it."""
        if not self.bodies:
            depth = 0
            for i, char in enumerate(self.code):
                if char == "{":
                    if depth == 0:
                        self.bodies.append(i)
                    depth += 1
                elif char == "}":
                    depth = max(0, depth - 1)
        return self.bodies[bisect.bisect_right(self.bodies, position) - 1] if self.bodies else 0

    # comparisons

    def find_comparisons(self) -> None:
        for match in re.finditer(r"[=!]=", self.code):
            if self.code[match.start() - 1 : match.start()] in ("=", "!", "<", ">"):
                continue
            operator = match.group(0)
            left = _left_operand(self.code, match.start())
            right = _right_operand(self.code, match.end())
            left_value, right_value = self.symbols.evaluate(left), self.symbols.evaluate(right)
            if left_value is None and right_value is None:
                self._between_variables(left, right, operator, match.start())
                continue
            if left_value is not None and right_value is not None:
                continue
            value, constant, subject = (
                (left_value, left, right) if left_value is not None else (right_value, right, left)
            )
            assert value is not None
            shift, subject = _shift_of(subject, self.symbols)
            if value < 0 or (_words(constant) & _REGISTER_WORDS and _is_name(constant)):
                continue  # an errno; a register compared with another
            value <<= shift
            registers = self.read_behind(subject, match.start())
            if not registers:
                self.add(value, "comparison", f"{operator} {constant}")
                continue
            for register in registers:
                self.pairs.append((register, value))
                self.add(value, "pair", f"register {register:#x} {operator} {constant}")
            self.add(value, "read comparison", f"{operator} {constant}")

    def _between_variables(self, left: str, right: str, operator: str, position: int) -> None:
        """Two run-time values compared: a shift on either says where an ID sits in its
        register; a read compared with an identity member (`info->chip_id`) pairs the
        read's register with that member's values."""
        for side, other in ((left, right), (right, left)):
            shift, subject = _shift_of(side, self.symbols)
            if shift:
                self.shifts.add(shift)
            member = re.search(r"(\w+)\s*(?:\[[^\]]*\])?\s*$", other)
            values = self.member_values.get(member.group(1), []) if member else []
            for register in self.read_behind(subject, position) if values else []:
                for value in values:
                    self.pairs.append((register, value << shift))
                    self.add(value << shift, "pair", f"register {register:#x} {operator} {other}")

    # case labels and switches

    def find_cases(self) -> None:
        case = re.compile(r"\bcase\b([^:;?]+?)(?:\.\.\.([^:;?]+?))?\s*:")
        for match in case.finditer(self.code):
            for end in (match.group(1), match.group(2)):
                if end is not None and not (_words(end) & _REGISTER_WORDS and _is_name(end)):
                    self.add(self.symbols.evaluate(end), "case", f"case {end}")
        for match in re.finditer(r"\bswitch\s*\(", self.code):
            subject = _inside(self.code, match.end())
            registers = self.read_behind(subject, match.start())
            body = self.code.find("{", match.end() + len(subject))
            if not registers or body < 0:
                continue
            for label in case.finditer(_inside(self.code, body + 1)):
                if _words(label.group(1)) & _REGISTER_WORDS and _is_name(label.group(1)):
                    continue
                value = self.symbols.evaluate(label.group(1))
                if value is None or value < 0:
                    continue
                for register in registers:
                    self.pairs.append((register, value))
                    self.add(value, "pair", f"register {register:#x} case {label.group(1)}")

    # names

    def find_members(self) -> None:
        """Identity arrays (`bmp280_chip_ids[] = { 0x58 }`), and the constants designated
        initialisers give members that name an identity (`.partid = 0x08`, or such an
        array) or a register (`.id_reg = 0xd0`)."""
        arrays: dict[str, list[int]] = {}
        array = re.compile(r"\b(\w+)\s*\[[^\]]*\]\s*(?:__\w+\s*)*=\s*\{")
        for match in array.finditer(self.code):
            if is_identity_name(match.group(1)):
                for item in _split(_inside(self.code, match.end())):
                    value = self.symbols.evaluate(item)
                    if value is not None and value >= 0:
                        arrays.setdefault(match.group(1), []).append(value)
                    self.add(value, "identity", f"{match.group(1)}[]")
        for match in re.finditer(r"(?<![\w.])\.([A-Za-z_]\w*)\s*=(?!=)", self.code):
            member = match.group(1)
            expression = re.split(r"[,}\n;]", self.code[match.end() : match.end() + 200])[0]
            value = self.symbols.evaluate(expression)
            if _words(member) & _REGISTER_WORDS:
                if value is not None and value >= 0:
                    self.member_registers.setdefault(member, []).append(value)
            elif is_identity_name(member):
                values = arrays.get(expression.strip().lstrip("&"), [])
                values += [value] if value is not None and value >= 0 else []
                self.member_values.setdefault(member, []).extend(values)
                self.add(value, "identity", f".{member}")

    def find_identities(self) -> None:
        """Macros that name an identity (not those read as a register), and those that
        name a register."""
        for name in self.symbols.defines:
            value = self.symbols.value_of(name)
            if value is None or value < 0:
                continue
            if _words(name) & _REGISTER_WORDS:
                self.registers.append(value)
            elif is_identity_name(name) and name not in self.register_names:
                self.add(value, "identity", name)

    def shift_identities(self) -> None:
        """Identity values where a compared shift puts them (after the comparisons)."""
        for constant in [c for c in self.found if c.kind == "identity"]:
            for shift in sorted(self.shifts):
                self.add(constant.value << shift, "identity", f"{constant.name} << {shift}")

    def find_driver_data(self) -> None:
        # Members in order: i2c_device_id {name, driver_data}; of_device_id {name, type,
        # compatible, data}.
        for struct, member, position in (
            ("i2c_device_id", "driver_data", 1),
            ("of_device_id", "data", 3),
        ):
            table = re.compile(
                rf"\bstruct\s+{struct}\s+(?:__\w+\s+)*\w+\s*\[[^\]]*\]\s*(?:__\w+\s*)*=\s*\{{"
            )
            for match in table.finditer(self.code):
                for entry in _split(_inside(self.code, match.end())):
                    if not entry.startswith("{"):
                        continue
                    members = _split(_inside(entry, 1))
                    named = [m.split("=", 1)[1] for m in members if re.match(rf"\.{member}\s*=", m)]
                    positional = [m for m in members if not m.startswith(".")]
                    expression = named[0] if named else (positional + [""] * 4)[position]
                    if expression:
                        self.add(
                            self.symbols.evaluate(expression),
                            "driver data",
                            f"{struct} {expression}",
                        )


def _variable(text: str) -> str:
    """A variable or member path with its spacing, `&` and outer parentheses removed."""
    return re.sub(r"\s+", "", _unparen(text).lstrip("&*"))


def _shift_of(subject: str, symbols: Symbols) -> tuple[int, str]:
    """How far a compared expression shifts the register value down (its right shift, or
    its FIELD_GET mask's lowest bit), and the expression with shift and mask removed."""
    shift = 0
    subject = _unparen(subject)
    field_get = re.fullmatch(r"FIELD_GET\s*\((.*)\)", subject, re.S)
    if field_get:
        arguments = _split(field_get.group(1))
        mask = symbols.evaluate(arguments[0]) if len(arguments) == 2 else None
        if mask:
            return (mask & -mask).bit_length() - 1, _unparen(arguments[1])
    shifted = re.fullmatch(r"(.+?)\s*>>\s*([\w()]+)", subject, re.S)
    if shifted:
        amount = symbols.evaluate(shifted.group(2))
        if amount is not None and 0 <= amount <= _MAX_SHIFT:
            shift, subject = amount, _unparen(shifted.group(1))
    masked = re.fullmatch(r"(.+?)\s*&\s*([^&]+)", subject, re.S)
    if masked and symbols.evaluate(masked.group(2)) is not None:
        subject = _unparen(masked.group(1))
    return shift, subject


def mine_code(code: str) -> Mined:
    """The constants of comment-free C code (headers and sources joined): see the module's
    docstring for what counts."""
    code = _blank_strings(code)
    miner = _Miner(code, Symbols(code))
    miner.find_members()
    miner.find_reads()
    miner.find_identities()
    miner.find_comparisons()
    miner.shift_identities()
    miner.find_cases()
    miner.find_driver_data()
    return Mined(
        tuple(dict.fromkeys(miner.found)),
        tuple(dict.fromkeys(_registers_first(miner))),
        tuple(dict.fromkeys(miner.pairs)),
    )


def _registers_first(miner: _Miner) -> Iterator[int]:
    yield from (register for register, _ in miner.pairs)
    yield from miner.registers
