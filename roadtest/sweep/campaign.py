"""A sweep from start to end: which drivers (the user's selection, a shard of it, less
what the results database holds already), their devices and mined constants, the sweep
kernel, the guests, and the results written as each driver finishes, with a progress
line (done, findings, rate, time left)."""

from __future__ import annotations

import logging
import multiprocessing
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from roadtest.errors import RoadtestError, UsageError
from roadtest.kernel import Kernel
from roadtest.sweep.constants import mine, source_files
from roadtest.sweep.device import SPIShape, spi_shape
from roadtest.sweep.devicetree import Bindings
from roadtest.sweep.inventory import BUSES, SUBSYSTEMS, Driver, strip_comments
from roadtest.sweep.outcome import DriverResult, Stage
from roadtest.sweep.results import ResultsDB, shard
from roadtest.sweep.runner import Plan, Sweeper, plan

log = logging.getLogger("roadtest.sweep")


def select(
    drivers: Sequence[Driver], wanted: Sequence[str], buses: Sequence[str] = ()
) -> list[Driver]:
    """The drivers `wanted` names: a subsystem (iio), a module (rtc-pcf8563, or
    rtc_pcf8563), a source file (drivers/iio/light/ltr501.c) or a directory of them
    (drivers/iio/light), each on every bus its file has a driver of, or a driver's key for
    one bus (drivers/rtc/rtc-pcf2127.c@spi); all of them when `wanted` is empty. Of those,
    the drivers on `buses` only, when it names some. UsageError for a name that matches
    none."""
    for bus in buses:
        if bus not in BUSES:
            raise UsageError(f"sweep: bus {bus!r} is not one of {', '.join(BUSES)}")
    on_bus = [d for d in drivers if not buses or d.bus in buses]
    if not wanted:
        return on_bus
    chosen: set[str] = set()
    for name in wanted:
        key = name.rstrip("/").removeprefix("./")
        found = [
            d
            for d in drivers
            if key in (d.subsystem, d.source, d.key)
            or (d.module and key.replace("_", "-") == d.module.replace("_", "-"))
            or d.source.startswith(key + "/")
        ]
        if not found:
            raise UsageError(
                f"sweep: {name!r} is not a subsystem ({', '.join(SUBSYSTEMS)}), a module or "
                "a driver source of the inventory (roadtest sweep --list shows them)"
            )
        chosen.update(d.key for d in found)
    return [d for d in on_bus if d.key in chosen]


def plans_for(tree: Path, drivers: Sequence[Driver]) -> list[Plan]:
    """Each driver's device, mined constants, and (on SPI) the framing its source suggests."""
    bindings = Bindings.scan(tree)
    return [plan(d, bindings, mine(tree, d.source), _shape(tree, d)) for d in drivers]


def _shape(tree: Path, driver: Driver) -> SPIShape | None:
    if driver.bus != "spi":
        return None
    files = source_files(tree, driver.source)
    # Headers first, as constants.mine joins them: a .c file's own macros win.
    ordered = [f for f in files if f.suffix == ".h"][::-1] + [f for f in files if f.suffix != ".h"]
    return spi_shape("\n".join(strip_comments(f.read_text(errors="replace")) for f in ordered))


@dataclass
class Progress:
    """The progress line: done of total, findings, rate, time left."""

    total: int
    say: Callable[[str], None]
    done: int = 0
    findings: int = 0
    started: float = 0.0

    def __post_init__(self) -> None:
        self.started = time.monotonic()

    def finished(self, result: DriverResult) -> None:
        self.done += 1
        self.findings += len(result.findings)
        elapsed = time.monotonic() - self.started
        rate = self.done / elapsed * 3600 if elapsed > 0 else 0.0
        left = (self.total - self.done) * elapsed / self.done
        mark = f" {len(result.findings)} finding(s)" if result.findings else ""
        self.say(
            f"sweep: {self.done}/{self.total} {result.name}: {result.stage}{mark} | "
            f"{self.findings} findings, {rate:.0f} drivers/h, {_duration(left)} left"
        )


def _duration(seconds: float) -> str:
    seconds = int(seconds)
    if seconds >= 3600:
        return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
    return f"{seconds // 60}m{seconds % 60:02d}s"


@dataclass(frozen=True)
class Job:
    """What a worker process needs: the kernel, the plans, where to write."""

    kernel: Kernel
    plans: tuple[Plan, ...]
    results: Path
    tree: str
    kernel_name: str
    workdir: Path
    examples: int
    mined: bool  # plans favour the constants mined from the driver's source
    feedback: bool  # KCOV's comparisons teach the next plan
    boot_args: tuple[str, ...]
    cpu: int | None


def run(job: Job, say: Callable[[str], None], workers: int = 1) -> None:
    """Sweep the job's plans, `workers` guests at a time (each a process with a share of
    the drivers), recording each driver as it finishes; one progress line for them all."""
    progress = Progress(len(job.plans), say)
    if workers <= 1 or len(job.plans) < 2:
        _work(job, progress.finished)
        return
    context = multiprocessing.get_context("spawn")  # no threads of ours forked
    finished: multiprocessing.Queue[dict[str, object] | None] = context.Queue()
    cpus = os.cpu_count() or 1
    shares = [
        replace(job, plans=job.plans[i::workers], cpu=i % cpus, workdir=job.workdir / f"w{i}")
        for i in range(workers)
    ]
    processes = [context.Process(target=_worker, args=(s, finished)) for s in shares]
    for process in processes:
        process.start()
    running = len(processes)
    while running:
        news = finished.get()
        if news is None:
            running -= 1  # a worker ended (its failure, if any, went to stderr)
        else:
            progress.finished(DriverResult.from_json(news))
    for process in processes:
        process.join()
    failed = [p.exitcode for p in processes if p.exitcode]
    if failed:
        raise RoadtestError(f"sweep: {len(failed)} of {workers} workers failed (see above)")


def _worker(job: Job, finished: multiprocessing.Queue[dict[str, object] | None]) -> None:
    try:
        _work(job, lambda result: finished.put(result.as_json()))
    finally:
        finished.put(None)


def _work(job: Job, finished: Callable[[DriverResult], None]) -> None:
    with (
        ResultsDB.open(job.results, tree=job.tree, kernel=job.kernel_name) as db,
        Sweeper(
            job.kernel,
            job.workdir,
            job.plans,
            examples=job.examples,
            mined=job.mined,
            feedback=job.feedback,
            boot_args=job.boot_args,
            cpu=job.cpu,
        ) as sweeper,
    ):
        for one in job.plans:
            result = _guarded(sweeper, one)
            db.record(result)
            finished(result)
            _record_late(db, sweeper)


def _guarded(sweeper: Sweeper, one: Plan) -> DriverResult:
    """The driver's result, or, when roadtest itself failed on it, a harness error with the
    failure (and a new guest for the next driver): one driver does not end a sweep."""
    try:
        return sweeper.sweep_one(one)
    except Exception as err:  # roadtest's own bug: recorded, and the sweep goes on
        log.exception("sweep: roadtest failed on %s", one.driver.source)
        sweeper.session.detach_all()
        sweeper.session.boot()
        return DriverResult(
            module=one.driver.module or one.driver.source,
            subsystem=one.driver.subsystem,
            source=one.driver.source,
            bus=one.driver.bus,
            machine=sweeper.kernel.target.name,
            device=one.how,
            match=one.match,
            stage=Stage.ERROR,
            detail=f"{type(err).__name__}: {err}",
        )


def _record_late(db: ResultsDB, sweeper: Sweeper) -> None:
    """Add the leaks a later scan found in an earlier driver's module to that driver."""
    late, sweeper.late = sweeper.late, []
    if not late:
        return
    by_module = {r.module.replace("-", "_"): r for r in db.results()}
    for module, finding in late:
        earlier = by_module.get(module)
        if earlier is not None and finding.signature not in {f.signature for f in earlier.findings}:
            earlier = replace(earlier, findings=(*earlier.findings, finding))
            by_module[module] = earlier
            db.record(earlier)


def pending(
    drivers: Sequence[Driver], results: Path, spec: str | None, *, tree: str, kernel: str
) -> list[Driver]:
    """The drivers of this shard that the results database does not hold yet."""
    mine_ = shard(drivers, spec, key=lambda d: d.key) if spec else list(drivers)
    with ResultsDB.open(results, tree=tree, kernel=kernel) as db:
        done = db.done()
    return [d for d in mine_ if (d.source, d.bus) not in done]
