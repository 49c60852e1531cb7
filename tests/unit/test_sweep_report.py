"""The sweep's reports: the terminal summary's counts and rates, the HTML page (it parses,
holds every driver, escapes what the kernel printed, fetches nothing), and the KCIDB data
(valid for kcidb-io, each stage its status). Hand-built results; no guest."""

from __future__ import annotations

import copy
from dataclasses import replace
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from roadtest.errors import RoadtestError
from roadtest.sweep.kcidb import kcidb_report, validate
from roadtest.sweep.outcome import DriverResult, Finding, Kind, Stage
from roadtest.sweep.report import summary, write_html


def driver(
    module: str, subsystem: str, stage: Stage, *findings: Finding, source: str = ""
) -> DriverResult:
    return DriverResult(
        module=module,
        subsystem=subsystem,
        source=source or f"drivers/{subsystem}/{module}.c",
        machine="um" if stage is not Stage.NOT_BUILT else "",
        device="example",
        match=f"acme,{module}",
        stage=stage,
        detail="probe returned -ENODEV" if stage is Stage.PROBE_FAILED else "",
        examples=5,
        attributes_read=7,
        attributes_written=2,
        coverage=120,
        seconds=3.5,
        findings=findings,
    )


def finding(signature: str, report: str = "BUG: KASAN\n", reproducer: str = "{}") -> Finding:
    return Finding(Kind.KASAN, signature, f"BUG: {signature}", report, reproducer)


OOB = finding("kasan: slab-out-of-bounds in foo_read_raw < foo_probe")
WARN = Finding(Kind.WARNING, "warning: bar_set at bar.c:10", "WARNING: bar_set", "WARN\n", "")

RESULTS = [
    # rtc: 4 drivers, 3 built, 3 probed, 2 past probe, 1 exercised; 1 distinct finding
    driver("rtc-a", "rtc", Stage.EXERCISED),
    driver("rtc-b", "rtc", Stage.BOUND, OOB),
    driver("rtc-c", "rtc", Stage.PROBE_FAILED),
    driver("rtc-d", "rtc", Stage.NOT_BUILT),
    # iio: 3 drivers, 3 built (no device, not loaded: built), 1 probed, 1 past probe,
    # 1 exercised; 2 distinct findings
    driver("iio-a", "iio", Stage.EXERCISED, OOB, WARN),
    driver("iio-b", "iio", Stage.NO_DEVICE),
    driver("iio-c", "iio", Stage.NOT_LOADED),
    # gpio: nothing built
    driver("gpio-a", "gpio", Stage.NOT_BUILT),
]


def table(lines: list[str]) -> dict[str, list[str]]:
    """The summary's rows by their first cell, up to the blank line."""
    rows = {}
    for line in lines[: lines.index("")] if "" in lines else lines:
        name, *cells = line.split()
        rows[name] = cells
    return rows


def test_summary_counts_and_rate() -> None:
    lines = summary(RESULTS)
    rows = table(lines)
    # drivers built probed past-probe exercised findings rate
    assert rows["rtc"] == ["4", "3", "3", "2", "1", "1", "66.7%"]
    assert rows["iio"] == ["3", "3", "1", "1", "1", "2", "33.3%"]
    assert rows["gpio"] == ["1", "0", "0", "0", "0", "0", "-"]
    assert rows["total"] == ["8", "6", "4", "3", "2", "2", "50.0%"]
    # SUBSYSTEMS order (iio before rtc before gpio), then the total
    assert [line.split()[0] for line in lines[1:5]] == ["iio", "rtc", "gpio", "total"]


def test_summary_lists_each_signature_once_with_its_drivers() -> None:
    lines = summary(RESULTS)
    findings = lines[lines.index("") + 2 : -1]
    assert lines[-1] == "triage: 3 new"  # rtc-b's OOB, iio-a's OOB and WARN
    assert len(findings) == 2
    assert findings[0].split()[0] == "2" and OOB.signature in findings[0]
    assert "iio-a" in findings[0] and "rtc-b" in findings[0]
    assert findings[1].split()[0] == "1" and WARN.signature in findings[1]
    assert "iio-a" in findings[1]


def test_summary_without_findings_has_no_findings_part() -> None:
    assert "" not in summary([driver("rtc-a", "rtc", Stage.EXERCISED)])


class Page(HTMLParser):
    """What the report's HTML holds: its tags, the text of each <td>, of each <pre>."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.cells: list[str] = []
        self.pres: list[str] = []
        self.text: list[str] = []
        self._open: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        if tag in ("td", "pre"):
            self._open.append(tag)
            (self.cells if tag == "td" else self.pres).append("")

    def handle_endtag(self, tag: str) -> None:
        if self._open and self._open[-1] == tag:
            self._open.pop()

    def handle_data(self, data: str) -> None:
        self.text.append(data)
        if self._open:
            target = self.cells if self._open[-1] == "td" else self.pres
            target[-1] += data


HOSTILE = '<script>alert("x")</script> & </pre><b>'


def page(tmp_path: Path, results: list[DriverResult]) -> Page:
    path = tmp_path / "sweep.html"
    write_html(results, path, title=f"sweep {HOSTILE}")
    parser = Page()
    parser.feed(path.read_text(encoding="utf-8"))
    parser.close()
    return parser


def test_html_holds_every_driver_and_escapes_what_the_kernel_printed(tmp_path: Path) -> None:
    hostile = finding(f"kasan: {HOSTILE}", report=f"BUG: KASAN {HOSTILE}\n  <trace>\n")
    results = [*RESULTS, driver("rtc-e", "rtc", Stage.BOUND, hostile)]
    parsed = page(tmp_path, results)
    tags = {tag for tag, _ in parsed.tags}
    assert "script" not in tags and "b" not in tags  # the text stayed text
    for result in results:
        assert result.module in parsed.cells
    assert hostile.report in parsed.pres and OOB.report in parsed.pres
    assert f"sweep {HOSTILE}" in parsed.text  # the title, as given
    assert "svg" in tags


def test_html_bars_and_reproducers(tmp_path: Path) -> None:
    parsed = page(tmp_path, RESULTS)
    rects = [attrs for tag, attrs in parsed.tags if tag == "rect"]
    # A bar per subsystem: rtc has four parts (findings, exercised, built, not built),
    # iio three (findings, built twice over: not loaded and no device), gpio one.
    assert len(rects) == 4 + 2 + 1
    assert len({r["y"] for r in rects}) == 3
    commands = [c for c in parsed.text if "roadtest sweep --reproduce" in c]
    assert "roadtest sweep --reproduce drivers/rtc/rtc-b.c:1" in commands
    assert "roadtest sweep --reproduce drivers/iio/iio-a.c:1" in commands
    assert not any("iio-a.c:2" in c for c in commands)  # WARN has no reproducer
    # Self-contained: nothing fetched.
    for tag, attrs in parsed.tags:
        assert tag not in ("script", "link", "img", "iframe")
        assert not (attrs.get("href") or "#").startswith(("http:", "https:", "//"))
    # Every link inside the page goes to an anchor that exists.
    ids = {attrs["id"] for _, attrs in parsed.tags if "id" in attrs}
    links = [attrs["href"] for tag, attrs in parsed.tags if tag == "a"]
    assert links and all(str(href).removeprefix("#") in ids for href in links)


def test_html_replaces_the_old_report_whole(tmp_path: Path) -> None:
    path = tmp_path / "sweep.html"
    path.write_text("old")
    write_html(RESULTS, path, title="sweep")
    assert path.read_text().startswith("<!DOCTYPE html>")
    assert [p.name for p in tmp_path.iterdir()] == ["sweep.html"]


def kcidb(results: list[DriverResult]) -> dict[str, Any]:
    return kcidb_report(
        results,
        origin="roadtest",
        checkout_id="linux-6.12.118",
        build_id="linux-6.12.118-um-sweep",
        tree="linux-6.12",
        git_commit="0123456789abcdef0123456789abcdef01234567",
        arch="um",
        config_name="sweep",
    )


def test_kcidb_validates_and_maps_stages_to_statuses() -> None:
    # A driver without a known module is named by its source: its path must still be one.
    odd = replace(
        driver("x", "misc", Stage.EXERCISED, source="drivers/misc/eeprom/at24.c"),
        module="drivers/misc/eeprom/at24.c",
    )
    data = kcidb([*RESULTS, odd])
    validate(data)
    status = {t["misc"]["source"]: t["status"] for t in data["tests"]}
    assert status == {
        "drivers/rtc/rtc-a.c": "PASS",
        "drivers/rtc/rtc-b.c": "FAIL",
        "drivers/rtc/rtc-c.c": "ERROR",
        "drivers/rtc/rtc-d.c": "SKIP",
        "drivers/iio/iio-a.c": "FAIL",
        "drivers/iio/iio-b.c": "SKIP",
        "drivers/iio/iio-c.c": "MISS",
        "drivers/gpio/gpio-a.c": "SKIP",
        "drivers/misc/eeprom/at24.c": "PASS",
    }
    paths = {t["path"] for t in data["tests"]}
    assert "roadtest.sweep.rtc.i2c.rtc-a" in paths
    assert len({t["id"] for t in data["tests"]}) == len(data["tests"])
    # An issue per distinct signature, an incident per driver's finding.
    assert len(data["issues"]) == 2
    assert len(data["incidents"]) == 3
    by_id = {i["id"]: i["comment"] for i in data["issues"]}
    assert sorted(by_id[i["issue_id"]] for i in data["incidents"]) == sorted(
        [OOB.signature, OOB.signature, WARN.signature]
    )


def test_kcidb_without_a_commit_validates_and_ids_take_one_prefix() -> None:
    data = kcidb_report(
        RESULTS,
        origin="roadtest",
        checkout_id="roadtest:c",
        build_id="b",
        tree="mine",
        git_commit=None,
        arch="x86_64",
        config_name="sweep",
    )
    validate(data)
    assert "git_commit_hash" not in data["checkouts"][0]
    assert data["checkouts"][0]["id"] == "roadtest:c"
    build = data["builds"][0]
    assert (build["id"], build["checkout_id"]) == ("roadtest:b", "roadtest:c")


@pytest.mark.parametrize(
    "break_it",
    [
        lambda d: d["tests"][0].__setitem__("status", "BROKEN"),
        lambda d: d["tests"][0].__setitem__("path", "roadtest.sweep.rtc.rtc a"),
        lambda d: d["builds"][0].__setitem__("origin", "Road Test"),
        lambda d: d["checkouts"][0].__setitem__("git_commit_hash", "abc"),
        lambda d: d["tests"][0].pop("build_id"),
        lambda d: d["version"].__setitem__("major", 99),
    ],
)
def test_kcidb_broken_data_does_not_validate(break_it: Any) -> None:
    data = copy.deepcopy(kcidb(RESULTS))
    break_it(data)
    with pytest.raises(RoadtestError, match="not valid KCIDB data"):
        validate(data)
