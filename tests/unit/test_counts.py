"""Counts in what roadtest prints take the noun's singular for one ("1 transfer", never
"1 transfers"), in English's plural otherwise, zero included."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import Roadtest, cli_runner, raw_trace

from roadtest.models.base import SimpleSMBusModel
from roadtest.text import count
from roadtest.trace.format import Header


@pytest.fixture
def roadtest(capsys: pytest.CaptureFixture[str]) -> Roadtest:
    return cli_runner(capsys)


def test_one_is_singular_and_every_other_count_plural() -> None:
    assert count(1, "transfer") == "1 transfer"
    assert count(0, "transfer") == "0 transfers"
    assert count(2, "transfer") == "2 transfers"
    assert count(1, "entry", "entries") == "1 entry"
    assert count(3, "entry", "entries") == "3 entries"


def test_a_diff_of_one_event_says_event(tmp_path: Path, roadtest: Roadtest) -> None:
    header = Header(kernel="k", test="tests/t.py::test_a", address=0x48, compatible="ti,x")
    marker = {"kind": "marker", "what": "bind", "detail": None}
    a = raw_trace(tmp_path / "a.rtrace", header, marker)
    b = raw_trace(tmp_path / "b.rtrace", header, marker)
    result = roadtest("trace", "diff", a, b)
    assert result.returncode == 0, result
    assert result.stdout.splitlines()[-1] == "identical: 1 event"
    c = raw_trace(tmp_path / "c.rtrace", header, {**marker, "what": "unbind"})
    result = roadtest("trace", "diff", a, c)
    assert result.stdout.splitlines()[-1] == f"1 of 1 event differ ({a}: 1 event, {c}: 1)"


def test_a_register_written_once_says_time() -> None:
    model = SimpleSMBusModel(regs={0x02: 0}, regbytes=2)
    model.write(bytes([0x02, 0xEF, 0xBE]))
    with pytest.raises(AssertionError) as info:
        model.assert_reg_write_once(0x02, 0x1234)
    assert str(info.value).endswith("register 0x02 was written 1 time: 0xbeef")
