"""Which drivers kconfig lets each target build, and why not the others.

kconfig decides, not we: a fragment asks for every driver's symbol (=m, or =y if it is a
bool), and for the symbols its dependencies name, transitively (IIO, INPUT_TOUCHSCREEN,
COMPILE_TEST...), since olddefconfig never turns a dependency on by itself; it is merged
over the target's base config and `make olddefconfig` settles it in a scratch O= directory.
A driver whose symbol survives as m or y builds for the target. For the others, the reason
is read from the Kconfig files: the conjuncts of their `depends on` that the final config
fails, as the kconfig language defines them (Documentation/kbuild/kconfig-language.rst).
"""

from __future__ import annotations

import re
import shutil
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from roadtest.arch import Target
from roadtest.errors import RoadtestError
from roadtest.kernel.config import Value, configure, parse_config
from roadtest.kernel.runner import Runner
from roadtest.sweep.inventory import Driver

# --- the Kconfig language ---------------------------------------------------------------


@dataclass(frozen=True)
class Symbol:
    """One definition of a config symbol (a symbol may be defined in several places)."""

    name: str
    kind: str  # bool, tristate, string, int, hex; "" if no line gives it a type
    prompt: bool  # a user can set it (a fragment can); without one only select/default do
    in_choice: bool  # a member of a choice: its choice decides, not a fragment
    # Every expression it depends on: the enclosing ifs, menus and choices, then its own
    # `depends on` lines and its prompt's `if`.
    depends: tuple[str, ...]
    where: str  # file:line, relative to the tree


@dataclass
class _Block:
    kind: str  # if, menu, choice
    depends: list[str]


@dataclass
class _Entry:
    name: str
    kind: str = ""
    prompt: bool = False
    depends: list[str] = field(default_factory=list)
    where: str = ""


_ENTRY_WORDS = {"config", "menuconfig", "choice", "menu", "comment", "if", "mainmenu"}
_END_WORDS = {"endif": "if", "endmenu": "menu", "endchoice": "choice"}
_SOURCE_WORDS = {"source", "rsource", "osource", "orsource"}
_TYPES = {"bool", "tristate", "string", "int", "hex", "def_bool", "def_tristate"}
_MACRO_ASSIGNMENT = re.compile(r"^[\w-]+\s*(?::=|\+=|=)")


def _indent(line: str) -> int:
    return len(line.expandtabs(8)) - len(line.expandtabs(8).lstrip())


def _uncomment(line: str) -> str:
    """A Kconfig line without its comment (a # outside quotes)."""
    quoted = False
    for i, char in enumerate(line):
        if char == '"':
            quoted = not quoted
        elif char == "#" and not quoted:
            return line[:i]
    return line


class KconfigTree:
    """The symbols of a tree's Kconfig files as one architecture sees them (the files that
    `source "arch/$(SRCARCH)/Kconfig"` reaches)."""

    def __init__(self, tree: Path, macros: Mapping[str, str]) -> None:
        self.tree = tree
        self.macros = dict(macros)
        self.symbols: dict[str, list[Symbol]] = {}
        self.selected_by: dict[str, list[str]] = {}  # select lines: selected -> selectors
        self.files: list[Path] = []  # every Kconfig file read, for the inventory's cache key
        self._blocks: list[_Block] = []
        self._entry: _Entry | _Block | None = None
        self._in_choice = 0
        self._read(tree / "Kconfig")

    def expand(self, text: str) -> str:
        """$(NAME) macros the architecture sets; a function call such as $(cc-option,...),
        which runs the toolchain, becomes the constant "$(cc-option)" (false)."""
        out = ""
        while (start := text.find("$(")) != -1:
            depth, end = 0, start + 1
            for end in range(start + 1, len(text)):
                depth += {"(": 1, ")": -1}.get(text[end], 0)
                if depth == 0:
                    break
            call = text[start + 2 : end]
            name = re.split(r"[,\s]", call, maxsplit=1)[0]
            known = name == call and name in self.macros
            out += text[:start] + (self.macros[name] if known else f'"$({name})"')
            text = text[end + 1 :]
        return out + text

    def _read(self, path: Path) -> None:
        self.files.append(path)
        lines = path.read_text(errors="replace").splitlines()
        where = path.relative_to(self.tree).as_posix()
        depth = len(self._blocks)
        i = 0
        while i < len(lines):
            number = i + 1
            line = lines[i]
            i += 1
            while line.endswith("\\") and i < len(lines):
                line = line[:-1] + " " + lines[i]
                i += 1
            words = _uncomment(line).split(None, 1)
            if not words:
                continue
            keyword, rest = words[0], (words[1].strip() if len(words) > 1 else "")
            if keyword in ("help", "---help---"):
                i = _skip_help(lines, i)
            else:
                self._line(path, keyword, rest, f"{where}:{number}")
        self._close_entry()
        if len(self._blocks) != depth:
            raise RoadtestError(f"{path}: unbalanced if/menu/choice blocks")

    def _line(self, path: Path, keyword: str, rest: str, where: str) -> None:
        if keyword in _SOURCE_WORDS:
            self._close_entry()
            self._source(path, keyword, rest)
        elif keyword in _ENTRY_WORDS:
            self._close_entry()
            self._open(keyword, rest, where)
        elif keyword in _END_WORDS:
            self._close_entry()
            block = self._blocks.pop()
            if block.kind != _END_WORDS[keyword]:
                raise RoadtestError(f"{where}: {keyword} closes a {block.kind}")
            if block.kind == "choice":
                self._in_choice -= 1
        elif _MACRO_ASSIGNMENT.match(f"{keyword} {rest}"):
            return  # a macro definition (scripts/Kconfig.include's cc-option := ...)
        elif self._entry is not None:
            self._attribute(keyword, rest)

    def _open(self, keyword: str, rest: str, where: str) -> None:
        if keyword in ("config", "menuconfig"):
            self._entry = _Entry(rest.split()[0], where=where)
        elif keyword == "if":
            self._blocks.append(_Block("if", [rest]))
        elif keyword in ("menu", "choice"):
            # Their depends-on lines follow them, and hold for everything inside.
            block = _Block(keyword, [])
            self._blocks.append(block)
            self._entry = block
            if keyword == "choice":
                self._in_choice += 1
        else:  # comment, mainmenu: attributes that matter to no symbol
            self._entry = _Block("comment", [])

    def _attribute(self, keyword: str, rest: str) -> None:
        entry = self._entry
        if keyword == "depends" and rest.startswith("on"):
            assert entry is not None
            entry.depends.append(rest[2:].strip())
            return
        if keyword == "visible" and rest.startswith("if") and isinstance(entry, _Block):
            entry.depends.append(rest[2:].strip())
            return
        if not isinstance(entry, _Entry):
            return
        if keyword == "select" and rest:
            selectors = self.selected_by.setdefault(rest.split()[0], [])
            selectors += [entry.name] if entry.name not in selectors else []
            return
        if keyword in _TYPES:
            entry.kind = keyword.removeprefix("def_")
            if keyword in ("def_bool", "def_tristate"):
                return
        elif keyword != "prompt":
            return
        if rest.startswith('"'):  # a prompt, maybe with its own condition
            entry.prompt = True
            closing = rest.find('"', 1)
            condition = rest[closing + 1 :].strip() if closing > 0 else ""
            if condition.startswith("if "):
                entry.depends.append(condition[3:].strip())

    def _close_entry(self) -> None:
        entry = self._entry
        self._entry = None
        if not isinstance(entry, _Entry):
            return
        context = [d for block in self._blocks for d in block.depends]
        symbol = Symbol(
            entry.name,
            entry.kind,
            entry.prompt,
            self._in_choice > 0,
            tuple(self.expand(d) for d in (*context, *entry.depends)),
            entry.where,
        )
        self.symbols.setdefault(entry.name, []).append(symbol)

    def _source(self, path: Path, keyword: str, rest: str) -> None:
        name = self.expand(rest.strip().strip('"'))
        base = path.parent if keyword.startswith(("r", "or")) else self.tree
        found = sorted(base.glob(name)) if any(c in name for c in "*?[") else [base / name]
        for sourced in found:
            if sourced.is_file():
                self._read(sourced)
            elif not keyword.startswith("o"):
                raise RoadtestError(f"{path}: sources {name}, which is not there")


def _skip_help(lines: Sequence[str], i: int) -> int:
    """The index of the first line after the help text that starts at line i: it ends at
    the first line indented less than its own first line."""
    first = None
    while i < len(lines):
        line = lines[i]
        if line.strip():
            if first is None:
                first = _indent(line)
            elif _indent(line) < first:
                break
        i += 1
    return i


def kconfig_macros(target: Target) -> dict[str, str]:
    """The $(...) variables Kconfig file names use, as the top Makefile sets them."""
    srcarch = {"x86_64": "x86", "i386": "x86"}.get(target.make_arch, target.make_arch)
    # The machine the kernel runs on: UML's headers are its host's (arch/um/Makefile's
    # HEADER_ARCH := $(SUBARCH)).
    subarch = {"x86_64": "x86"}.get(target.guest_machine, target.guest_machine)
    macros = {"ARCH": target.make_arch, "SRCARCH": srcarch, "SUBARCH": subarch}
    if target.make_arch == "um":
        macros["HEADER_ARCH"] = subarch
    return macros


# --- expressions ------------------------------------------------------------------------

_EXPR_TOKEN = re.compile(r'\s*(&&|\|\||!=|<=|>=|[!()=<>]|"[^"]*"|[A-Za-z0-9_.\-/+$]+)')


@dataclass(frozen=True)
class Atom:
    text: str  # a symbol's name, or a constant (quoted, or an undefined name)
    quoted: bool


@dataclass(frozen=True)
class Not:
    operand: Expr


@dataclass(frozen=True)
class Both:
    left: Expr
    right: Expr


@dataclass(frozen=True)
class Either:
    left: Expr
    right: Expr


@dataclass(frozen=True)
class Compare:
    operator: str  # = != < <= > >=
    left: Atom
    right: Atom


Expr = Atom | Not | Both | Either | Compare


def parse_expr(text: str) -> Expr:
    """A Kconfig expression: ! && || ( ) and comparisons between symbols and constants."""
    tokens = _tokens(text)
    expr, rest = _either(tokens)
    if rest:
        raise RoadtestError(f"cannot read the Kconfig expression {text!r}")
    return expr


def _tokens(text: str) -> list[str]:
    tokens = []
    position = 0
    text = text.rstrip()
    while position < len(text):
        match = _EXPR_TOKEN.match(text, position)
        if match is None:
            raise RoadtestError(f"cannot read the Kconfig expression {text!r}")
        tokens.append(match.group(1))
        position = match.end()
    return tokens


def _either(tokens: list[str]) -> tuple[Expr, list[str]]:
    left, tokens = _both(tokens)
    while tokens[:1] == ["||"]:
        right, tokens = _both(tokens[1:])
        left = Either(left, right)
    return left, tokens


def _both(tokens: list[str]) -> tuple[Expr, list[str]]:
    left, tokens = _unary(tokens)
    while tokens[:1] == ["&&"]:
        right, tokens = _unary(tokens[1:])
        left = Both(left, right)
    return left, tokens


def _unary(tokens: list[str]) -> tuple[Expr, list[str]]:
    if not tokens:
        raise RoadtestError("a Kconfig expression ends too early")
    if tokens[0] == "!":
        operand, rest = _unary(tokens[1:])
        return Not(operand), rest
    if tokens[0] == "(":
        inner, rest = _either(tokens[1:])
        if rest[:1] != [")"]:
            raise RoadtestError("a Kconfig expression lacks a closing parenthesis")
        return inner, rest[1:]
    left = _atom(tokens[0])
    if tokens[1:2] and tokens[1] in ("=", "!=", "<", "<=", ">", ">="):
        if len(tokens) < 3:
            raise RoadtestError("a Kconfig comparison lacks its right side")
        return Compare(tokens[1], left, _atom(tokens[2])), tokens[3:]
    return left, tokens[1:]


def _atom(token: str) -> Atom:
    if token.startswith('"'):
        return Atom(token[1:-1], True)
    return Atom(token, False)


def conjuncts(expr: Expr) -> list[Expr]:
    """The operands of an expression's top-level &&s."""
    if isinstance(expr, Both):
        return [*conjuncts(expr.left), *conjuncts(expr.right)]
    return [expr]


def show(expr: Expr) -> str:
    """An expression in Kconfig's spelling."""
    if isinstance(expr, Atom):
        return f'"{expr.text}"' if expr.quoted else expr.text
    if isinstance(expr, Not):
        inner = show(expr.operand)
        return f"!{inner}" if isinstance(expr.operand, Atom) else f"!({inner})"
    if isinstance(expr, Compare):
        return f"{show(expr.left)}{expr.operator}{show(expr.right)}"
    if isinstance(expr, Both):
        # && binds tighter than ||: only an || inside an && needs its parentheses.
        sides = (
            f"({show(e)})" if isinstance(e, Either) else show(e) for e in (expr.left, expr.right)
        )
        return " && ".join(sides)
    return f"{show(expr.left)} || {show(expr.right)}"


class Evaluator:
    """Expressions' values in a final .config, by the language's tristate logic: n < m < y,
    ! is y minus it, && the least, || the greatest, a comparison y or n."""

    def __init__(self, config: Mapping[str, Value], symbols: Mapping[str, list[Symbol]]) -> None:
        self.config = config
        self.symbols = symbols

    def _is_symbol(self, atom: Atom) -> bool:
        return not atom.quoted and atom.text in self.symbols

    def text(self, atom: Atom) -> str:
        if not self._is_symbol(atom):
            return atom.text
        value = self.config.get("CONFIG_" + atom.text)
        if value is None:
            kinds = {s.kind for s in self.symbols[atom.text]}
            return "n" if kinds & {"bool", "tristate", ""} else ""
        return value.strip('"')

    def value(self, expr: Expr) -> int:
        """0 (n), 1 (m) or 2 (y)."""
        if isinstance(expr, Atom):
            if not self._is_symbol(expr) and expr.text not in ("y", "m"):
                return 0
            return {"y": 2, "m": 1}.get(self.text(expr), 0)
        if isinstance(expr, Not):
            return 2 - self.value(expr.operand)
        if isinstance(expr, Both):
            return min(self.value(expr.left), self.value(expr.right))
        if isinstance(expr, Either):
            return max(self.value(expr.left), self.value(expr.right))
        return 2 if _compare(expr.operator, self.text(expr.left), self.text(expr.right)) else 0


def _compare(operator: str, left: str, right: str) -> bool:
    if operator in ("=", "!="):
        return (left == right) == (operator == "=")
    try:
        a, b = int(left, 0), int(right, 0)
    except ValueError:
        return False
    return {"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[operator]


def wanted_symbols(expr: Expr) -> Iterator[str]:
    """The names an expression needs set (those not under a !, or compared equal to y or m):
    the symbols to ask for so that it can hold."""
    yield from _wanted(expr, positive=True)


def _wanted(expr: Expr, *, positive: bool) -> Iterator[str]:
    if isinstance(expr, Atom):
        if positive and not expr.quoted:
            yield expr.text
    elif isinstance(expr, Not):
        yield from _wanted(expr.operand, positive=not positive)
    elif isinstance(expr, Both | Either):
        yield from _wanted(expr.left, positive=positive)
        yield from _wanted(expr.right, positive=positive)
    else:
        on = (expr.operator == "=") == (expr.right.text in ("y", "m"))
        if positive and on and expr.operator in ("=", "!=") and not expr.left.quoted:
            yield expr.left.text


# --- the fragment and olddefconfig ------------------------------------------------------


def requests(kconfig: KconfigTree, drivers: Iterable[Driver]) -> dict[str, str]:
    """What the fragment asks for: every driver's symbol (m, or y for a bool) and, with y,
    every symbol a user can set that they need, transitively. A symbol without a prompt
    cannot be set (BMC150_ACCEL_I2C): the symbols that select it are asked for instead, as
    the driver's (BMC150_ACCEL). Choice members are left to their choice."""
    wanted: dict[str, str] = {}
    queue: list[tuple[str, bool]] = []
    for driver in drivers:
        queue += [(driver.symbol, True)] if driver.symbol else []
        queue += [(condition, False) for condition in driver.conditions]
    seen: set[str] = set()
    while queue:
        name, is_driver = queue.pop(0)
        if name in seen:
            continue
        seen.add(name)
        definitions = kconfig.symbols.get(name, [])
        settable = [s for s in definitions if s.prompt and not s.in_choice]
        if settable:
            tristate = any(s.kind == "tristate" for s in settable)
            wanted[name] = "m" if is_driver and tristate else "y"
        elif is_driver and not any(s.in_choice for s in definitions):
            queue += [(selector, is_driver) for selector in kconfig.selected_by.get(name, [])]
        for symbol in definitions:
            for expression in symbol.depends:
                queue += [(n, False) for n in wanted_symbols(parse_expr(expression))]
    return wanted


def fragment_text(wanted: Mapping[str, str], off: Iterable[str] = ()) -> str:
    lines = [f"CONFIG_{name}={value}" for name, value in sorted(wanted.items())]
    lines += [f"# CONFIG_{name} is not set" for name in sorted(off)]
    return "\n".join(lines) + "\n"


def settle(
    runner: Runner,
    source_dir: Path,
    build_dir: Path,
    base: Path,
    fragment: Path,
    target: Target,
) -> dict[str, Value]:
    """The final config of `fragment` merged over a configured build directory's .config
    (left as it was: copied to `build_dir` first), after olddefconfig."""
    config = build_dir / ".config"
    shutil.copyfile(base, config)
    failure = "kernel configuration of the sweep's fragment failed"
    merge = source_dir / "scripts" / "kconfig" / "merge_config.sh"
    # merge_config.sh makes its temp files in the current directory: keep them out of the source.
    runner.check(
        ["sh", str(merge), "-m", "-O", str(build_dir), str(config), str(fragment)],
        cwd=build_dir,
        failure=failure,
    )
    make = ["make", *target.make_args(), f"O={build_dir}", "olddefconfig"]
    runner.check(make, cwd=source_dir, failure=failure, nice=True)
    return parse_config(config.read_text())


# --- reasons ----------------------------------------------------------------------------


def _built(config: Mapping[str, Value], name: str) -> bool:
    return config.get("CONFIG_" + name) in ("m", "y")


def why_unset(name: str, kconfig: KconfigTree, config: Mapping[str, Value], depth: int = 2) -> str:
    """Why the final config leaves `name` unset: the conjuncts of its dependencies that fail
    there, and, for a symbol a failing one names, why that one is unset (`depth` levels)."""
    definitions = kconfig.symbols.get(name, [])
    if not definitions:
        return f"no Kconfig file defines {name}"
    evaluator = Evaluator(config, kconfig.symbols)
    failing: list[Expr] = []
    for symbol in definitions:
        for expression in symbol.depends:
            parsed = parse_expr(expression)
            failing += [c for c in conjuncts(parsed) if evaluator.value(c) == 0]
    failing = list(dict.fromkeys(failing))
    if failing:
        parts = []
        for conjunct in failing:
            causes = _causes(wanted_symbols(conjunct), kconfig, config, depth)
            parts.append(f"{show(conjunct)} ({causes})" if causes else show(conjunct))
        return "depends on " + " && ".join(parts)
    if not any(s.prompt for s in definitions):
        selectors = kconfig.selected_by.get(name, [])
        if not selectors:
            return f"{name} has no prompt, and nothing selects it"
        causes = _causes(selectors, kconfig, config, depth)
        return f"selected by {', '.join(selectors)}" + (f" ({causes})" if causes else "")
    return f"kconfig leaves {name} unset though its dependencies hold"


def _causes(
    names: Iterable[str], kconfig: KconfigTree, config: Mapping[str, Value], depth: int
) -> str:
    """Why each unset symbol of `names` is unset, one level down."""
    causes = []
    for name in dict.fromkeys(names):
        if name not in kconfig.symbols:
            causes.append(f"{name}: not defined for this architecture")
        elif depth > 0 and not _built(config, name):
            causes.append(f"{name}: {why_unset(name, kconfig, config, depth - 1)}")
    return "; ".join(causes)


@dataclass(frozen=True)
class Outcome:
    """What kconfig makes of the drivers for one target."""

    # driver source -> its symbol and conditions survive (and the machine can run it)
    builds: dict[str, bool]
    reasons: dict[str, str]  # driver source -> why not


def _outcome(
    drivers: Sequence[Driver], kconfig: KconfigTree, config: Mapping[str, Value]
) -> Outcome:
    builds: dict[str, bool] = {}
    reasons: dict[str, str] = {}
    for driver in drivers:
        missing = [c for c in driver.conditions if not _built(config, c)]
        ok = bool(driver.symbol) and _built(config, driver.symbol) and not missing
        builds[driver.source] = ok
        if ok or not driver.symbol:
            continue
        if not _built(config, driver.symbol):
            reasons[driver.source] = why_unset(driver.symbol, kconfig, config)
        else:
            reasons[driver.source] = "kbuild needs " + ", ".join(missing) + " for its directory"
    return Outcome(builds, reasons)


def _rivals(
    driver: Driver, kconfig: KconfigTree, config: Mapping[str, Value], wanted: Mapping[str, str]
) -> list[str]:
    """The symbols the fragment asked for, set in `config`, that this unset driver must
    not have (`depends on INPUT_BMA150=n`): kconfig kept them instead."""
    rivals = []
    evaluator = Evaluator(config, kconfig.symbols)
    for symbol in kconfig.symbols.get(driver.symbol, []):
        for expression in symbol.depends:
            for conjunct in conjuncts(parse_expr(expression)):
                if evaluator.value(conjunct):
                    continue
                named = set(_names(conjunct)) - set(wanted_symbols(conjunct))
                rivals += [n for n in named if n in wanted and _built(config, n)]
    return list(dict.fromkeys(rivals))


def _names(expr: Expr) -> Iterator[str]:
    if isinstance(expr, Atom):
        if not expr.quoted:
            yield expr.text
    elif isinstance(expr, Not):
        yield from _names(expr.operand)
    elif isinstance(expr, Compare):
        yield from _names(expr.left)
    else:
        yield from _names(expr.left)
        yield from _names(expr.right)


def config_files(tree: Path, targets: Sequence[Target], repo_root: Path) -> list[Path]:
    """The configs the targets' olddefconfig runs start from (besides the Kconfig files):
    roadtest's base fragments, the tree's defconfigs and its kernel/configs/ fragments
    (tinyconfig's)."""
    found = [repo_root / target.base_config for target in targets]
    for srcarch in dict.fromkeys(kconfig_macros(t)["SRCARCH"] for t in targets):
        found += sorted((tree / "arch" / srcarch / "configs").glob("*"))
    return found + sorted((tree / "kernel" / "configs").glob("*"))


def buildability(
    tree: Path,
    drivers: Sequence[Driver],
    targets: Sequence[Target],
    repo_root: Path,
    runner: Runner,
    progress: Callable[[str], None],
) -> tuple[list[Driver], list[Path]]:
    """The drivers with `builds` and `reason` filled in for each target, and the Kconfig
    files read. Either/or pairs (ADXL345_I2C needs INPUT_ADXL34X=n): when kconfig keeps
    one side, a second olddefconfig without it decides whether the other builds alone."""
    results: dict[str, Outcome] = {}
    files: list[Path] = []
    with tempfile.TemporaryDirectory(prefix="roadtest-sweep-") as scratch:
        for target in targets:
            progress(f"sweep: kconfig for {target.name} (olddefconfig in {scratch})")
            kconfig = KconfigTree(tree, kconfig_macros(target))
            files += kconfig.files
            outcome = _target_outcome(
                tree, drivers, target, kconfig, repo_root, runner, Path(scratch) / target.name
            )
            results[target.name] = machine_limits(outcome, drivers, target)
    return [_with_outcomes(d, results) for d in drivers], list(dict.fromkeys(files))


def _target_outcome(
    tree: Path,
    drivers: Sequence[Driver],
    target: Target,
    kconfig: KconfigTree,
    repo_root: Path,
    runner: Runner,
    scratch: Path,
) -> Outcome:
    build_dir = scratch / "build"
    build_dir.mkdir(parents=True)
    base_fragment = repo_root / target.base_config
    configured = configure(runner, tree, build_dir, [base_fragment], repo_root, target)
    base = scratch / "base.config"
    shutil.copyfile(configured, base)
    wanted = requests(kconfig, drivers)
    fragment = scratch / "sweep.config"
    fragment.write_text(fragment_text(wanted))
    config = settle(runner, tree, build_dir, base, fragment, target)
    outcome = _outcome(drivers, kconfig, config)
    rivals = {
        d.source: found
        for d in drivers
        if d.symbol and not outcome.builds[d.source]
        if (found := _rivals(d, kconfig, config, wanted))
    }
    if not rivals:
        return outcome
    # The other side of each pair: the same request without the driver kconfig kept.
    kept = {name for found in rivals.values() for name in found}
    fragment.write_text(fragment_text({k: v for k, v in wanted.items() if k not in kept}, kept))
    alone = _outcome(drivers, kconfig, settle(runner, tree, build_dir, base, fragment, target))
    builds, reasons = dict(outcome.builds), dict(outcome.reasons)
    for source, found in rivals.items():
        either = ", ".join(found)
        builds[source] = alone.builds[source]
        if alone.builds[source]:
            reasons[source] = f"either/or with {either}: not in the same kernel"
        else:
            reasons[source] = f"{alone.reasons[source]}; and either/or with {either}"
    return Outcome(builds, reasons)


def machine_limits(outcome: Outcome, drivers: Sequence[Driver], target: Target) -> Outcome:
    """The outcome with the drivers kconfig builds but the target's machine cannot run taken
    out, with the reason: ISA port I/O where the machine has no ISA ports."""
    builds, reasons = dict(outcome.builds), dict(outcome.reasons)
    for driver in drivers:
        if builds.get(driver.source) and driver.port_io and not target.isa_ports:
            builds[driver.source] = False
            reasons[driver.source] = "does ISA port I/O outside CONFIG_ISA code: no ISA ports"
    return Outcome(builds, reasons)


def _with_outcomes(driver: Driver, results: Mapping[str, Outcome]) -> Driver:
    builds = {name: outcome.builds[driver.source] for name, outcome in results.items()}
    # One reason per distinct text, naming the targets it is for.
    by_reason: dict[str, list[str]] = {}
    for name, outcome in results.items():
        if reason := outcome.reasons.get(driver.source):
            by_reason.setdefault(reason, []).append(name)
    reasons = [f"{' '.join(names)}: {reason}" for reason, names in by_reason.items()]
    if driver.reason:
        reasons.insert(0, driver.reason)
    return replace(driver, builds=builds, reason="; ".join(reasons))
