"""The triage file: what became of each finding, read by the sweep's reports. Its form's
errors are one line naming the file; roadtest's own file names patches that exist; the
summary, the HTML page and the KCIDB issues say each finding's verdict. No guest."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from roadtest.checkout import repo_root
from roadtest.sweep.kcidb import kcidb_report, validate
from roadtest.sweep.outcome import DriverResult, Finding, Kind, Stage
from roadtest.sweep.report import render_html, summary
from roadtest.sweep.results import ResultsDB
from roadtest.sweep.triage import (
    TRIAGE_FILE,
    Triage,
    TriageError,
    Verdict,
    missing_patches,
)

PATCHES = repo_root() / "kernel-patches"

UAF = Finding(Kind.KASAN, "kasan: slab-use-after-free in foo_read", "BUG: KASAN", "report\n")
WARN = Finding(Kind.WARNING, "warning: _outb in bar_detect", "WARNING: _outb", "report\n")
HANG = Finding(Kind.HANG, "hang: blocked task in baz_wait", "INFO: task blocked", "report\n")


def result(module: str, *findings: Finding) -> DriverResult:
    return DriverResult(
        module=module,
        subsystem="hwmon",
        source=f"drivers/hwmon/{module}.c",
        machine="um",
        device="example",
        match=f"acme,{module}",
        stage=Stage.EXERCISED,
        findings=findings,
    )


RESULTS = [result("foo", UAF), result("bar", WARN), result("baz", HANG), result("qux", UAF)]

TRIAGE = """
[[finding]]
driver = "drivers/hwmon/foo.c"
signature = "kasan: slab-use-after-free in foo_read"
verdict = "fixed"
reason = "foo_read reads a buffer freed at unbind."
patch = "hwmon/0009-hwmon-foo-Keep-the-buffer.patch"

[[finding]]
driver = "drivers/hwmon/bar.c"
signature = "warning: _outb in bar_detect"
verdict = "artefact"
reason = "UML has no ISA port I/O."

[[finding]]
driver = "drivers/hwmon/baz.c"
signature = "hang: blocked task in baz_wait"
verdict = "expected"
reason = "The chip never answers; the wait is the datasheet's."
"""


def load(tmp_path: Path, text: str) -> Triage:
    path = tmp_path / "triage.toml"
    path.write_text(text)
    return Triage.load(path)


def test_each_finding_gets_its_drivers_verdict_and_an_unnamed_one_is_new(tmp_path: Path) -> None:
    triage = load(tmp_path, TRIAGE)
    assert triage.of(RESULTS[0], UAF).label() == "fixed by hwmon/0009"
    assert triage.of(RESULTS[1], WARN).verdict is Verdict.ARTEFACT
    assert triage.of(RESULTS[2], HANG).verdict is Verdict.EXPECTED
    # the same signature in another driver is another finding: not triaged
    assert triage.of(RESULTS[3], UAF).verdict is Verdict.NEW
    assert triage.counts(RESULTS) == {
        Verdict.FIXED: 1,
        Verdict.ARTEFACT: 1,
        Verdict.EXPECTED: 1,
        Verdict.NEW: 1,
    }


def test_the_summary_says_each_drivers_verdict(tmp_path: Path) -> None:
    lines = summary(RESULTS, load(tmp_path, TRIAGE))
    uaf = next(line for line in lines if UAF.signature in line)
    assert "foo (i2c): fixed by hwmon/0009" in uaf and "qux (i2c): new" in uaf
    assert lines[-1] == "triage: 1 fixed, 1 artefact, 1 expected, 1 new"


def test_the_page_gives_the_verdict_and_its_reason(tmp_path: Path) -> None:
    page = render_html(RESULTS, title="sweep", triage=load(tmp_path, TRIAGE))
    assert "UML has no ISA port I/O." in page
    assert "<strong>expected</strong>" in page
    assert "<strong>new</strong>: not triaged" in page


def test_kcidb_culprits_follow_the_verdicts(tmp_path: Path) -> None:
    data = kcidb_report(
        RESULTS,
        origin="roadtest",
        checkout_id="c",
        build_id="b",
        tree="t",
        git_commit=None,
        arch="um",
        config_name="sweep",
        triage=load(tmp_path, TRIAGE),
    )
    validate(data)
    issues = {i["comment"]: i for i in data["issues"]}
    # KCIDB's culprit: "code" a bug in the code under test, "harness" in the test harness
    assert issues[UAF.signature]["culprit"] == {"code": True, "tool": False, "harness": False}
    assert issues[WARN.signature]["culprit"] == {"code": False, "tool": False, "harness": True}
    assert issues[HANG.signature]["culprit"] == {"code": False, "tool": False, "harness": False}
    untriaged = kcidb_report(
        [RESULTS[3]],
        origin="roadtest",
        checkout_id="c",
        build_id="b",
        tree="t",
        git_commit=None,
        arch="um",
        config_name="sweep",
    )
    validate(untriaged)
    assert "culprit" not in untriaged["issues"][0]  # nobody has said yet


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("[[finding]]\ndriver = 'x'\n", "'signature' must be a non-empty string"),
        (TRIAGE.replace('"artefact"', '"harmless"'), "verdict 'harmless' is not one of"),
        (TRIAGE.replace('verdict = "artefact"', 'verdict = "new"'), "'new' is what"),
        (TRIAGE.replace('verdict = "expected"', 'verdict = "fixed"'), "names its patch"),
        (TRIAGE + "\n[finding2]\n", "only [[finding]] tables"),
        (TRIAGE + TRIAGE.split("\n\n")[1], "is triaged twice"),
        (TRIAGE.replace("reason =", "why =", 1), "unknown key 'why'"),
        ("[[finding]\n", "not TOML"),
    ],
)
def test_a_malformed_file_is_one_line_naming_it(tmp_path: Path, text: str, says: str) -> None:
    with pytest.raises(TriageError) as err:
        load(tmp_path, text)
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith(f"triage file {tmp_path / 'triage.toml'}: ")
    assert says in message


def test_a_bad_triage_option_is_a_usage_error_before_anything_is_written(
    tmp_path: Path,
) -> None:
    bad = tmp_path / "triage.toml"
    bad.write_text("[[finding]]\n")
    shard = tmp_path / "shard.sqlite"
    with ResultsDB.open(shard, tree="t", kernel="k") as db:
        db.record(RESULTS[0])
    out = tmp_path / "merged.sqlite"
    run = subprocess.run(
        [sys.executable, "-m", "roadtest", "sweep", "merge", str(out), str(shard)]
        + ["--triage", str(bad)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 4, run.stderr
    assert run.stderr.count("\n") == 1 and str(bad) in run.stderr
    assert not out.exists()


def test_roadtests_own_triage_names_patches_that_exist() -> None:
    triage = Triage.load(PATCHES / TRIAGE_FILE)
    assert triage.entries, "roadtest's sweeps found bugs: the file is not empty"
    assert missing_patches(triage, PATCHES) == []
