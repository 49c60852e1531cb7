"""`roadtest sweep --list`: the inventory of a kernel tree's I2C and SPI drivers, one a
line, and what each builds for. The inventory takes two olddefconfig runs a target: it is cached in
the roadtest cache, keyed by the tree's path and the mtimes and sizes of what it read."""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from roadtest.arch import Target
from roadtest.arch.um import UM
from roadtest.arch.x86_64 import X86_64
from roadtest.atomic import write_atomically
from roadtest.checkout import repo_root
from roadtest.errors import RoadtestError, UsageError
from roadtest.kernel.runner import Runner
from roadtest.sweep import kconfig
from roadtest.sweep.inventory import (
    BUSES,
    SUBSYSTEMS,
    Driver,
    scan,
    scanned_paths,
    with_module_aliases,
)
from roadtest.sweep.outcome import DriverResult
from roadtest.sweep.results import parse_shard, shard

if TYPE_CHECKING:
    from roadtest.kernel import Kernel
    from roadtest.sweep.triage import Triage

TARGETS: tuple[Target, ...] = (UM, X86_64)
# Bump when what the inventory computes changes: older cache files are then recomputed.
CACHE_VERSION = 4  # 2: SPI drivers, a bus per driver; 3: their driver names; 4: port I/O


# The parser class of the command's subparsers (roadtest.cli's own, whose errors are usage
# errors): _SubParsersAction is invariant in it.
Parser = TypeVar("Parser", bound=argparse.ArgumentParser)


def register(sub: argparse._SubParsersAction[Parser]) -> None:
    """Add the `sweep` verb to the `roadtest` command's subparsers."""
    sweep = sub.add_parser(
        "sweep",
        help="bind every I2C and SPI driver of the kernel's device subsystems against an "
        "invented device, and report what broke",
        description="Each I2C and SPI driver of drivers/{" + ",".join(SUBSYSTEMS) + "} (or "
        "those named) is built into the sweep kernel (the sanitizer kernel with every driver as a "
        "module), bound in a guest against a register file that no model describes (its "
        "answers drawn by Hypothesis, favouring the constants its source compares with), "
        "exercised through sysfs and its character devices, unbound and removed. A KASAN, "
        "UBSAN or lockdep report, a WARN, BUG or oops, a hang, a sleep in atomic context, "
        "a leak or a panic is a finding. Results go to a database as each driver finishes: "
        "a killed sweep resumes where it stopped. `roadtest sweep merge OUT DB...` joins "
        "the databases of shards.",
    )
    sweep.add_argument(
        "drivers",
        nargs="*",
        metavar="DRIVER",
        help="a subsystem (iio), a module (rtc-pcf8563) or a driver's source file or "
        "directory (drivers/iio/light/ltr501.c), on each bus its file has a driver of; or "
        "a source with one bus (drivers/rtc/rtc-pcf2127.c@spi); default: all of them",
    )
    sweep.add_argument(
        "--bus",
        action="append",
        choices=BUSES,
        default=[],
        help="only the drivers on this bus (i2c or spi; give it twice for both, the default)",
    )
    sweep.add_argument(
        "--list",
        action="store_true",
        help="print the drivers, one a line: module, subsystem, bus, the machines it builds "
        "for (or - and why not); then the counts per subsystem and bus",
    )
    sweep.add_argument(
        "--tree",
        metavar="DIR",
        help="your kernel tree, read where it is (default: the source of the kernel "
        "`roadtest build` built); or a kernel source tarball, or an installed Debian "
        "package's name (linux-source-6.1), unpacked once in the cache",
    )
    sweep.add_argument(
        "--kernel",
        metavar="DIR",
        help="a sweep kernel built before (its cache entry, as `roadtest build` names it): "
        "swept as it is, whatever the tree and patches are now",
    )
    sweep.add_argument(
        "--results",
        metavar="FILE",
        help="the results database (default: one in the roadtest cache per tree and sweep "
        "kernel build, so a rebuilt driver is swept again)",
    )
    sweep.add_argument(
        "--again", action="store_true", help="sweep the drivers the database holds already too"
    )
    sweep.add_argument(
        "--shard",
        metavar="K/N",
        help="take the K-th of N shards of the drivers (by a hash of each source: stable "
        "when drivers come and go), for a matrix of machines; join them with `sweep merge`",
    )
    sweep.add_argument(
        "--examples",
        type=int,
        default=8,
        metavar="N",
        help="devices (register plans) a driver is bound against at most until its probe "
        "gets past (default: 8)",
    )
    sweep.add_argument(
        "--no-mined",
        action="store_true",
        help="draw register plans without the constants mined from the driver's source "
        "(the baseline that the probe rate figures compare against)",
    )
    sweep.add_argument(
        "--no-feedback",
        action="store_true",
        help="no KCOV feedback: the comparisons a probe makes do not shape the next device",
    )
    sweep.add_argument(
        "-n",
        "--workers",
        type=int,
        default=1,
        metavar="N",
        help="guests at once, each a process with its share of the drivers (default: 1)",
    )
    sweep.add_argument("--html", metavar="FILE", help="also write the HTML report there")
    sweep.add_argument(
        "--kcidb", metavar="FILE", help="also write the results as KCIDB JSON (validated)"
    )
    sweep.add_argument(
        "--triage",
        metavar="FILE",
        help="the triage file the reports take each finding's verdict from (fixed by a "
        "patch, open, artefact, expected; default: roadtest's own, "
        "kernel-patches/sweep-triage.toml)",
    )
    sweep.add_argument(
        "--reproduce",
        metavar="FINDING",
        help="run a finding's reproducer again (its id, as the summary shows it)",
    )
    sweep.set_defaults(func=sweep_command)


def sweep_command(args: argparse.Namespace) -> int:
    triage = _triage(args.triage)  # a bad file is a usage error before anything runs
    if args.drivers[:1] == ["merge"]:
        return _merge(args.drivers[1:], args, triage)
    if args.examples < 1 or args.workers < 1:
        raise UsageError("sweep: --examples and --workers take a number of 1 or more")
    if args.shard is not None:
        parse_shard(args.shard)
    if args.list:
        tree, modules = _tree(args.tree)
        drivers = load_inventory(tree, cache_dir=_cache_dir(), repo_root=repo_root(), progress=_say)
        if modules is not None:
            drivers = [_with_module(d, modules) for d in drivers]
        from roadtest.sweep.campaign import select

        for line in listing(select(drivers, args.drivers, args.bus)):
            print(line)
        return 0
    return _sweep(args, triage)


def _merge(paths: Sequence[str], args: argparse.Namespace, triage: Triage) -> int:
    """`sweep merge OUT DB...`: the shards' databases joined into OUT, and the reports
    (--html, --kcidb) of the whole; nothing is built or swept."""
    from roadtest.sweep.results import ResultsDB, merge

    if len(paths) < 2:
        raise UsageError(
            "sweep merge: OUT and at least one shard's database: sweep merge OUT DB..."
        )
    out, *sources = (Path(p) for p in paths)
    for source in sources:
        if not source.is_file():
            raise UsageError(f"sweep merge: {source}: no such file")
    count = merge(sources, out)
    _say(f"sweep merge: {count} drivers from {len(sources)} databases in {out}")
    with ResultsDB.existing(out) as db:
        _report(db.results(), args, db.tree, db.kernel, triage)
    return 0


def _report(
    found: Sequence[DriverResult],
    args: argparse.Namespace,
    tree: str,
    kernel: str,
    triage: Triage,
) -> None:
    """The summary table, and the HTML and KCIDB reports the options ask for."""
    from roadtest.sweep import report

    for line in report.summary(found, triage):
        print(line)
    if args.html:
        report.write_html(found, Path(args.html), title=f"roadtest sweep of {tree}", triage=triage)
    if args.kcidb:
        _write_kcidb(found, Path(args.kcidb), tree, kernel, triage)


def _triage(path: str | None) -> Triage:
    """The triage file's verdicts: --triage's, else roadtest's own."""
    from roadtest.sweep.triage import TRIAGE_FILE, Triage, TriageError

    if path is None:
        return Triage.load(repo_root() / "kernel-patches" / TRIAGE_FILE)
    try:
        return Triage.load(Path(path))
    except TriageError as err:
        raise UsageError(str(err)) from None


def _sweep(args: argparse.Namespace, triage: Triage) -> int:
    from roadtest.kernel.build import kernel_in, tree_kernel
    from roadtest.kernel.tree import open_tree, tree_argument
    from roadtest.kernel.variants import MAIN, SWEEP
    from roadtest.sweep import campaign
    from roadtest.sweep.kernel import drivers_fragment
    from roadtest.sweep.results import ResultsDB

    root = repo_root()
    cache = _cache_dir()
    user = open_tree(tree_argument(args.tree), UM) if args.tree is not None else None
    prebuilt = kernel_in(Path(args.kernel), UM) if args.kernel is not None else None
    if user is not None:
        tree = user.path
    else:
        tree = (prebuilt or MAIN.ensure(root, UM)).source_dir.resolve()
    drivers = load_inventory(tree, cache_dir=cache, repo_root=root, progress=_say)
    selected = campaign.select(drivers, args.drivers, args.bus)

    def sweep_kernel(target: Target) -> Kernel:
        fragment = drivers_fragment(tree, drivers, target, root, cache, _say)
        if user is None:
            return SWEEP.ensure(root, target, generated=[fragment])
        variant = SWEEP.build_variant(root, target, generated=[fragment])
        return tree_kernel(root, open_tree(user.path, target), variant=variant, target=target)

    kernel = prebuilt if prebuilt is not None else sweep_kernel(UM)
    built = kernel.image.stat().st_mtime_ns
    kernel_name = f"{kernel.release} ({kernel.image}, built {built})"
    results = Path(args.results) if args.results else _results_file(cache, tree, kernel_name)
    if args.reproduce is not None:
        return _reproduce(args.reproduce, results, tree, kernel, drivers)
    todo = (
        selected
        if args.again
        else campaign.pending(selected, results, args.shard, tree=str(tree), kernel=kernel_name)
    )
    if args.again and args.shard:
        todo = shard(todo, args.shard, key=lambda d: d.key)
    _say(f"sweep: {len(todo)} of {len(selected)} drivers to sweep (results: {results})")
    # An I2C driver UML cannot build or run goes to the x86_64 machine, on a sweep kernel of its
    # own. An SPI one stays: QEMU's machine carries no virtio-spi device (machine/qemu.py),
    # so it is not built where it could be swept.
    elsewhere = [
        d
        for d in todo
        if prebuilt is None
        and d.bus == "i2c"
        and d.builds.get(X86_64.name)
        and not d.builds.get(UM.name)
    ]
    for machine_kernel, share in (
        (kernel, [d for d in todo if d not in elsewhere]),
        (None, elsewhere),
    ):
        if not share:
            continue
        machine_kernel = machine_kernel or sweep_kernel(X86_64)
        job = campaign.Job(
            kernel=machine_kernel,
            plans=tuple(campaign.plans_for(tree, share)),
            results=results,
            tree=str(tree),
            kernel_name=kernel_name,
            workdir=cache / "sweep" / "runs" / f"{os.getpid()}-{machine_kernel.target.name}",
            examples=args.examples,
            mined=not args.no_mined,
            feedback=not args.no_feedback,
            boot_args=SWEEP.boot_args,
            cpu=0,
        )
        campaign.run(job, _say, args.workers)
    with ResultsDB.open(results, tree=str(tree), kernel=kernel_name) as db:
        keys = {d.key for d in selected}
        found = [r for r in db.results() if r.key in keys]
    _report(found, args, str(tree), kernel_name, triage)
    return 1 if any(r.findings for r in found) else 0


def _results_file(cache: Path, tree: Path, kernel_name: str) -> Path:
    key = hashlib.sha256(f"{tree}\n{kernel_name}".encode()).hexdigest()[:16]
    return cache / "sweep" / f"results-{key}.sqlite"


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
    from roadtest.kernel.tree import open_tree, tree_argument

    tree = tree_argument(source)
    if not tree.is_dir():  # a tarball: the tree it holds, unpacked in the cache
        tree = open_tree(tree, UM).path
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
    write_atomically(path, json.dumps(data, indent=1))


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
    """One line a driver, sorted by subsystem, module, then bus: its module, subsystem, bus,
    the machines it builds for (or -), and why not where it does not; then the counts."""
    ordered = sorted(
        drivers, key=lambda d: (d.subsystem, d.module or d.source, d.source, BUSES.index(d.bus))
    )
    columns = [(d.module or d.source, d.subsystem, d.bus, _machines(d)) for d in ordered]
    widths = [max((len(c[i]) for c in columns), default=0) for i in range(4)]
    lines = []
    for driver, cells in zip(ordered, columns, strict=True):
        line = "  ".join(f"{c:<{w}}" for c, w in zip(cells, widths, strict=True))
        lines.append(f"{line}  {driver.reason}" if driver.reason else line.rstrip())
    return [*lines, "", *counts(drivers)]


def counts(drivers: Sequence[Driver]) -> list[str]:
    """A table: per subsystem and in total (and per bus, when there are drivers of more
    than one), the drivers, those that build for each target, and those that build for
    none."""
    targets = list(dict.fromkeys(name for d in drivers for name in d.builds))
    header = ["subsystem", "drivers", *targets, "neither"]
    groups = sorted({d.subsystem for d in drivers})
    rows = [[g, *_counted([d for d in drivers if d.subsystem == g], targets)] for g in groups]
    buses = [b for b in BUSES if any(d.bus == b for d in drivers)]
    if len(buses) > 1:
        rows += [
            [f"{b} total", *_counted([d for d in drivers if d.bus == b], targets)] for b in buses
        ]
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


def _reproduce(
    finding: str, results: Path, tree: Path, kernel: Kernel, drivers: Sequence[Driver]
) -> int:
    """Run a finding's reproducer once more: exit 1 if the same signature comes back (the
    bug is there), 0 if it does not (fixed, or it needs more than its plan)."""
    from roadtest.kernel.variants import SWEEP
    from roadtest.sweep import campaign
    from roadtest.sweep.results import ResultsDB, finding_id
    from roadtest.sweep.runner import Sweeper, plan_of

    if not results.is_file():
        raise UsageError(f"sweep --reproduce: no results database at {results}")
    with ResultsDB.open(results, tree=str(tree), kernel="") as db:
        recorded = {finding_id(r, i): f for r in db.results() for i, f in enumerate(r.findings)}
    if finding not in recorded:
        raise UsageError(f"sweep --reproduce: no finding {finding!r} in {results}")
    wanted = recorded[finding]
    if not wanted.reproducer:
        raise RoadtestError(f"sweep --reproduce: finding {finding} has no reproducer saved")
    key, register_plan = plan_of(wanted.reproducer)
    driver = next((d for d in drivers if d.key == key), None)
    if driver is None:
        raise RoadtestError(f"sweep --reproduce: {key} is not in the tree's inventory now")
    (one,) = campaign.plans_for(tree, [driver])
    workdir = _cache_dir() / "sweep" / "runs" / str(os.getpid())
    with Sweeper(kernel, workdir, [one], boot_args=SWEEP.boot_args) as sweeper:
        found = sweeper.reproduce(one, register_plan)
    again = [f for f in found if f.signature == wanted.signature]
    for f in found:
        print(f"{f.kind}: {f.title}\n  signature: {f.signature}")
    if again:
        _say(f"sweep --reproduce: {finding} reproduced: {wanted.signature}")
        return 1
    _say(f"sweep --reproduce: {finding} did not reproduce ({wanted.signature})")
    return 0


def _write_kcidb(
    results: Sequence[DriverResult], out: Path, tree: str, kernel: str, triage: Triage
) -> None:
    """KCIDB JSON of the results, validated, written atomically. The ids are digests of the
    tree and of the kernel build's description: the same sweep submitted twice is one."""
    from roadtest.sweep.kcidb import kcidb_report, validate

    data = kcidb_report(
        results,
        origin="roadtest",
        checkout_id=f"roadtest:{hashlib.sha256(tree.encode()).hexdigest()[:16]}",
        build_id=f"roadtest:{hashlib.sha256(kernel.encode()).hexdigest()[:16]}",
        tree=tree,
        git_commit=None,
        arch="um",
        config_name="roadtest-sweep",
        triage=triage,
    )
    validate(data)
    write_atomically(out, json.dumps(data, indent=1))
