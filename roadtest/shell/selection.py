"""What `roadtest shell` binds: the devices of test files, of tests, or of a chip.

A word is a test file or directory (the devices its modules declare), a test
(`FILE::NAME`: the declared devices its code names, or that it is
parametrized with), or a device: a compatible (`ti,opt3001`) or its part after
the comma (`opt3001`, the chip's directory in traces/), looked up among the
declarations of the driver tests (tests/drivers).
"""

from __future__ import annotations

import types
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol

from roadtest.errors import RoadtestError
from roadtest.testing.devices import Device, I2CDevice, PlatformDevice
from roadtest.trace.names import chip_name, shown_id

USAGE = "name a test file, a test (FILE::NAME) or a device (e.g. ti,opt3001 or opt3001)"


@dataclass(frozen=True)
class Selection:
    text: str  # as the user wrote it
    kind: Literal["path", "test", "device"]
    path: Path | None = None  # resolved, for a path or a test
    test: str = ""  # after the file's "::", for a test


def parse(words: Sequence[str]) -> list[Selection]:
    """The user's words as selections; RoadtestError for a file that is not there."""
    if not words:
        raise RoadtestError(f"shell: {USAGE}")
    found = []
    for word in words:
        file, sep, test = word.partition("::")
        looks_like_path = bool(sep) or "/" in file or file.endswith(".py")
        path = Path(file)
        if path.exists():
            found.append(Selection(word, "test" if sep else "path", path.resolve(), test))
        elif looks_like_path or not file:
            raise RoadtestError(f"{shown_id(word)}: no such test file or directory")
        else:
            found.append(Selection(word, "device"))
    return found


class TestItem(Protocol):
    """What selection needs of a collected pytest item."""

    @property
    def path(self) -> Path: ...
    @property
    def nodeid(self) -> str: ...


def _module(item: object) -> types.ModuleType | None:
    module = getattr(item, "module", None)
    return module if isinstance(module, types.ModuleType) else None


def _named_globals(function: object, module: types.ModuleType) -> list[str]:
    """The global names a function's code uses, and those of the module's functions it calls."""
    names: list[str] = []
    todo = [getattr(function, "__code__", None)]
    seen: set[int] = set()
    while todo:
        code = todo.pop()
        if not isinstance(code, types.CodeType) or id(code) in seen:
            continue
        seen.add(id(code))
        for name in code.co_names:
            names.append(name)
            value = getattr(module, name, None)
            if isinstance(value, types.FunctionType) and value.__module__ == module.__name__:
                todo.append(value.__code__)
        todo += [c for c in code.co_consts if isinstance(c, types.CodeType)]
    return names


def _is_device(value: object) -> bool:
    return isinstance(value, (I2CDevice, PlatformDevice))


def test_devices(item: object, declared: Sequence[Device]) -> list[Device]:
    """The declared devices a test attaches: those its code (or a module function it calls)
    names, and those among its parameters; all of the module's if it names none."""
    module = _module(item)
    if module is None:
        return list(declared)
    names = set(_named_globals(getattr(item, "function", None), module))
    params = getattr(getattr(item, "callspec", None), "params", {})
    values = [v for v in params.values() if _is_device(v)]
    used = [d for d in declared if d.origin.rsplit(".", 1)[-1] in names or d in values]
    return used or list(declared)


def _matches(selection: Selection, item: TestItem) -> bool:
    assert selection.path is not None
    path = Path(item.path).resolve()
    if selection.kind == "path":
        return path == selection.path or path.is_relative_to(selection.path)
    name = item.nodeid.partition("::")[2]
    want = selection.test
    return path == selection.path and (
        name == want or name.startswith(want + "[") or name.startswith(want + "::")
    )


def devices(
    selections: Sequence[Selection],
    items: Sequence[TestItem],
    declared: dict[str, list[Device]],
) -> list[Device]:
    """The selected devices, in order, each once; RoadtestError for a selection that has
    none. `declared`: each collected module's devices, by module name."""
    chosen: list[Device] = []
    for selection in selections:
        if selection.kind == "device":
            name = selection.text
            found = [
                d
                for group in declared.values()
                for d in group
                if name in (d.compatible, chip_name(d.compatible))
            ]
            if not found:
                raise RoadtestError(
                    f"no driver test declares a device {shown_id(name)} (a compatible such as "
                    "ti,opt3001, or its part after the comma); "
                    "options take their value as --option=VALUE"
                )
        else:
            matched = [i for i in items if _matches(selection, i)]
            if not matched:
                what = "test" if selection.kind == "test" else "test module"
                raise RoadtestError(f"{shown_id(selection.text)}: no {what} there")
            found = []
            for item in matched:
                module = _module(item)
                group = declared.get(module.__name__, []) if module is not None else []
                found += test_devices(item, group) if selection.kind == "test" else group
            if not found:
                raise RoadtestError(
                    f"{shown_id(selection.text)} declares no devices (an I2CDevice or "
                    "PlatformDevice at its module's level)"
                )
        for device in found:  # each once: a module's tests all give its devices
            if device not in chosen:
                chosen.append(device)
    return chosen


def collect_paths(selections: Iterable[Selection], drivers: Path) -> list[str]:
    """What pytest must collect for the selections: their files, and the driver tests when
    a device is named."""
    paths = [str(s.path) for s in selections if s.path is not None]
    if any(s.kind == "device" for s in selections):
        paths.append(str(drivers))
    return list(dict.fromkeys(paths))
