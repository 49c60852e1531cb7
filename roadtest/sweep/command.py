"""`roadtest sweep --list`: the inventory of a kernel tree's I2C drivers, one a line, and
what each builds for. The inventory takes two olddefconfig runs a target: it is cached in
the roadtest cache, keyed by the tree's path and the mtimes and sizes of what it read."""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TypeVar

from roadtest.arch import Target
from roadtest.arch.um import UM
from roadtest.arch.x86_64 import X86_64
from roadtest.checkout import repo_root
from roadtest.errors import RoadtestError, UsageError
from roadtest.kernel.runner import Runner
from roadtest.sweep import kconfig
from roadtest.sweep.inventory import SUBSYSTEMS, Driver, scan, scanned_paths, with_module_aliases

TARGETS: tuple[Target, ...] = (UM, X86_64)
# Bump when what the inventory computes changes: older cache files are then recomputed.
CACHE_VERSION = 1


# The parser class of the command's subparsers (roadtest.cli's own, whose errors are usage
# errors): _SubParsersAction is invariant in it.
Parser = TypeVar("Parser", bound=argparse.ArgumentParser)


def register(sub: argparse._SubParsersAction[Parser]) -> None:
    """Add the `sweep` verb to the `roadtest` command's subparsers."""
    sweep = sub.add_parser(
        "sweep",
        help="every I2C driver of the kernel's device subsystems (for now: --list)",
        description="The I2C drivers of drivers/{" + ",".join(SUBSYSTEMS) + "} in a kernel "
        "tree: each .c file that defines a struct i2c_driver, its module, its Kconfig "
        "symbol, and the machines kconfig lets it be built for ("
        + ", ".join(t.name for t in TARGETS)
        + "), or why not. Computed once per tree (a few olddefconfig runs), then cached.",
    )
    sweep.add_argument(
        "--list",
        action="store_true",
        help="print the drivers, one a line: module, subsystem, the machines it builds for "
        "(or - and why not); then the counts per subsystem",
    )
    sweep.add_argument(
        "--tree",
        metavar="DIR",
        help="your kernel tree, read where it is (default: the source of the kernel "
        "`roadtest build` built)",
    )
    sweep.set_defaults(func=sweep_command)


def sweep_command(args: argparse.Namespace) -> int:
    if not args.list:
        raise UsageError("sweep: only --list is there yet (roadtest sweep --list)")
    tree, modules = _tree(args.tree)
    drivers = load_inventory(tree, cache_dir=_cache_dir(), repo_root=repo_root(), progress=_say)
    if modules is not None:
        drivers = [_with_module(d, modules) for d in drivers]
    for line in listing(drivers):
        print(line)
    return 0


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _cache_dir() -> Path:
    from roadtest.kernel import default_cache_dir

    return default_cache_dir()


def _tree(source: str | None) -> tuple[Path, Path | None]:
    """The kernel tree, and the modules directory of the main kernel built from it (its
    modules' aliases complete what the sources say), if there is one."""
    from roadtest.kernel import cached_kernel

    kernel = cached_kernel(repo_root())
    if source is None:
        if kernel is None:
            raise RoadtestError(
                "sweep: no kernel built yet: run `roadtest build` (or name a tree: --tree DIR)"
            )
        return kernel.source_dir.resolve(), kernel.modules_dir
    tree = Path(source).expanduser()
    if not tree.is_dir():
        raise UsageError(f"--tree {source}: no such directory")
    tree = tree.resolve()
    same = kernel is not None and kernel.source_dir.resolve() == tree
    return tree, kernel.modules_dir if same and kernel is not None else None


def _with_module(driver: Driver, modules: Path) -> Driver:
    from roadtest.kernel.modinfo import read_modinfo

    built = modules / "kernel" / driver.module_path
    if not driver.module_path or not built.is_file():
        return driver
    return with_module_aliases(driver, read_modinfo(built))


# --- the cache --------------------------------------------------------------------------


def _stats(paths: Iterable[Path]) -> dict[str, list[int]]:
    stats: dict[str, list[int]] = {}
    for path in paths:
        try:
            st = path.stat()
        except OSError:
            stats[str(path)] = []  # gone: a different key from any file there
            continue
        stats[str(path)] = [st.st_mtime_ns, st.st_size]
    return stats


def cache_file(cache_dir: Path, tree: Path) -> Path:
    name = hashlib.sha256(str(tree).encode()).hexdigest()[:16]
    return cache_dir / "sweep" / f"inventory-{name}.json"


def _cached(path: Path, tree: Path) -> list[Driver] | None:
    """The drivers of a cache file whose inputs are all as they were, else None."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if data.get("version") != CACHE_VERSION or data.get("tree") != str(tree):
        return None
    inputs = data.get("inputs", {})
    if _stats(Path(p) for p in inputs) != inputs:
        return None
    return [Driver.from_json(d) for d in data["drivers"]]


def _store(path: Path, tree: Path, inputs: Sequence[Path], drivers: Sequence[Driver]) -> None:
    """Write the cache file atomically: a reader sees the old one or the whole new one."""
    data = {
        "version": CACHE_VERSION,
        "tree": str(tree),
        "targets": [t.name for t in TARGETS],
        "inputs": _stats(inputs),
        "drivers": [d.as_json() for d in drivers],
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(data, f, indent=1)
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


def load_inventory(
    tree: Path,
    *,
    cache_dir: Path,
    repo_root: Path,
    progress: Callable[[str], None],
    targets: Sequence[Target] = TARGETS,
) -> list[Driver]:
    """The inventory of `tree`, from the cache if nothing it read has changed since."""
    path = cache_file(cache_dir, tree)
    cached = _cached(path, tree)
    if cached is not None:
        return cached
    started = time.monotonic()
    # Stat the inputs before reading them: a change while we compute makes the key stale.
    inputs = [*scanned_paths(tree), *kconfig.config_files(tree, targets, repo_root)]
    stats_before = _stats(inputs)
    progress(f"sweep: scanning {tree}/drivers")
    found = scan(tree)
    log = path.parent / "kconfig.log"
    log.unlink(missing_ok=True)
    runner = Runner(log, progress)
    drivers, kconfig_files = kconfig.buildability(tree, found, targets, repo_root, runner, progress)
    if _stats(inputs) == stats_before:
        _store(path, tree, [*inputs, *kconfig_files], drivers)
    progress(f"sweep: inventory computed in {time.monotonic() - started:.0f} s (log: {log})")
    return drivers


# --- the listing ------------------------------------------------------------------------


def _machines(driver: Driver) -> str:
    return " ".join(name for name, ok in driver.builds.items() if ok) or "-"


def listing(drivers: Sequence[Driver]) -> list[str]:
    """One line a driver, sorted by subsystem then module: its module, subsystem, the
    machines it builds for (or -), and why not where it does not; then the counts."""
    ordered = sorted(drivers, key=lambda d: (d.subsystem, d.module or d.source, d.source))
    columns = [(d.module or d.source, d.subsystem, _machines(d)) for d in ordered]
    widths = [max((len(c[i]) for c in columns), default=0) for i in range(3)]
    lines = []
    for driver, cells in zip(ordered, columns, strict=True):
        line = "  ".join(f"{c:<{w}}" for c, w in zip(cells, widths, strict=True))
        lines.append(f"{line}  {driver.reason}" if driver.reason else line.rstrip())
    return [*lines, "", *counts(drivers)]


def counts(drivers: Sequence[Driver]) -> list[str]:
    """A table: per subsystem and in total, the drivers, those that build for each target,
    and those that build for none."""
    targets = list(dict.fromkeys(name for d in drivers for name in d.builds))
    header = ["subsystem", "drivers", *targets, "neither"]
    groups = sorted({d.subsystem for d in drivers})
    rows = [[g, *_counted([d for d in drivers if d.subsystem == g], targets)] for g in groups]
    rows.append(["total", *_counted(drivers, targets)])
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    return [
        "  ".join(
            f"{cell:<{w}}" if i == 0 else f"{cell:>{w}}"
            for i, (cell, w) in enumerate(zip(row, widths, strict=True))
        ).rstrip()
        for row in [header, *rows]
    ]


def _counted(drivers: Sequence[Driver], targets: Sequence[str]) -> list[str]:
    per_target = [sum(1 for d in drivers if d.builds.get(t)) for t in targets]
    neither = sum(1 for d in drivers if not any(d.builds.values()))
    return [str(len(drivers)), *map(str, per_target), str(neither)]
