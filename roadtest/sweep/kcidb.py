"""A sweep as KCIDB data (the kernel CI database's JSON, schema v5.3 of the kcidb-io
library): the checkout of the tree, one build (the sweep's kernel), a test per driver, and
an issue per distinct finding with an incident per driver that had it. An issue's culprit
is what the triage file (triage.py) says of its incidents: the code for a driver bug (fixed
or open), the harness for an artefact of roadtest's, neither when the kernel did what it
should; an issue no driver's triage names has none.

A driver's test status, from KCIDB's meanings:

  any finding           FAIL   the kernel reported a bug in the driver
  exercised             PASS   bound, exercised, unbound and removed without a report
  bound                 ERROR  probe succeeded but exercising did not finish: unknown
  probe failed          ERROR  the invented device did not convince its probe: the test
                               (our device) fell short, the driver's state is unknown
  not loaded            MISS   its module would not load: the harness's kernel, not the test
  no device             SKIP   nothing to instantiate it with: not applicable
  not built             SKIP   not in this kernel: not applicable
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from typing import Any

# Untyped, unless types-jsonschema is installed: either way mypy is content.
import jsonschema  # type: ignore[import-untyped, unused-ignore]
import kcidb_io  # type: ignore[import-untyped, unused-ignore]

from roadtest.errors import RoadtestError
from roadtest.sweep.outcome import DriverResult, Stage
from roadtest.sweep.triage import DRIVER_BUGS, Triage, Verdict

# The schema version this module writes; later kcidb-io releases validate it too (a
# minor version only adds optional fields).
SCHEMA = {"major": 5, "minor": 3}

# log_excerpt's maxLength in the schema.
_EXCERPT = 16384

_STATUS = {
    Stage.EXERCISED: "PASS",
    Stage.BOUND: "ERROR",
    Stage.PROBE_FAILED: "ERROR",
    Stage.NOT_LOADED: "MISS",
    Stage.ERROR: "MISS",  # roadtest's failure, not the driver's
    Stage.NO_DEVICE: "SKIP",
    Stage.NOT_BUILT: "SKIP",
}


def status(result: DriverResult) -> str:
    """A driver's KCIDB test status (the table in the module's docstring)."""
    return "FAIL" if result.findings else _STATUS[result.stage]


def test_path(result: DriverResult) -> str:
    """roadtest.sweep.<subsystem>.<bus>.<module>, with what a KCIDB path may not hold (a dot
    of a source path, a slash) as '_'. The bus tells a file's I2C and SPI drivers apart."""
    parts = ("roadtest", "sweep", result.subsystem, result.bus, result.module)
    return ".".join(re.sub(r"[^A-Za-z0-9_-]", "_", p) or "_" for p in parts)


def _prefixed(origin: str, object_id: str) -> str:
    return object_id if object_id.startswith(f"{origin}:") else f"{origin}:{object_id}"


def issue_id(origin: str, signature: str) -> str:
    """A finding's issue: the same bug found by another sweep, of another tree, is the same
    issue."""
    return f"{origin}:sweep-{hashlib.sha256(signature.encode()).hexdigest()[:16]}"


def kcidb_report(
    results: Sequence[DriverResult],
    *,
    origin: str,
    checkout_id: str,
    build_id: str,
    tree: str,
    git_commit: str | None,
    arch: str,
    config_name: str,
    triage: Triage | None = None,
) -> dict[str, Any]:
    """The sweep's KCIDB data. `checkout_id` and `build_id` are given with their origin's
    "origin:" prefix or without (then it is added); `git_commit` is the checked out
    commit's full hash, if the tree is a git checkout."""
    triage = triage or Triage()
    checkout = {
        "id": _prefixed(origin, checkout_id),
        "origin": origin,
        "tree_name": tree,
        "valid": True,
    }
    if git_commit is not None:
        checkout["git_commit_hash"] = git_commit
    build = {
        "id": _prefixed(origin, build_id),
        "checkout_id": checkout["id"],
        "origin": origin,
        "architecture": arch,
        "config_name": config_name,
        "status": "PASS",  # the sweep ran on it: it built
    }
    tests: list[dict[str, Any]] = []
    issues: dict[str, dict[str, Any]] = {}
    incidents: list[dict[str, Any]] = []
    verdicts: dict[str, set[Verdict]] = {}  # by issue id
    for result in results:
        test_id = f"{build['id']}:{result.key}"
        test: dict[str, Any] = {
            "id": test_id,
            "build_id": build["id"],
            "origin": origin,
            "path": test_path(result),
            "status": status(result),
            "comment": f"{result.name}: {result.stage.value}"
            + (f": {result.detail}" if result.detail else ""),
            "duration": result.seconds,
            "misc": {
                "source": result.source,
                "bus": result.bus,
                "stage": result.stage.value,
                "device": result.device,
                "match": result.match,
                "examples": result.examples,
                "attributes_read": result.attributes_read,
                "attributes_written": result.attributes_written,
                "coverage": result.coverage,
            },
        }
        if result.machine:
            test["environment"] = {"comment": result.machine}
        if result.findings:
            test["log_excerpt"] = result.findings[0].report[:_EXCERPT]
        tests.append(test)
        for index, finding in enumerate(result.findings, 1):
            issue = issues.setdefault(
                finding.signature,
                {
                    "id": issue_id(origin, finding.signature),
                    "version": 1,
                    "origin": origin,
                    "comment": finding.signature,
                    "misc": {"kind": finding.kind.value},
                },
            )
            entry = triage.of(result, finding)
            verdicts.setdefault(issue["id"], set()).add(entry.verdict)
            incidents.append(
                {
                    "id": f"{test_id}:{index}",
                    "origin": origin,
                    "issue_id": issue["id"],
                    "issue_version": issue["version"],
                    "build_id": build["id"],
                    "test_id": test_id,
                    "present": True,
                    "comment": f"{finding.title} ({entry.label()})",
                }
            )
    for issue in issues.values():
        culprit = _culprit(verdicts[issue["id"]])
        if culprit is not None:
            issue["culprit"] = culprit
    return {
        "version": dict(SCHEMA),
        "checkouts": [checkout],
        "builds": [build],
        "tests": tests,
        "issues": list(issues.values()),
        "incidents": incidents,
    }


def _culprit(verdicts: set[Verdict]) -> dict[str, bool] | None:
    """The issue's culprit from its incidents' verdicts; None if none was triaged."""
    known = verdicts - {Verdict.NEW}
    if not known:
        return None
    return {
        "code": bool(known & set(DRIVER_BUGS)),
        "tool": False,
        "harness": Verdict.ARTEFACT in known,
    }


def validate(data: dict[str, Any]) -> None:
    """Raise RoadtestError, saying where and why, unless `data` is valid KCIDB data for the
    installed kcidb-io (of its latest schema, or an earlier one it still accepts)."""
    try:
        kcidb_io.schema.LATEST.validate(data)
    except jsonschema.exceptions.ValidationError as err:
        where = "/".join(str(p) for p in err.absolute_path) or "the top level"
        raise RoadtestError(f"not valid KCIDB data at {where}: {err.message}") from err
