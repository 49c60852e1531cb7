"""`roadtest replay --golden DIR [selection]`: DIR's tests, with its traces in place of models."""

from __future__ import annotations

import json
import re
import tempfile
from collections.abc import Callable
from pathlib import Path

from roadtest.errors import RoadtestError
from roadtest.recorder.format import read_trace


def _test_exists(root: Path, test_id: str) -> bool:
    file, _, name = test_id.partition("::")
    path = root / file
    if not path.is_file():
        return False
    function = name.split("[", 1)[0].rsplit("::", 1)[-1]
    return re.search(rf"^\s*def {re.escape(function)}\(", path.read_text(), re.M) is not None


def replay(
    golden: Path, selection: list[str], root: Path, run_pytest: Callable[[list[str]], int]
) -> int:
    if not golden.is_dir():
        raise RoadtestError(f"--golden {golden}: no such directory")
    traces = sorted(golden.rglob("*.rtrace"))
    if not traces:
        raise RoadtestError(f"--golden {golden}: no traces (*.rtrace) there")
    tests: dict[Path, str] = {}
    for path in traces:
        header, _ = read_trace(path)
        if not _test_exists(root, header.test):
            raise RoadtestError(f"{path}: its test {header.test} no longer exists")
        tests[path] = header.test
    wanted = [
        str(Path(s).resolve().relative_to(root)) if Path(s).exists() else s for s in selection
    ]
    if wanted:
        tests = {p: t for p, t in tests.items() if any(t.startswith(w) for w in wanted)}
        if not tests:
            raise RoadtestError(f"no trace under {golden} belongs to {' '.join(selection)}")
    node_ids = sorted(
        {str(root / t.split("::", 1)[0]) + "::" + t.split("::", 1)[1] for t in tests.values()}
    )
    with tempfile.TemporaryDirectory(prefix="roadtest-replay-") as results:
        status = run_pytest(
            [f"--roadtest-replay={golden}", f"--roadtest-replay-results={results}", *node_ids]
        )
        outcomes: dict[str, dict[str, object]] = {}
        for result_file in Path(results).glob("*.jsonl"):
            for line in result_file.read_text().splitlines():
                entry = json.loads(line)
                outcomes[str(entry["path"])] = entry
    failed = 0
    print(f"replay of {golden}:")
    for path in tests:
        entry = outcomes.get(str(path))
        if entry is None:
            failed += 1
            print(f"  NOT PLAYED {path}: its test did not attach the device")
        elif entry["failure"]:
            failed += 1
            print(f"  DIVERGED   {path}: {entry['failure']}")
        else:
            tolerated = entry["tolerated"]
            extra = f" ({tolerated} repeated reads tolerated)" if tolerated else ""
            print(f"  ok         {path}: {entry['transfers']} transfers{extra}")
    print(f"{len(tests) - failed} of {len(tests)} traces replayed without divergence")
    if failed:
        return 1
    return status
