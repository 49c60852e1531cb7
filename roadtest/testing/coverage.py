"""Driver coverage (`roadtest run --coverage`): which lines and branches of the drivers
the tests loaded were reached.

The guest runs a variant of the kernel built with the kernel's own gcov support
(CONFIG_GCOV_KERNEL, in base.config; Documentation/dev-tools/gcov.rst) in which every
module object counts its arcs, and debugfs shows each object's counts as a .gcda
file under /sys/kernel/debug/gcov/<build dir>/. Built-in code is not instrumented:
UML is a host program, so libc would run the built-in objects' gcov constructors
(__gcov_init) before the kernel exists, and UML faults there (gdb: under
gcov_lock, in lockdep_enabled() or printk_caller_id()). A module's constructors
run when it is loaded, in a running kernel. Before a guest ends, the .gcda files of the
driver modules loaded in it are copied out, next to the .gcno files of the
build; gcovr then merges all of them into a per-file summary, an HTML report
and an lcov file. A guest that crashes takes its counts with it.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Protocol

from roadtest.errors import RoadtestError
from roadtest.kernel import Kernel
from roadtest.testing.modules import ModuleInfo

_DEBUGFS = "/sys/kernel/debug/gcov"


class _Files(Protocol):  # the guest agent, as far as copying out files goes
    def read_file(self, path: str) -> bytes: ...

    def run(self, argv: list[str], timeout: float = ...) -> tuple[int, bytes, bytes]: ...


def objects_of(kernel: Kernel, module: ModuleInfo) -> list[Path]:
    """The module's objects, relative to the build directory (kbuild's `.mod` file)."""
    rel = module.path.relative_to(kernel.modules_dir / "kernel").with_suffix("")
    mod = kernel.build_dir / rel.with_suffix(".mod")
    try:
        names = mod.read_text().split()
    except OSError:
        return []  # not built by this kernel's tree (an out-of-tree module)
    return [Path(name) for name in names]


def start(out: Path) -> None:
    """A run reports its own counts only: forget what an earlier run left in `out`."""
    shutil.rmtree(out / "data", ignore_errors=True)


class Snapshots:
    """Copies of the guests' counters, one directory per guest that ended."""

    def __init__(self, out: Path, kernel: Kernel, worker: str) -> None:
        self.data = out / "data"
        self.kernel = kernel
        self.worker = worker
        self.taken = 0

    def take(self, agent: _Files, modules: Iterable[ModuleInfo]) -> int:
        """Copy the counters of `modules`' objects out of the guest; how many were found."""
        self.taken += 1
        where = self.data / f"{self.worker}-{self.taken}"
        counted = _count_files(agent)
        found = 0
        for module in modules:
            for obj in objects_of(self.kernel, module):
                stem = obj.with_suffix("")
                suffix = f"/{stem}.gcda"
                path = next((p for p in counted if p.endswith(suffix)), None)
                if path is None:
                    continue  # an object gcov does not profile
                target = where / stem.with_suffix(".gcda")
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(agent.read_file(path))
                notes = self.kernel.build_dir / stem.with_suffix(".gcno")  # gcov needs both
                shutil.copyfile(notes, target.with_suffix(".gcno"))
                found += 1
        return found


def _count_files(agent: _Files) -> list[str]:
    """Every .gcda in the guest's debugfs.

    debugfs names a .gcda by the directory its object was compiled in, which is not always
    this build's: the cache starts a variant's build from a copy of another build's tree,
    and kbuild keeps the objects the change did not touch. So objects are found by their
    path relative to the build directory, at the end of the name.
    """
    rc, out, err = agent.run(["find", _DEBUGFS, "-name", "*.gcda"])
    if rc != 0:
        raise RoadtestError(f"coverage: cannot list {_DEBUGFS} in the guest: {err.decode()[:200]}")
    return out.decode().splitlines()


def report(out: Path, kernel: Kernel) -> str:
    """Merge every snapshot under `out` with gcovr: `out`/index.html (per source file,
    with lines), `out`/coverage.lcov, and the per-file summary returned for the terminal."""
    data = out / "data"
    if not any(data.rglob("*.gcda")):
        return "no coverage data: no driver module was loaded in a guest that ended cleanly"
    common = [
        sys.executable, "-m", "gcovr",
        "--root", str(kernel.source_dir),
        "--object-directory", str(kernel.build_dir),
        "--gcov-ignore-errors=no_working_dir_found",
        str(data),
    ]  # fmt: skip
    reports = ["--html-details", str(out / "index.html"), "--lcov", str(out / "coverage.lcov")]
    lines = _gcovr([*common, *reports, "--txt", "-", "--txt-metric", "line"])
    branches = _gcovr([*common, "--txt", "-", "--txt-metric", "branch"])
    return f"{lines}\n{branches}\nreport: {out / 'index.html'} (lcov: {out / 'coverage.lcov'})"


def _gcovr(args: list[str]) -> str:
    done = subprocess.run(args, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        detail = (done.stderr.strip().splitlines() or ["no message"])[-1]
        raise RoadtestError(f"gcovr failed: {detail}")
    return done.stdout.rstrip()
