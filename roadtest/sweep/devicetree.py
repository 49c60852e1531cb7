"""The devicetree node of a swept driver's device on roadtest's I2C or SPI bus, in the form
`roadtest.testing.I2CDevice(dts=...)` and `SPIDevice(dts=...)` take: one node, `$addr$`
where its address goes (its I2C address, or its chip select: `reg` is the chip select on
an SPI bus, Documentation/devicetree/bindings/spi/spi-controller.yaml).

Where it comes from, best first:

1. **The binding's example.** A binding (Documentation/devicetree/bindings/**/*.yaml)
   shows its device in the devicetree source of its `examples:`; the node there whose
   compatible is ours is moved onto our bus: its properties and subnodes kept, its name's
   unit address and `reg` ours, its compatible ours alone, and the example's `#include`
   and `#define` lines kept above it (its macros are the dt-bindings headers'). What refers
   to something the example has and our tree has not is dropped, and said (`Dropped`),
   so that the caller can wire it to a virtio-gpio line or a fixed regulator:
   - a property with a phandle (`&gpio0`, `&{/path}`) to a label that is neither in the
     node itself nor one of the caller's (`labels`): interrupt-parent and
     interrupts-extended, `*-gpios`, `*-supply`, clocks, pinctrl, io-channels, ...;
     an example's `&gpio` is another board's controller, not ours, unless the caller
     says otherwise;
   - `interrupts` (and `interrupt-names`) without an interrupt parent left in our tree,
     by the kernel's search for one (of_irq_find_parent: the node's interrupt-parent,
     else its parent's, up to a node with `#interrupt-cells`; our I2C adapter and what is
     above it have none);
   - the `-names` list of a property dropped (clock-names with clocks, ...), `reg-names`
     (our node has one address), and `status` unless "okay";
   - on I2C, `spi-*` (an SPI bus's: an example of a chip with both buses may be on
     SPI); on SPI, `spi-tx-bus-width` and `spi-rx-bus-width` (roadtest's controller has
     one data line each way); the other `spi-*` properties are kept on SPI: the maximum
     frequency, the clock phase and polarity, an active-high chip select, LSB first,
     3-wire, as spi-peripheral-props.yaml defines them;
   - the node's labels and its subnodes' that nothing kept refers to (labels are global to
     a tree, and one guest holds many fragments).
   An example on the driver's bus is taken first (an `i2c`/`iic` or `spi` node above it).
   An example of another chip of the same binding (the file's schema lists our compatible
   but its examples show a sibling) serves the same way, with our compatible;
   the lists of unrelated chips (trivial-devices.yaml, trivial-rtc.yaml,
   incomplete-devices.yaml) do not count as one binding.
2. **The compatible alone**: `<chip>@$addr$ { compatible = "..."; reg = <0x$addr$>; };`.
3. **No OF compatible at all**: on I2C, `NewDevice`, the i2c_device_id name to instantiate
   through the I2C core's `new_device` file (Documentation/i2c/instantiating-devices.rst).
   SPI has no such file; but the SPI core names a devicetree device by its compatible less
   the vendor (of_register_spi_device(): of_alias_from_compatible()), and spi_match_device()
   matches that modalias against the driver's spi_device_id table when no OF table
   matches: a node whose compatible is `roadtest,<spi_device_id name>` binds the driver by
   its id table (`id_node`).

The YAML is read by a text reader, not a YAML library (PyYAML is not one of roadtest's
dependencies): a top-level `examples:` key whose items are literal block scalars
(`- |`), as every binding of the kernel's tree writes them.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from roadtest.sweep.inventory import Driver

BINDINGS = "Documentation/devicetree/bindings"
# Lists of chips with nothing in common but a trivial binding: no sibling's example.
_NO_SIBLINGS = frozenset({"trivial-devices.yaml", "trivial-rtc.yaml", "incomplete-devices.yaml"})
# The devicetree specification's node-name: 1 to 31 of these characters.
_NODE_NAME_CHARS = re.compile(r"[^A-Za-z0-9,._+-]")
_NODE_NAME_MAX = 31
OKAY = (["okay"], ["ok"])  # a status that lets the device be used


@dataclass(frozen=True)
class Dropped:
    """A property of the example left out of our node, and why."""

    node: str  # the subnode it was in, relative to the device's node ("" for the node)
    name: str
    value: str  # as the example wrote it ("" for a property without a value)
    kind: str  # "interrupt", "gpio", "supply", "clock" or "other": what could replace it
    reason: str


@dataclass(frozen=True)
class DeviceNode:
    """A device's node on roadtest's I2C bus: `dts` for I2CDevice(dts=...)."""

    compatible: str
    dts: str
    binding: str = ""  # the binding file whose example it is ("": from the compatible alone)
    example: str = ""  # the example node's own compatible, when it is a sibling chip's
    dropped: tuple[Dropped, ...] = ()
    id_name: str = ""  # an SPI id-table name matched through the modalias (`id_node`)


@dataclass(frozen=True)
class NewDevice:
    """A device without an OF compatible: instantiated by its i2c_device_id name."""

    name: str

    def line(self, addr: int) -> str:
        """What to write to /sys/bus/i2c/devices/i2c-N/new_device: name and address."""
        return f"{self.name} {addr:#04x}"


# --- the compatible alone ---------------------------------------------------------------


def node_name(compatible: str) -> str:
    """A node name for a chip: the compatible's model part (ti,opt3001: opt3001), as the
    devicetree's node names allow it (31 characters, starting with a letter)."""
    model = compatible.rpartition(",")[2].lower()
    name = _NODE_NAME_CHARS.sub("-", model)[:_NODE_NAME_MAX]
    return name if name[:1].isalpha() else "device"


def node_from_compatible(compatible: str) -> DeviceNode:
    """The node from the compatible alone."""
    dts = (
        f"{node_name(compatible)}@$addr$ {{\n"
        f"    compatible = {_quote(compatible)};\n"
        "    reg = <0x$addr$>;\n"
        "};\n"
    )
    return DeviceNode(compatible, dts)


# The vendor of the compatibles that name an SPI driver's id-table entry (`id_node`).
ID_VENDOR = "roadtest"


def id_node(name: str) -> DeviceNode:
    """The SPI node of a driver without an OF compatible: `roadtest,<name>`, whose modalias
    is `name` (see the module's docstring)."""
    compatible = f"{ID_VENDOR},{name}"
    return replace(node_from_compatible(compatible), id_name=name)


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


# --- a binding's examples ---------------------------------------------------------------

_EXAMPLES_KEY = re.compile(r"^examples:[ \t]*(?:#.*)?$", re.M)
_BLOCK_ITEM = re.compile(r"^([ \t]*)-[ \t]+\|[-+0-9]*[ \t]*(?:#.*)?$")
_COMPATIBLE_TOKEN = re.compile(r"(?<![\w.,+/-])([A-Za-z0-9][\w-]*,[A-Za-z0-9][\w.+-]*)(?![\w,+/])")


def examples(text: str) -> list[str]:
    """The devicetree sources of a binding's `examples:` (its literal block items)."""
    key = _EXAMPLES_KEY.search(text)
    if key is None:
        return []
    lines = text[key.end() :].splitlines()[1:]
    found = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.strip() and not line[0].isspace() and not line.startswith("#"):
            break  # the next top-level key, or the document's end
        item = _BLOCK_ITEM.match(line)
        i += 1
        if item is None:
            continue
        marker, indent, block = len(item.group(1)), -1, []
        while i < len(lines):
            text_line = lines[i]
            if text_line.strip():
                depth = len(text_line) - len(text_line.lstrip())
                if indent < 0:
                    if depth <= marker:
                        break
                    indent = depth
                elif depth < indent:
                    break
                block.append(text_line[indent:])
            else:
                block.append("")
            i += 1
        found.append("\n".join(block).strip("\n") + "\n")
    return found


_COMPATIBLE_KEY = re.compile(r"^([ \t]*)(?:-[ \t]+)?compatible:[ \t]*(.*)$", re.M)


def schema_compatibles(text: str) -> set[str]:
    """The compatibles a binding's schema (what comes before its examples) lists under its
    `compatible:` keys (the property's, and those of its if/then conditions)."""
    key = _EXAMPLES_KEY.search(text)
    schema = text[: key.start()] if key else text
    found: set[str] = set()
    for match in _COMPATIBLE_KEY.finditer(schema):
        indent, block = len(match.group(1)), [match.group(2)]
        for line in schema[match.end() + 1 :].splitlines():
            if line.strip() and len(line) - len(line.lstrip()) <= indent:
                break
            block.append(line)
        found.update(_COMPATIBLE_TOKEN.findall("\n".join(block)))
    return found


# --- devicetree source --------------------------------------------------------------------


class DtsError(ValueError):
    """Devicetree source this reader cannot follow."""


@dataclass
class Property:
    name: str
    value: str | None  # None: a property without a value (`gpio-controller;`)


@dataclass
class Node:
    name: str
    labels: list[str] = field(default_factory=list)
    properties: list[Property] = field(default_factory=list)
    children: list[Node] = field(default_factory=list)
    parent: Node | None = field(default=None, repr=False)

    def get(self, name: str) -> Property | None:
        return next((p for p in self.properties if p.name == name), None)

    def walk(self) -> Iterator[Node]:
        yield self
        for child in self.children:
            yield from child.walk()

    def path_from(self, top: Node) -> str:
        names: list[str] = []
        node: Node | None = self
        while node is not None and node is not top:
            names.append(node.name)
            node = node.parent
        return "/".join(reversed(names))


# Strings and character literals (kept), or comments (blanked), in one alternation.
_LEXEMES = re.compile(r'"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'|/\*.*?\*/|//[^\n]*', re.S)
_DIRECTIVE = re.compile(
    r"^[ \t]*#[ \t]*(?:include|define|undef|if|ifdef|ifndef|elif|else|endif)\b.*$", re.M
)
_LABEL = re.compile(r"^([A-Za-z_]\w*)\s*:\s*")
_LITERALS = {'"': re.compile(r'"(?:\\.|[^"\\])*"'), "'": re.compile(r"'(?:\\.|[^'\\])*'")}
_STRING = re.compile(r'"((?:\\.|[^"\\])*)"')
_REFERENCE = re.compile(r"(?<![&\w])&(?:([A-Za-z_]\w*)|\{([^}]*)\})")


def parse(source: str) -> tuple[Node, list[str]]:
    """The nodes of devicetree source under a pseudo-root, and its `#include` and
    `#define` lines (other preprocessor lines are left out)."""
    text = _LEXEMES.sub(lambda m: " " if m.group(0).startswith("/") else m.group(0), source)
    directives = [
        line.strip()
        for line in _DIRECTIVE.findall(text)
        if re.match(r"#\s*(?:include|define)\b", line.strip())
    ]
    text = _DIRECTIVE.sub("", text)
    top = Node("")
    end = _body(text, 0, top)
    if end != len(text):
        raise DtsError(f"unbalanced '}}' at offset {end}")
    return top, directives


def _body(text: str, i: int, node: Node) -> int:
    """Statements from `i` into `node`, up to its closing brace (just past it) or the end."""
    while True:
        while i < len(text) and text[i].isspace():
            i += 1
        if i >= len(text):
            if node.parent is not None:
                raise DtsError(f"node {node.name!r} is not closed")
            return i
        if text[i] == "}":
            if node.parent is None:
                return i
            i += 1
            while i < len(text) and text[i].isspace():
                i += 1
            return i + 1 if text[i : i + 1] == ";" else i
        end = _statement_end(text, i)
        head = text[i:end].strip()
        if end >= len(text):
            raise DtsError(f"statement {head[:40]!r} does not end")
        if text[end] == "{":
            labels = []
            while (label := _LABEL.match(head)) is not None and not head.startswith("&"):
                labels.append(label.group(1))
                head = head[label.end() :]
            child = Node(head, labels, parent=node)
            node.children.append(child)
            i = _body(text, end + 1, child)
        elif text[end] == ";":
            node.properties.append(_property(head))
            i = end + 1
        else:
            raise DtsError(f"statement {head[:40]!r} ends in '}}'")


def _statement_end(text: str, i: int) -> int:
    """Where the statement from `i` ends: its '{', ';' or a stray '}' outside strings and
    brackets."""
    depth = 0
    while i < len(text):
        char = text[i]
        if char in _LITERALS:
            literal = _LITERALS[char].match(text, i)
            i = literal.end() if literal else i + 1
            continue
        if char in "([":
            depth += 1
        elif char in ")]":
            depth -= 1
        elif depth <= 0 and char in "{;}":
            return i
        i += 1
    return i


def _property(statement: str) -> Property:
    while (label := _LABEL.match(statement)) is not None:
        statement = statement[label.end() :]
    name, equals, value = statement.partition("=")
    if not equals:
        return Property(statement.strip(), None)
    return Property(name.strip(), " ".join(_tokens(value.strip())))


def _tokens(value: str) -> Iterator[str]:
    """A value's text with its whitespace runs folded, strings untouched."""
    position = 0
    for literal in _STRING.finditer(value):
        yield from value[position : literal.start()].split()
        yield literal.group(0)
        position = literal.end()
    yield from value[position:].split()


def strings(value: str | None) -> list[str]:
    """The string literals of a property's value."""
    return [m.group(1) for m in _STRING.finditer(value or "")]


def references(value: str | None) -> list[str]:
    """The labels (or {/paths}) a value's phandles refer to."""
    bare = _STRING.sub('""', value or "")
    return [label or "{" + path + "}" for label, path in _REFERENCE.findall(bare)]


def render(node: Node, indent: str = "") -> str:
    """Devicetree source for `node` and its subnodes."""
    labels = "".join(f"{label}: " for label in node.labels)
    lines = [f"{indent}{labels}{node.name} {{\n"]
    for prop in node.properties:
        value = "" if prop.value is None else f" = {prop.value}"
        lines.append(f"{indent}    {prop.name}{value};\n")
    for child in node.children:
        if node.properties or child is not node.children[0]:
            lines.append("\n")
        lines.append(render(child, indent + "    "))
    lines.append(f"{indent}}};\n")
    return "".join(lines)


# --- an example's node, moved onto our bus -----------------------------------------------


_BUS_NODE = {"i2c": re.compile(r"&?(?:i2c|iic)"), "spi": re.compile(r"&?spi")}


def _on_bus(node: Node, bus: str) -> bool:
    parent = node.parent
    return parent is not None and _BUS_NODE[bus].match(parent.name) is not None


def find(top: Node, compatible: str, bus: str = "i2c") -> Node | None:
    """The node whose compatible lists `compatible`, one on a `bus` bus first."""
    matches = [n for n in top.walk() if compatible in strings(_value(n, "compatible"))]
    return next((n for n in matches if _on_bus(n, bus)), matches[0] if matches else None)


def _value(node: Node, name: str) -> str | None:
    prop = node.get(name)
    return prop.value if prop else None


# The properties that only mean something beside a list property: its entries' names.
_COMPANIONS = {
    "clocks": ("clock-names",),
    "assigned-clocks": ("assigned-clock-rates", "assigned-clock-parents"),
    "resets": ("reset-names",),
    "pwms": ("pwm-names",),
    "io-channels": ("io-channel-names",),
    "dmas": ("dma-names",),
    "phys": ("phy-names",),
    "mboxes": ("mbox-names",),
    "interrupts": ("interrupt-names",),
    "interrupts-extended": ("interrupt-names",),
    "power-domains": ("power-domain-names",),
    "nvmem-cells": ("nvmem-cell-names",),
}


def _kind(name: str) -> str:
    if name.startswith("interrupt"):
        return "interrupt"
    if name in ("gpios", "gpio") or name.endswith(("-gpios", "-gpio")):
        return "gpio"
    if name.endswith("-supply"):
        return "supply"
    if name in ("clocks", "clock-names") or name.startswith("assigned-clock"):
        return "clock"
    return "other"


def relocate(
    example: str,
    compatible: str,
    *,
    binding: str = "",
    labels: Collection[str] = (),
    bus: str = "i2c",
) -> DeviceNode | None:
    """The node of `example` (devicetree source) whose compatible lists `compatible`,
    moved onto our `bus` (see the module's docstring); None if it has none. `labels`: the
    labels of our tree a phandle may keep referring to. DtsError: source beyond this
    reader."""
    top, directives = parse(example)
    node = find(top, compatible, bus)
    if node is None:
        return None
    return _moved(node, directives, compatible, binding, labels, example="", bus=bus)


def relocate_sibling(
    example: str,
    compatible: str,
    siblings: Collection[str],
    *,
    binding: str = "",
    labels: Collection[str] = (),
    bus: str = "i2c",
) -> DeviceNode | None:
    """The first node of `example` of a chip in `siblings` (the compatibles its binding
    lists; one on a `bus` bus first), moved onto our bus as `compatible`'s; None if it has
    none."""
    top, directives = parse(example)
    kin = [n for n in top.walk() if set(strings(_value(n, "compatible"))) & set(siblings)]
    node = next((n for n in kin if _on_bus(n, bus)), kin[0] if kin else None)
    if node is None:
        return None
    other = next(c for c in strings(_value(node, "compatible")) if c in siblings)
    return _moved(node, directives, compatible, binding, labels, example=other, bus=bus)


def _moved(
    node: Node,
    directives: Sequence[str],
    compatible: str,
    binding: str,
    labels: Collection[str],
    example: str,
    bus: str = "i2c",
) -> DeviceNode:
    node.parent = None  # detached: above it is our bus now
    dropped: list[Dropped] = []

    def drop(owner: Node, prop: Property, kind: str, reason: str) -> None:
        owner.properties.remove(prop)
        dropped.append(Dropped(owner.path_from(node), prop.name, prop.value or "", kind, reason))

    defined = {label for n in node.walk() for label in n.labels} | set(labels)
    dropped_parents: set[int] = set()  # nodes whose interrupt-parent went
    for owner in node.walk():
        for prop in list(owner.properties):
            missing = [r for r in references(prop.value) if r not in defined]
            if owner is node and prop.name in ("compatible", "reg"):
                continue
            if owner is node and prop.name == "reg-names":
                drop(owner, prop, "other", "our node has one address")
            elif prop.name.startswith("spi-") and bus != "spi":
                drop(owner, prop, "other", "a property of an SPI bus")
            elif owner is node and prop.name in _SPI_WIDTHS and bus == "spi":
                drop(owner, prop, "other", "our SPI controller has one data line each way")
            elif owner is node and prop.name == "status" and strings(prop.value) not in OKAY:
                drop(owner, prop, "other", f"the example's status is {prop.value}")
            elif missing:
                if prop.name == "interrupt-parent":
                    dropped_parents.add(id(owner))
                refs = ", ".join(f"&{r}" for r in missing)
                drop(owner, prop, _kind(prop.name), f"refers to {refs}, not in our tree")
    for owner in node.walk():
        interrupts = owner.get("interrupts")
        if interrupts is not None and not _has_interrupt_parent(owner, dropped_parents):
            drop(owner, interrupts, "interrupt", "no interrupt parent in our tree")
    for owner in node.walk():
        for prop in list(owner.properties):
            lists = [k for k, names in _COMPANIONS.items() if prop.name in names]
            if lists and not any(owner.get(k) for k in lists):
                drop(owner, prop, _kind(prop.name), f"goes with {' or '.join(lists)}, not kept")
            elif prop.name == "pinctrl-names" and not any(
                re.fullmatch(r"pinctrl-\d+", p.name) for p in owner.properties
            ):
                drop(owner, prop, "other", "goes with pinctrl-0, not kept")
    _settle(node, compatible)
    used = {r for n in node.walk() for p in n.properties for r in references(p.value)}
    for owner in node.walk():
        owner.labels = [label for label in owner.labels if label in used]
    head = "".join(f"{d}\n" for d in directives)
    return DeviceNode(compatible, head + render(node), binding, example, tuple(dropped))


# spi-peripheral-props.yaml's data line counts: the virtio-spi device offers single lines.
_SPI_WIDTHS = ("spi-tx-bus-width", "spi-rx-bus-width")


def _has_interrupt_parent(node: Node, dropped_parents: set[int]) -> bool:
    """Whether the kernel finds `node` an interrupt parent in our tree (of_irq_find_parent:
    the node's interrupt-parent, else its parent, until one has #interrupt-cells)."""
    current: Node | None = node
    while current is not None:
        if id(current) in dropped_parents:
            return False
        if current.get("interrupt-parent") is not None:
            return True  # what it refers to is the node's own or the caller's
        current = current.parent
        if current is not None and current.get("#interrupt-cells") is not None:
            return True
    return False


def _settle(node: Node, compatible: str) -> None:
    """Our name, compatible and reg on the example's node."""
    base = node.name.lstrip("&").partition("@")[0] or node_name(compatible)
    node.name = f"{base}@$addr$"
    ours = [Property("compatible", _quote(compatible)), Property("reg", "<0x$addr$>")]
    rest = [p for p in node.properties if p.name not in ("compatible", "reg")]
    node.properties = ours + rest


# --- the bindings of a tree ----------------------------------------------------------------


@dataclass(frozen=True)
class Binding:
    path: str  # relative to the tree
    compatibles: frozenset[str]  # what its schema lists
    examples: tuple[str, ...]


class Bindings:
    """The bindings of a tree that have examples, by the compatibles their schemas list
    and their examples show."""

    def __init__(self, bindings: Sequence[Binding]) -> None:
        self.bindings = list(bindings)
        self._schemas: dict[str, list[Binding]] = {}
        self._shown: dict[str, list[Binding]] = {}
        for binding in self.bindings:
            for compatible in binding.compatibles:
                self._schemas.setdefault(compatible, []).append(binding)
            shown = {c for e in binding.examples for c in _COMPATIBLE_TOKEN.findall(e)}
            for compatible in shown:
                self._shown.setdefault(compatible, []).append(binding)

    @classmethod
    def scan(cls, tree: Path) -> Bindings:
        """Every binding with an example under the tree's Documentation/devicetree/bindings."""
        found = []
        for path in sorted((tree / BINDINGS).rglob("*.yaml")):
            text = path.read_text(errors="replace")
            shown = examples(text)
            if shown:
                relative = path.relative_to(tree).as_posix()
                found.append(Binding(relative, frozenset(schema_compatibles(text)), tuple(shown)))
        return cls(found)

    def node(self, compatible: str, labels: Collection[str] = (), bus: str = "i2c") -> DeviceNode:
        """The best node for `compatible` on `bus`: an example of its own, else a sibling
        chip's in its binding, else from the compatible alone (see the module's
        docstring). An example beyond this reader's devicetree source is passed over."""
        own = sorted(self._shown.get(compatible, []), key=lambda b: compatible not in b.compatibles)
        for binding in own:
            for example in binding.examples:
                try:
                    moved = relocate(
                        example, compatible, binding=binding.path, labels=labels, bus=bus
                    )
                except DtsError:
                    continue
                if moved is not None:
                    return moved
        for binding in self._schemas.get(compatible, []):
            if binding.path.rpartition("/")[2] in _NO_SIBLINGS:
                continue
            siblings = binding.compatibles - {compatible}
            for example in binding.examples:
                try:
                    moved = relocate_sibling(
                        example, compatible, siblings, binding=binding.path, labels=labels, bus=bus
                    )
                except DtsError:
                    continue
                if moved is not None:
                    return moved
        return node_from_compatible(compatible)


def devices(
    driver: Driver, bindings: Bindings, labels: Collection[str] = ()
) -> list[DeviceNode | NewDevice]:
    """What to instantiate for each device a driver matches: a node per OF compatible on
    the driver's bus, or, for a driver without any, a NewDevice per i2c_device_id name (on
    I2C) or an id_node per spi_device_id name (on SPI)."""
    if driver.compatibles:
        return [bindings.node(c, labels, driver.bus) for c in driver.compatibles]
    if driver.bus == "spi":
        return [id_node(name) for name in driver.ids]
    return [NewDevice(name) for name in driver.ids]
