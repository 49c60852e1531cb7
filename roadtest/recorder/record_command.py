"""`roadtest record`: run tests with live models and write their golden traces.

Traces go to a staging directory next to the output first and are moved into
place only when the whole run passed, so an interrupted or failing record
leaves the previous golden traces as they were.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path


def _shown(path: Path) -> str:
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def record(pytest_args: list[str], out: Path, run_pytest: Callable[[list[str]], int]) -> int:
    out.mkdir(parents=True, exist_ok=True)
    staging = out / f".record-{os.getpid()}"
    shutil.rmtree(staging, ignore_errors=True)
    try:
        status = run_pytest([f"--roadtest-record={staging}", *pytest_args])
        traces = sorted(staging.rglob("*.rtrace")) if staging.exists() else []
        if status != 0:
            print(f"roadtest record: the tests did not pass; the traces in {out} are unchanged")
            return status
        if not traces:
            print("roadtest record: no test used an I2C device; nothing was recorded")
            return 1
        for trace in traces:
            target = out / trace.relative_to(staging)
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(trace, target)
            print(f"recorded {_shown(target)}")
        return 0
    finally:
        shutil.rmtree(staging, ignore_errors=True)
