"""What a sweep came to, for people: a table per subsystem for the terminal, and a
self-contained HTML page (inline CSS and SVG, nothing fetched) with a bar per subsystem,
every driver, and every finding's report and the command that reproduces it."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from html import escape
from pathlib import Path

from roadtest.atomic import write_atomically
from roadtest.sweep.inventory import BUSES, SUBSYSTEMS
from roadtest.sweep.outcome import DriverResult, Stage
from roadtest.sweep.results import finding_id
from roadtest.sweep.triage import Triage

# Stages at which the driver's probe ran (its module loaded and its device was there).
PROBED = (Stage.PROBE_FAILED, Stage.BOUND, Stage.EXERCISED)


@dataclass(frozen=True)
class Counts:
    """One row of the summary: a subsystem's drivers (or all of them)."""

    name: str
    drivers: int
    built: int
    probed: int  # its probe ran
    past_probe: int  # its probe succeeded
    exercised: int
    signatures: int  # distinct findings

    @property
    def rate(self) -> str:
        """Past probe of built, as a percentage: how often an invented device convinced."""
        return f"{100 * self.past_probe / self.built:.1f}%" if self.built else "-"


def counts(name: str, results: Sequence[DriverResult]) -> Counts:
    return Counts(
        name=name,
        drivers=len(results),
        built=sum(r.stage is not Stage.NOT_BUILT for r in results),
        probed=sum(r.stage in PROBED for r in results),
        past_probe=sum(r.past_probe for r in results),
        exercised=sum(r.stage is Stage.EXERCISED for r in results),
        signatures=len({f.signature for r in results for f in r.findings}),
    )


def by_subsystem(results: Sequence[DriverResult]) -> dict[str, list[DriverResult]]:
    """The results of each subsystem that has some, in SUBSYSTEMS order (then any other,
    by name), each sorted by module, then bus."""
    groups: dict[str, list[DriverResult]] = {}
    for result in results:
        groups.setdefault(result.subsystem, []).append(result)
    order = [s for s in SUBSYSTEMS if s in groups] + sorted(set(groups) - set(SUBSYSTEMS))
    return {s: sorted(groups[s], key=lambda r: (r.module, r.source, r.bus)) for s in order}


def bus_totals(results: Sequence[DriverResult]) -> list[Counts]:
    """A total row per bus ("i2c total", "spi total"), when the results have more than one
    bus; none otherwise (the total says it)."""
    buses = [b for b in BUSES if any(r.bus == b for r in results)]
    buses += sorted({r.bus for r in results} - set(buses))
    if len(buses) < 2:
        return []
    return [counts(f"{b} total", [r for r in results if r.bus == b]) for b in buses]


_HEADERS = (
    "subsystem",
    "drivers",
    "built",
    "probed",
    "past probe",
    "exercised",
    "findings",
    "probe rate",
)


def _row(c: Counts) -> tuple[str, ...]:
    numbers = (c.drivers, c.built, c.probed, c.past_probe, c.exercised, c.signatures)
    return (c.name, *(str(n) for n in numbers), c.rate)


def summary(results: Sequence[DriverResult], triage: Triage | None = None) -> list[str]:
    """The terminal summary: a row per subsystem and the total (drivers; built: kconfig
    put it in the kernel; probed: its probe ran; past probe: probe succeeded; exercised;
    findings: distinct signatures; probe rate: past probe / built), then a line per
    distinct finding with how many drivers had it and which, and what the triage file says
    of each driver's (fixed by a patch, open, ..., or new)."""
    triage = triage or Triage()
    rows = [_row(counts(s, group)) for s, group in by_subsystem(results).items()]
    rows += [_row(c) for c in bus_totals(results)]
    rows.append(_row(counts("total", results)))
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(_HEADERS)]

    def line(cells: Sequence[str]) -> str:
        first = cells[0].ljust(widths[0])
        return "  ".join([first, *(c.rjust(w) for c, w in zip(cells[1:], widths[1:], strict=True))])

    lines = [line(_HEADERS), *(line(r) for r in rows)]
    found = _signatures(results, triage)
    if found:
        lines.append("")
        lines.append(f"findings ({len(found)} distinct):")
        count_width = max(len(str(len(modules))) for modules in found.values())
        for signature, modules in found.items():
            had = ", ".join(f"{m}: {label}" for m, label in sorted(modules.items()))
            lines.append(f"  {len(modules):>{count_width}}  {signature}  ({had})")
        verdicts = triage.counts(results)
        lines.append("triage: " + ", ".join(f"{n} {v.value}" for v, n in verdicts.items()))
    return lines


def _signatures(results: Iterable[DriverResult], triage: Triage) -> dict[str, dict[str, str]]:
    """Each distinct finding signature, most widespread first, and the drivers that had it
    (module and bus) with the triage's verdict on each."""
    found: dict[str, dict[str, str]] = {}
    for result in results:
        for finding in result.findings:
            label = triage.of(result, finding).label()
            found.setdefault(finding.signature, {})[result.name] = label
    return dict(sorted(found.items(), key=lambda item: (-len(item[1]), item[0])))


# --- HTML -------------------------------------------------------------------------------

# The bar's parts: each driver in the first that holds for it. A finding outranks progress:
# a driver that oopsed in probe is red, not grey.
_PARTS = (
    ("with findings", "#c62828"),
    ("exercised", "#2e7d32"),
    ("past probe", "#81c784"),
    ("built, not past probe", "#bdbdbd"),
    ("not built", "#eeeeee"),
)


def _part(result: DriverResult) -> str:
    if result.findings:
        return "with findings"
    if result.stage is Stage.EXERCISED:
        return "exercised"
    if result.past_probe:
        return "past probe"
    if result.stage is not Stage.NOT_BUILT:
        return "built, not past probe"
    return "not built"


_STYLE = """
body { font-family: sans-serif; margin: 2em; color: #212121; }
table { border-collapse: collapse; margin: 1em 0; }
th, td { border: 1px solid #ccc; padding: 0.2em 0.5em; text-align: left; vertical-align: top; }
td.n { text-align: right; }
tr.findings td { background: #ffebee; }
pre { background: #f5f5f5; padding: 0.5em; overflow-x: auto; font-size: 85%; }
code { background: #f5f5f5; }
.legend span { display: inline-block; width: 1em; height: 1em; margin: 0 0.3em 0 1em;
  vertical-align: middle; border: 1px solid #999; }
"""

_LABEL_WIDTH, _BAR_WIDTH, _ROW_HEIGHT, _BAR_HEIGHT = 90, 600, 28, 20


def _bars(groups: dict[str, list[DriverResult]]) -> list[str]:
    """A horizontal bar per subsystem, its drivers split into _PARTS, all bars the same
    length (shares compare across subsystems; the count is written beside each)."""
    height = _ROW_HEIGHT * len(groups) + 4
    width = _LABEL_WIDTH + _BAR_WIDTH + 200
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        'role="img" aria-label="drivers per subsystem, by how far they got">'
    ]
    for row, (subsystem, results) in enumerate(groups.items()):
        y = 2 + row * _ROW_HEIGHT
        c = counts(subsystem, results)
        out.append(f'<text x="0" y="{y + 15}" font-size="13">{escape(subsystem)}</text>')
        x = float(_LABEL_WIDTH)
        for part, colour in _PARTS:
            n = sum(_part(r) == part for r in results)
            if not n:
                continue
            w = _BAR_WIDTH * n / len(results)
            out.append(
                f'<rect x="{x:.1f}" y="{y}" width="{w:.1f}" height="{_BAR_HEIGHT}" '
                f'fill="{colour}" stroke="#9e9e9e" stroke-width="0.5">'
                f"<title>{escape(subsystem)}: {n} {escape(part)}</title></rect>"
            )
            if w >= 8 * len(str(n)) + 4:  # the count inside, when it fits
                ink = "#fff" if part in ("with findings", "exercised") else "#212121"
                out.append(
                    f'<text x="{x + w / 2:.1f}" y="{y + 15}" font-size="12" '
                    f'text-anchor="middle" fill="{ink}">{n}</text>'
                )
            x += w
        out.append(
            f'<text x="{_LABEL_WIDTH + _BAR_WIDTH + 8}" y="{y + 15}" font-size="12">'
            f"{c.drivers} drivers, probe rate {escape(c.rate)}</text>"
        )
    out.append("</svg>")
    legend = "".join(
        f'<span style="background:{colour}"></span>{escape(part)}' for part, colour in _PARTS
    )
    return [f'<p class="legend">{legend}</p>', *out]


def _summary_table(groups: dict[str, list[DriverResult]], results: Sequence[DriverResult]) -> str:
    rows = [_row(counts(s, g)) for s, g in groups.items()]
    rows += [_row(c) for c in bus_totals(results)] + [_row(counts("total", results))]
    head = "".join(f"<th>{escape(h)}</th>" for h in _HEADERS)
    body = "".join(
        "<tr><td>"
        + escape(r[0])
        + "</td>"
        + "".join(f'<td class="n">{escape(cell)}</td>' for cell in r[1:])
        + "</tr>"
        for r in rows
    )
    return f"<table><tr>{head}</tr>{body}</table>"


def _reproduce(result: DriverResult, index: int) -> str:
    finding = result.findings[index]
    if not finding.reproducer:
        return "<em>no reproducer yet</em>"
    command = f"roadtest sweep --reproduce {finding_id(result, index)}"
    return f"<code>{escape(command)}</code>"


def _anchor(result: DriverResult, index: int) -> str:
    # An id made of the finding's id would carry '/' and '.': fine in HTML5, but a plain
    # one is easier to link by hand.
    return "finding-" + "".join(c if c.isalnum() else "-" for c in finding_id(result, index))


_DRIVER_HEADERS = (
    "module",
    "bus",
    "subsystem",
    "device",
    "stage",
    "detail",
    "read / written",
    "examples",
    "coverage",
    "findings",
)


def _driver_rows(groups: dict[str, list[DriverResult]], triage: Triage) -> list[str]:
    rows = []
    for results in groups.values():
        for r in results:
            device = escape(r.device) + (f"<br><code>{escape(r.match)}</code>" if r.match else "")
            findings = "<br>".join(
                f'<a href="#{_anchor(r, i)}">{escape(f.kind.value)}: {escape(f.signature)}</a>'
                f" <em>({escape(triage.of(r, f).label())})</em><br>{_reproduce(r, i)}"
                for i, f in enumerate(r.findings)
            )
            cells = (
                f'<td title="{escape(r.source)}">{escape(r.module)}</td>',
                f"<td>{escape(r.bus)}</td>",
                f"<td>{escape(r.subsystem)}</td>",
                f"<td>{device}</td>",
                f"<td>{escape(r.stage.value)}</td>",
                f"<td>{escape(r.detail)}</td>",
                f'<td class="n">{r.attributes_read} / {r.attributes_written}</td>',
                f'<td class="n">{r.examples}</td>',
                f'<td class="n">{r.coverage or "-"}</td>',
                f"<td>{findings}</td>",
            )
            css = ' class="findings"' if r.findings else ""
            rows.append(f"<tr{css}>{''.join(cells)}</tr>")
    return rows


def _findings(groups: dict[str, list[DriverResult]], triage: Triage) -> list[str]:
    out = []
    for results in groups.values():
        for r in results:
            for i, f in enumerate(r.findings):
                entry = triage.of(r, f)
                upstream = f" Upstream: {entry.upstream}." if entry.upstream else ""
                out += [
                    f'<h3 id="{_anchor(r, i)}">{escape(f.signature)}</h3>',
                    f"<p>{escape(r.module)} ({escape(r.bus)}, {escape(r.source)}), "
                    f"{escape(f.kind.value)}: "
                    f"{escape(f.title)}</p>",
                    f"<p><strong>{escape(entry.label())}</strong>: "
                    f"{escape(entry.reason)}{escape(upstream)}</p>",
                    f"<p>{_reproduce(r, i)}</p>",
                    f"<pre>{escape(f.report)}</pre>",
                ]
    return out


def render_html(
    results: Sequence[DriverResult], *, title: str, triage: Triage | None = None
) -> str:
    """The whole page, as text."""
    triage = triage or Triage()
    groups = by_subsystem(results)
    total = counts("total", results)
    head = "".join(f"<th>{escape(h)}</th>" for h in _DRIVER_HEADERS)
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{escape(title)}</title><style>{_STYLE}</style></head><body>",
        f"<h1>{escape(title)}</h1>",
        f"<p>{total.drivers} drivers: {total.built} built, {total.past_probe} past probe "
        f"({escape(total.rate)} of built), {total.exercised} exercised, "
        f"{total.signatures} distinct findings.</p>",
        "<h2>Subsystems</h2>",
        *_bars(groups),
        _summary_table(groups, results),
        "<h2>Drivers</h2>",
        f"<table><tr>{head}</tr>",
        *_driver_rows(groups, triage),
        "</table>",
        "<h2>Findings</h2>",
        *(_findings(groups, triage) or ["<p>None.</p>"]),
        "</body></html>",
    ]
    return "\n".join(parts) + "\n"


def write_html(
    results: Sequence[DriverResult], path: Path, *, title: str, triage: Triage | None = None
) -> None:
    """The HTML report into `path`, written whole or not at all (a temporary file and a
    rename)."""
    write_atomically(path, render_html(results, title=title, triage=triage))
