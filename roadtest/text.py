"""Text from elsewhere (a trace, the guest), made safe to print."""

from __future__ import annotations


def printable(text: str, limit: int | None = None) -> str:
    """`text` with every non-printable character escaped (\\x1b, \\n, \\u202e), so that
    what a trace holds cannot move the cursor or recolour a terminal, nor split
    one line into two; longer than `limit` characters, its middle is left out."""
    if not text.isprintable():
        text = "".join(c if c.isprintable() else c.encode("unicode_escape").decode() for c in text)
    if limit is not None and len(text) > limit:
        gap = len(text) - limit
        head = limit * 2 // 3
        text = f"{text[:head]} ...[{gap} characters left out]... {text[head + gap :]}"
    return text


def count(number: int, noun: str, plural: str = "") -> str:
    """`number` and `noun`, plural unless it is one: "1 transfer", "2 transfers", "0 transfers"
    (`plural` for a noun that does not just take an s: count(2, "entry", "entries"))."""
    return f"{number} {noun if number == 1 else plural or noun + 's'}"
