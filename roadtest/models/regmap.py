"""Register maps: a device's registers declared once, from its datasheet.

A model declares its map as a class attribute, `register_map = RegisterMap(...)`,
of `Register`s (name, address, reset value, access, bit `Field`s). From that one
declaration:

- `MappedSMBusModel` takes the registers' storage and access rules (a model
  adds only its side effects, in `on_read` / `on_write`);
- `roadtest trace show`, `trace diff` and replay name registers
  (`roadtest.trace.decode`);
- the fuzz strategies (`roadtest.fuzz`) draw register values and events.

Declaration mistakes (overlapping fields, a field outside the register, a reset
value that does not fit, two registers at one address or with one name) raise
ValueError when the module is imported.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, ClassVar, Literal

from roadtest.models.base import NO_INITIAL, ModelError, SMBusModel, declared_inputs

ByteOrder = Literal["little", "big"]


class Access(enum.Enum):
    """What the host may do with a register (or a field): the datasheet's R, R/W, R/W1C, W."""

    READ_ONLY = "read-only"
    READ_WRITE = "read-write"
    WRITE_1_TO_CLEAR = "write-1-to-clear"
    WRITE_ONLY = "write-only"


RO: Access = Access.READ_ONLY
RW: Access = Access.READ_WRITE
W1C: Access = Access.WRITE_1_TO_CLEAR
WO: Access = Access.WRITE_ONLY


def _mask(bits: int) -> int:
    return (1 << bits) - 1


@dataclass(frozen=True, eq=False)
class Field:
    """Bits `msb`..`lsb` of a register (`lsb` defaults to `msb`: one bit).

    `values`: the datasheet's named values (`{"SHUTDOWN": 0, "SINGLE": 1}`).
    `reserved`: the datasheet reserves these bits (see `MappedSMBusModel` for how they
    behave). `access`: for a status bit inside a read-write register, READ_ONLY (writes
    leave it) or WRITE_1_TO_CLEAR; None: the register's access.
    """

    name: str
    msb: int
    lsb: int = -1
    values: Mapping[str, int] = dataclasses.field(default_factory=dict)
    reserved: bool = False
    access: Access | None = None
    # From the bits (set below; attributes, not properties: models use them per access).
    width: int = dataclasses.field(init=False, repr=False, default=0)
    max: int = dataclasses.field(init=False, repr=False, default=0)  # the largest value
    mask: int = dataclasses.field(init=False, repr=False, default=0)  # its bits in place

    def __post_init__(self) -> None:
        if self.lsb == -1:
            object.__setattr__(self, "lsb", self.msb)
        object.__setattr__(self, "values", MappingProxyType(dict(self.values)))
        if not 0 <= self.lsb <= self.msb:
            raise ValueError(f"field {self.name}: bits {self.msb}..{self.lsb} are not msb..lsb")
        object.__setattr__(self, "width", self.msb - self.lsb + 1)
        object.__setattr__(self, "max", _mask(self.width))
        object.__setattr__(self, "mask", self.max << self.lsb)
        if self.access not in (None, RO, W1C):
            raise ValueError(
                f"field {self.name}: a field may be read-only or write-1-to-clear, "
                f"not {self.access.value}"
            )
        for name, value in self.values.items():
            if not 0 <= value <= self.max:
                raise ValueError(
                    f"field {self.name}: value {name}={value} does not fit {self.width} bits"
                )

    def get(self, value: int) -> int:
        """The field's value in the register value `value`."""
        return (value >> self.lsb) & self.max

    def set(self, value: int, field_value: int | str) -> int:
        """`value` with this field set to `field_value` (a number or one of its named values)."""
        if isinstance(field_value, str):
            field_value = self.values[field_value]
        if not 0 <= field_value <= self.max:
            raise ValueError(f"field {self.name}: {field_value} does not fit {self.width} bits")
        return (value & ~self.mask) | (field_value << self.lsb)


@dataclass(frozen=True, eq=False)
class Register:
    """One register: `width` bits (None: the map's) sent in `byteorder` (None: the map's)."""

    name: str
    address: int
    reset: int = 0
    access: Access = RW
    fields: Sequence[Field] = ()
    width: int | None = None
    byteorder: ByteOrder | None = None
    # What a write does to the stored bits (from the fields; set below).
    _kept: int = dataclasses.field(init=False, repr=False, default=0)
    _cleared_by_1: int = dataclasses.field(init=False, repr=False, default=0)

    def __post_init__(self) -> None:
        object.__setattr__(self, "fields", tuple(self.fields))
        where = f"register {self.name}({self.address:#04x})"
        if not self.name.isidentifier():
            raise ValueError(f"{where}: its name is not an identifier")
        if self.address < 0:
            raise ValueError(f"{where}: a negative address")
        names = [f.name for f in self.fields]
        if len(set(names)) != len(names):
            raise ValueError(f"{where}: two fields have one name")
        taken = 0
        for f in sorted(self.fields, key=lambda f: f.lsb):
            if taken & f.mask:
                raise ValueError(f"{where}: field {f.name} overlaps another field")
            taken |= f.mask
        kept = sum(f.mask for f in self.fields if f.reserved or f.access is RO)
        cleared = sum(f.mask for f in self.fields if f.access is W1C and not f.reserved)
        object.__setattr__(self, "_kept", kept)
        object.__setattr__(self, "_cleared_by_1", cleared)
        if self.width is None:
            return  # the map checks the rest once it gives the width
        if self.width <= 0 or self.width % 8:
            raise ValueError(f"{where}: width {self.width} is not a whole number of bytes")
        for f in self.fields:
            if f.msb >= self.width:
                raise ValueError(
                    f"{where}: field {f.name} (bits {f.msb}..{f.lsb}) is outside its "
                    f"{self.width} bits"
                )
        if not 0 <= self.reset <= self.max:
            raise ValueError(f"{where}: reset value {self.reset:#x} does not fit {self.width} bits")

    @property
    def bits(self) -> int:
        """The width in bits (a register declared in a map always has one)."""
        if self.width is None:
            raise ValueError(f"register {self.name} has no width: declare it in a RegisterMap")
        return self.width

    @property
    def max(self) -> int:
        return _mask(self.bits)

    @property
    def reserved_mask(self) -> int:
        """The bits of reserved fields."""
        return sum(f.mask for f in self.fields if f.reserved)

    @property
    def undeclared_mask(self) -> int:
        """The bits no field covers (0 for a register declared without fields)."""
        if not self.fields:
            return 0
        return self.max & ~sum(f.mask for f in self.fields)

    @property
    def readable(self) -> bool:
        return self.access is not WO

    @property
    def writable(self) -> bool:
        return self.access is not RO

    def field(self, name: str) -> Field:
        for f in self.fields:
            if f.name == name:
                return f
        raise KeyError(f"register {self.name} has no field {name}")

    def written(self, old: int, value: int) -> int:
        """What the register holds after the host writes `value` over `old`: write-1-to-clear
        bits written as 1 clear, read-only and reserved bits keep their value, the rest take
        the written value."""
        if self.access is W1C:
            return old & ~value
        kept, cleared = self._kept, self._cleared_by_1
        return (value & ~(kept | cleared)) | (old & kept) | (old & cleared & ~value)

    def show(self) -> str:
        """How messages name it: "0x7e (MANUFACTURER_ID)"."""
        return f"{self.address:#04x} ({self.name})"


class RegisterMap:
    """The registers of one device, by address and by name; `width` and `byteorder` are
    the default of the registers that do not give their own."""

    def __init__(
        self, registers: Iterable[Register], *, width: int = 8, byteorder: ByteOrder = "little"
    ) -> None:
        self.width = width
        self.byteorder: ByteOrder = byteorder
        self._by_address: dict[int, Register] = {}
        self._by_name: dict[str, Register] = {}
        for declared in registers:
            reg = dataclasses.replace(
                declared,
                width=declared.width or width,
                byteorder=declared.byteorder or byteorder,
            )
            if reg.address in self._by_address:
                other = self._by_address[reg.address]
                raise ValueError(
                    f"registers {other.name} and {reg.name} share address {reg.address:#04x}"
                )
            if reg.name in self._by_name:
                raise ValueError(f"two registers are named {reg.name}")
            self._by_address[reg.address] = reg
            self._by_name[reg.name] = reg

    def __getitem__(self, key: int | str) -> Register:
        """The register at an address, or of a name (KeyError when there is none)."""
        found = self.get(key)
        if found is None:
            raise KeyError(key if isinstance(key, str) else f"{key:#04x}")
        return found

    def get(self, key: int | str) -> Register | None:
        if isinstance(key, str):
            return self._by_name.get(key)
        return self._by_address.get(key)

    def __contains__(self, key: object) -> bool:
        return key in self._by_address or key in self._by_name

    def __iter__(self) -> Iterator[Register]:
        """The registers in address order."""
        return iter(sorted(self._by_address.values(), key=lambda r: r.address))

    def __len__(self) -> int:
        return len(self._by_address)

    def names(self) -> dict[int, str]:
        """{address: name}, for trace reports."""
        return {r.address: r.name for r in self}

    def reset_values(self) -> dict[int, int]:
        """{address: reset value}: the power-on register file."""
        return {r.address: r.reset for r in self}


class MappedSMBusModel(SMBusModel):
    """An SMBus register device whose registers come from its `register_map`.

    - Storage: `self.regs`, {address: value}, starts at the map's reset values (or the
      `power_on` values given to `__init__`).
    - A read of an undefined or write-only register, and a write to an undefined or
      read-only one, is a ModelError that names the register.
    - A write stores by `Register.written`: write-1-to-clear bits written as 1 clear;
      read-only fields keep their value.
    - Reserved bits: datasheets say "reserved, write as read" or "reads return 0";
      here writes to them are ignored, so they read back their reset value (unless
      the model changes them). Bits no field covers are stored as written.
    - Side effects go in `on_read(reg)` and `on_write(reg, old, new)`.
    - The write log's assertion messages name registers: "register 0x03 (CONTROL)".
    - `reset()`: the power-on state (registers, `Input`s' `initial` values, the
      pointer, the write log). Every `Input` of a mapped model declares `initial`.

    All registers of the map have its width and byte order (the SMBus framing is
    per device).
    """

    register_map: ClassVar[RegisterMap]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for name, declared in declared_inputs(cls).items():
            if declared.initial is NO_INITIAL:
                raise TypeError(
                    f"{cls.__name__}.{name}: a mapped model's Input declares its power-on "
                    f"value (Input(initial=...)), so reset() can restore it"
                )
        regmap = cls.__dict__.get("register_map")
        if regmap is None:
            return  # inherited: checked where it was declared
        if not isinstance(regmap, RegisterMap):
            raise TypeError(f"{cls.__name__}.register_map is not a RegisterMap")
        for reg in regmap:
            if (reg.width, reg.byteorder) != (regmap.width, regmap.byteorder):
                raise ValueError(
                    f"{cls.__name__}: register {reg.name} is {reg.width}-bit {reg.byteorder}-"
                    f"endian; a MappedSMBusModel's registers all have the map's "
                    f"{regmap.width}-bit {regmap.byteorder}-endian framing"
                )
        if regmap.width % 8:
            raise ValueError(f"{cls.__name__}: register width {regmap.width} is not whole bytes")

    def __init__(self, power_on: Mapping[str, int] | None = None) -> None:
        """`power_on`: {register name: value} where this chip's power-on values differ from
        the map's reset values (a variant, a strap pin)."""
        regmap = self.register_map
        super().__init__(regbytes=regmap.width // 8, byteorder=regmap.byteorder)
        self._power_on = regmap.reset_values()
        for name, value in (power_on or {}).items():
            reg = regmap[name]
            if not 0 <= value <= reg.max:
                raise ValueError(f"register {reg.name}: {value:#x} does not fit {reg.bits} bits")
            self._power_on[reg.address] = value
        self._registers = {r.address: r for r in regmap}
        self._readable = {r.address: r for r in regmap if r.readable}
        self.regs: dict[int, int] = {}
        self.reset()

    # Power-on

    def reset(self) -> None:
        """The power-on state: every register at its reset value, every `Input` at its
        initial value, the register pointer at 0 and the write log empty."""
        self.reset_registers()
        for name, declared in declared_inputs(type(self)).items():
            setattr(self, name, declared.initial)  # a model's own set: no trace marker
        self.reg_addr = 0
        self.reset_reg_writes()

    def reset_registers(self) -> None:
        """Every register back to its power-on value (what a chip's soft-reset bit does)."""
        # A new dict in one assignment: a transfer on the backend's thread sees the old
        # register file or the new one, never one half cleared.
        self.regs = dict(self._power_on)

    # What models override

    def on_read(self, reg: Register) -> None:
        """`reg` was read (its value already taken): the read's side effects."""

    def on_write(self, reg: Register, old: int, new: int) -> None:
        """The host wrote `reg`: it held `old` and now holds `new` (after the access rules)."""

    # SMBusModel

    def reg_read(self, addr: int) -> int:
        try:
            reg = self._readable[addr]
        except KeyError:  # not checked first: a read is the hot path, and try costs nothing
            what = "write-only" if addr in self._registers else "undefined"
            raise ModelError(
                f"{type(self).__name__}: read of {what} register {self._register(addr)}"
            ) from None
        value = self.regs[addr]
        self.on_read(reg)
        return value

    def reg_write(self, addr: int, val: int) -> None:
        reg = self._registers.get(addr)
        if reg is None or reg.access is RO:
            what = "read-only" if reg is not None else "undefined"
            raise ModelError(
                f"{type(self).__name__}: write of {self._fmt(val)} to {what} register "
                f"{self._register(addr)}"
            )
        old = self.regs[addr]
        new = reg.written(old, val)
        self.regs[addr] = new
        self.on_write(reg, old, new)

    def _register(self, reg: int) -> str:
        found = self._registers.get(reg)
        return found.show() if found is not None else f"{reg:#04x}"
