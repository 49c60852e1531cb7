"""`roadtest trace show` and `roadtest trace diff`: traces for people to read and review."""

from __future__ import annotations

import datetime
import os
import shutil
import sys
from collections import deque
from itertools import chain, zip_longest
from typing import Any

from roadtest.text import count, printable
from roadtest.trace.decode import Decoder, body
from roadtest.trace.format import Header, read_trace, shown

_TRACE_CONTEXT = 3  # events shown before and after the first difference
_DIFF_WIDTH = 1000  # characters of one event in a diff (a 65536-message transfer is 459 KB)


def created_text(created: float) -> str:
    """When a trace was made, as a local date, or the number itself when it is not one."""
    try:
        return datetime.datetime.fromtimestamp(created).isoformat(" ", "seconds")
    except (OverflowError, OSError, ValueError):  # inf, nan, 1e20, year 10000
        return f"at unix time {created!r} (not a date)"


def _trace_title(path: str, header: Header) -> list[str]:
    where = (
        f"spi cs {header.address}"
        if header.bus == "spi"
        else f"{printable(header.bus, 60)} {header.address:#04x}"
    )
    lines = [
        f"# {path}: {header.compatible} at {where}, "
        f"model {header.model or '(none)'}, regbytes {header.regbytes} {header.byteorder}",
        f"# kernel {header.kernel}, test {header.test}, recorded {created_text(header.created)}",
    ]
    lines += [f"# {printable(str(key))}: {shown(value)}" for key, value in header.extra.items()]
    return [printable(line) for line in lines]


def _clock_title(first: dict[str, Any]) -> tuple[str, str]:
    """Which of an event's times `show` prints (the key) and the title line that says so:
    the guest's (simulated time, "sim"), else the host's ("t"), decided by the first event."""
    if "sim" in first:
        return "sim", (
            "# times: the guest's (simulated time), in ms since the first event "
            f"({first['sim'] / 1e9:.6f} s after the guest booted)"
        )
    return "t", (
        "# times: the host's (this trace has no guest time: it was not recorded under "
        "simulated time), in ms since the first event"
    )


def show(path: str, timeline: bool = False, width: int | None = None) -> int:
    """Print a trace, one event a line: seq, ms since the first event (guest time when the
    trace has it, host time otherwise, as a title line says), the decoded event; or with
    `timeline` its events on a time axis `width` characters wide (the terminal's)."""
    header, events = read_trace(path)
    decoder = Decoder(header)
    try:
        print("\n".join(_trace_title(path, header)))
        if timeline:
            from roadtest.trace.timeline import timeline as draw

            columns = width or shutil.get_terminal_size((100, 24)).columns
            print("\n".join(draw(header, list(events), columns)))
            sys.stdout.flush()
            return 0
        first = next(events, None)
        if first is not None:
            clock, title = _clock_title(first)
            print(title)
            start: int = first[clock]
            for event in chain([first], events):
                if clock in event:
                    when = f"{(event[clock] - start) / 1e6:10.3f} ms"
                else:  # no guest time on this one (not a trace roadtest wrote)
                    when = f"{'-':>10}   "
                print(f"{event['seq']:6d} {when}  {decoder.describe(event)}")
        sys.stdout.flush()
    except BrokenPipeError:  # `roadtest trace show x | head`: not an error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0


def diff(path_a: str, path_b: str, timeline: bool = False, width: int | None = None) -> int:
    """Compare two traces event by event (A as expected, B as actual); 0 same, 1 differ.
    With `timeline`, both are drawn on one time axis, the first difference pointed at."""
    if timeline:
        return _diff_timeline(path_a, path_b, width)
    header_a, events_a = read_trace(path_a)
    header_b, events_b = read_trace(path_b)
    dec_a, dec_b = Decoder(header_a, limit=_DIFF_WIDTH), Decoder(header_b, limit=_DIFF_WIDTH)
    out: list[str] = []
    # The device must be the same one; the kernel, test and model may differ (shown only).
    device_differs = False
    for key in ("bus", "address", "compatible", "regbytes", "byteorder", "kernel", "test", "model"):
        va, vb = getattr(header_a, key), getattr(header_b, key)
        if va != vb:
            # The address is where the session put the device: it depends on which
            # tests a run collected, not on the driver.
            identity = key in ("bus", "compatible", "regbytes", "byteorder")
            device_differs |= identity
            values = (
                f"{va:#04x} vs {vb:#04x}" if key == "address" else f"{shown(va)} vs {shown(vb)}"
            )
            out.append(f"header: {key} {values}" + ("" if identity else " (not compared)"))
    before: deque[tuple[int, dict[str, Any]]] = deque(maxlen=_TRACE_CONTEXT)
    first: list[str] = []
    after = 0
    differing = count_a = count_b = 0
    for index, (x, y) in enumerate(zip_longest(events_a, events_b)):
        count_a += x is not None
        count_b += y is not None
        same = x is not None and y is not None and body(x) == body(y)
        differing += not same
        if not first and same:
            assert x is not None
            before.append((index, x))
        elif not first:
            first = [f"first difference at event {index}:"]
            first += [f"    {i:6d}  {dec_a.describe(e)}" for i, e in before]
            first += _diff_pair(index, x, y, path_a, path_b, dec_a, dec_b)
            if x is not None and y is not None:
                first.append(f"    => {dec_b.describe_expected_actual(x, y)}")
        elif after < _TRACE_CONTEXT:
            after += 1
            if same:
                assert x is not None
                first.append(f"    {index:6d}  {dec_a.describe(x)}")
            else:
                first += _diff_pair(index, x, y, path_a, path_b, dec_a, dec_b)
    out += first
    if not differing and not device_differs:
        out.append(f"identical: {count(count_a, 'event')}")
        print("\n".join(out))
        return 0
    out.append(
        f"{differing} of {count(max(count_a, count_b), 'event')} differ "
        f"({path_a}: {count(count_a, 'event')}, {path_b}: {count_b})"
    )
    print("\n".join(out))
    return 1


def _diff_timeline(path_a: str, path_b: str, width: int | None) -> int:
    from roadtest.trace.timeline import span_of, timeline

    header_a, read_a = read_trace(path_a)
    header_b, read_b = read_trace(path_b)
    events_a, events_b = list(read_a), list(read_b)
    first = next(
        (
            i
            for i, (x, y) in enumerate(zip_longest(events_a, events_b))
            if x is None or y is None or body(x) != body(y)
        ),
        None,
    )
    columns = width or shutil.get_terminal_size((100, 24)).columns
    span = max(span_of(events_a), span_of(events_b))
    out: list[str] = []
    for path, header, events in ((path_a, header_a, events_a), (path_b, header_b, events_b)):
        mark = first if first is not None and first < len(events) else None
        out.append(printable(f"# {path}: {count(len(events), 'event')}"))
        out += timeline(header, events, columns, span=span, mark=mark)
    out.append("identical" if first is None else f"first difference at event {first}")
    print("\n".join(out))
    return 0 if first is None else 1


def _diff_pair(
    index: int,
    x: dict[str, Any] | None,
    y: dict[str, Any] | None,
    path_a: str,
    path_b: str,
    dec_a: Decoder,
    dec_b: Decoder,
) -> list[str]:
    line_a = dec_a.describe(x) if x is not None else f"(end of {path_a})"
    line_b = dec_b.describe(y) if y is not None else f"(end of {path_b})"
    return [f"-   {index:6d}  {line_a}", f"+   {index:6d}  {line_b}"]
