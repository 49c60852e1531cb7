"""`roadtest trace show --timeline`: a trace's transfers, lines and markers on a time axis,
as text.

One row a lane, one column a slice of time (the trace's span over the width), the time the
trace's: the guest's (simulated) when it has it, else the host's.

- the bus (`i2c 0x48`, `spi cs4`): a transfer is `w` (it only writes), `r` (it reads),
  `E` (a message of it failed); several in one column are their count, 2 to 9, or `*`;
  a column with a failure is `E` whatever else it holds;
- each GPIO line: its level as the model drove it (`irq` events, the interrupts) or the
  driver set it, `-` high, `_` low, `/` and `\\` where it rose or fell, blank before its
  first level; below it the driver's requests on it: `t` irq_type, `u` unmask, `m` mask,
  `d` a direction, `v` a value read, `?` a request that failed; `|` a pulse within a column;
- the test's markers: `B` bind, `U` unbind, `i` inject, `n` note (or the first letter).

Below the lanes, the axis: a tick every ten columns with its time. `roadtest trace diff
--timeline` draws both traces so, on one axis, with `^` under the first event that differs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from roadtest.text import printable
from roadtest.trace.format import Header
from roadtest.trace.i2c import VIRTIO_I2C_FLAGS_M_RD, VIRTIO_I2C_MSG_OK
from roadtest.trace.spi import VIRTIO_SPI_TRANS_OK

_LABEL: Final = 14  # characters of a lane's name
_REQUESTS: Final = {
    "irq_type": "t",
    "unmask": "u",
    "mask": "m",
    "set_direction": "d",
    "get_direction": "d",
    "get_value": "v",
}


def _transfer_mark(event: Mapping[str, Any]) -> str:
    if event["kind"] == "i2c":
        msgs = event["msgs"]
        if any(m["status"] != VIRTIO_I2C_MSG_OK for m in msgs):
            return "E"
        return "r" if any(m["flags"] & VIRTIO_I2C_FLAGS_M_RD for m in msgs) else "w"
    xfers = event["xfers"]
    if any(x["result"] != VIRTIO_SPI_TRANS_OK for x in xfers):
        return "E"
    return "r" if any(x["rx"] is not None for x in xfers) else "w"


def _unit(span_ns: float) -> tuple[float, str]:
    for size, name in ((1e9, "s"), (1e6, "ms"), (1e3, "us")):
        if span_ns >= size:
            return size, name
    return 1.0, "ns"


def span_of(events: Sequence[Mapping[str, Any]]) -> int:
    """How long the events last, ns, on the clock a timeline draws them by."""
    clock = "sim" if events and "sim" in events[0] else "t"
    times = [e[clock] for e in events if isinstance(e.get(clock), int)]
    return max(times) - min(times) if times else 0


def timeline(
    header: Header,
    events: Sequence[Mapping[str, Any]],
    width: int = 100,
    *,
    span: int | None = None,
    mark: int | None = None,
) -> list[str]:
    """The lanes and the axis, one string a line, at most `width` characters wide; `span`
    (ns) the axis's length (default the events'), `mark` an event to point at (`^`)."""
    columns = max(10, width - _LABEL - 1)
    clock = "sim" if events and "sim" in events[0] else "t"
    times = [e[clock] for e in events if isinstance(e.get(clock), int)]
    if not times:
        return [_lane("", list("(no events)"))]
    origin = min(times)
    span = max(span if span is not None else max(times) - origin, 1)
    pointer = [" "] * columns

    def column(event: Mapping[str, Any], previous: int) -> int:
        when: object = event.get(clock)
        if not isinstance(when, int):
            return previous  # an event without this clock: where the one before it was
        return int(min(columns - 1, (when - origin) * columns // span))

    bus_name = f"spi cs{header.address}" if header.bus == "spi" else f"i2c {header.address:#04x}"
    bus = [" "] * columns
    counts = [0] * columns
    failed = [False] * columns
    markers = [" "] * columns
    levels: dict[str, list[str]] = {}
    requests: dict[str, list[str]] = {}
    changes: dict[str, list[tuple[int, int]]] = {}
    at = 0
    for index, event in enumerate(events):
        at = column(event, at)
        if index == mark:
            pointer[at] = "^"
        kind = event["kind"]
        if kind in ("i2c", "spi"):
            sign = _transfer_mark(event)
            counts[at] += 1
            failed[at] |= sign == "E"
            n = counts[at]
            bus[at] = "E" if failed[at] else sign if n == 1 else str(n) if n < 10 else "*"
        elif kind in ("irq", "gpio"):
            name = printable(str(event.get("name") or f"line{event['line']}"), _LABEL - 4)
            levels.setdefault(name, [" "] * columns)
            requests.setdefault(name, [" "] * columns)
            line_changes = changes.setdefault(name, [])
            if kind == "irq":
                line_changes.append((at, event["level"] & 1))
            elif event["op"] == "set_value" and event["status"] == 0:
                line_changes.append((at, event["value"] & 1))
            else:
                requests[name][at] = "?" if event["status"] else _REQUESTS.get(event["op"], "?")
        elif kind == "marker":
            what = str(event.get("what") or "?")
            markers[at] = {"bind": "B", "unbind": "U"}.get(what, what[:1] or "?")
    for name, line_changes in changes.items():
        row = levels[name]
        level: int | None = None
        position = 0
        for index in range(columns):
            before, flips = level, 0
            while position < len(line_changes) and line_changes[position][0] == index:
                flips += line_changes[position][1] != level
                level = line_changes[position][1]
                position += 1
            if level is None:
                continue
            if flips > 1:
                row[index] = "|"  # a pulse within the column
            elif before is not None and before != level:
                row[index] = "/" if level else "\\"
            else:
                row[index] = "-" if level else "_"
    lines = [_lane(bus_name, bus)]
    for name in levels:
        lines.append(_lane(name, levels[name]))
        if any(c != " " for c in requests[name]):
            lines.append(_lane(f"{name} req", requests[name]))
    if any(c != " " for c in markers):
        lines.append(_lane("test", markers))
    if mark is not None:
        lines.append(_lane("", pointer).rstrip() + f" event {mark}")
    unit, unit_name = _unit(span)
    ticks = [" "] * columns
    labels = [" "] * (columns + 12)
    for index in range(0, columns, 10):
        ticks[index] = "|"
        text = f"{index * span / columns / unit:.3g}"
        labels[index : index + len(text)] = list(text)
    lines.append(_lane("", ticks))
    lines.append(_lane(unit_name, labels).rstrip())
    per = span / columns / unit
    lines.append(
        f"{'':{_LABEL}} one column: {per:.3g} {unit_name} of the "
        + ("guest's (simulated) time" if clock == "sim" else "host's time")
    )
    return lines


def _lane(name: str, cells: Sequence[str]) -> str:
    return f"{name:>{_LABEL}} " + "".join(cells)
