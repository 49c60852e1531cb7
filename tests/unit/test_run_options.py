"""The run options: one table, every spelling alike, one checked value, and every bad
combination a usage error in one line before anything is built."""

from __future__ import annotations

from pathlib import Path

import pytest

from roadtest.errors import UsageError
from roadtest.kernel.variants import COVERAGE, MAIN, SANITIZERS
from roadtest.machine.base import TimeMode
from roadtest.run_options import OPTIONS, RunOptions, as_arguments, take


@pytest.mark.parametrize(
    "args",
    [
        ["--roadtest-machine", "x86_64"],
        ["--roadtest-machine=x86_64"],
        ["--machine", "x86_64"],
        ["--machine=x86_64"],
    ],
)
def test_every_spelling_of_an_option_is_the_same(args: list[str]) -> None:
    values, rest = take([*args, "-k", "lux", "tests/drivers"])
    assert values == {"roadtest_machine": "x86_64"}
    assert rest == ["-k", "lux", "tests/drivers"]  # pytest's, in their order
    assert as_arguments(values) == ["--roadtest-machine=x86_64"]


def test_short_flags_stand_for_their_option() -> None:
    values, _ = take(["--coverage", "--roadtest-module", "a.ko", "--roadtest-module=b.ko"])
    assert values == {"roadtest_coverage": "roadtest-coverage", "roadtest_module": ["a.ko", "b.ko"]}
    values, _ = take(["--sanitizers"])
    assert values == {"roadtest_sanitizers": True}


@pytest.mark.parametrize("args", [["--machine"], ["--machine", "--sanitizers"]])
def test_an_option_without_its_value_is_a_usage_error(args: list[str]) -> None:
    with pytest.raises(UsageError, match="--machine needs a value"):
        take(args)


def test_every_option_has_one_destination() -> None:
    dests = [o.dest for o in OPTIONS]
    assert len(dests) == len(set(dests))
    assert all(o.name.startswith("--roadtest-") for o in OPTIONS)


@pytest.mark.parametrize(
    ("values", "interactive", "mode"),
    [
        ({}, False, TimeMode.SIM),  # UML: simulated time by default
        ({}, True, TimeMode.TRAVEL),  # a terminal's input has no time: travel
        ({"roadtest_machine": "x86_64"}, False, TimeMode.REAL),  # QEMU: the host's clock
        ({"roadtest_no_time_travel": True}, False, TimeMode.REAL),
        ({"roadtest_time": "travel"}, False, TimeMode.TRAVEL),
    ],
)
def test_the_clock(values: dict[str, object], interactive: bool, mode: TimeMode) -> None:
    assert RunOptions.parse(values, interactive=interactive).time is mode


@pytest.mark.parametrize(
    ("values", "variant"),
    [
        ({}, MAIN),
        ({"roadtest_coverage": "cov"}, COVERAGE),
        ({"roadtest_sanitizers": True}, SANITIZERS),
    ],
)
def test_the_kernel_variant(values: dict[str, object], variant: object) -> None:
    assert RunOptions.parse(values).variant is variant


def _usage_error(values: dict[str, object], interactive: bool = False) -> str:
    with pytest.raises(UsageError) as raised:
        RunOptions.parse(values, interactive=interactive)
    line = str(raised.value)
    assert "\n" not in line
    return line


def test_bad_combinations_are_one_line(tmp_path: Path) -> None:
    assert "cannot be used together" in _usage_error(
        {"roadtest_record": str(tmp_path), "roadtest_replay": str(tmp_path)}
    )
    assert "choose one" in _usage_error({"roadtest_coverage": "c", "roadtest_sanitizers": True})
    assert "its devices lie" in _usage_error(
        {"roadtest_hostile": True, "roadtest_record": str(tmp_path)}
    )
    assert "run only in: real" in _usage_error(
        {"roadtest_machine": "x86_64", "roadtest_time": "sim"}
    )
    assert "not built for x86_64" in _usage_error(
        {"roadtest_machine": "x86_64", "roadtest_sanitizers": True}
    )
    assert "no interactive terminal" in _usage_error({"roadtest_time": "sim"}, interactive=True)
    assert "unknown machine 'arm'" in _usage_error({"roadtest_machine": "arm"})


def test_what_a_run_would_trip_over_is_found_first(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere"
    assert "no such directory" in _usage_error({"roadtest_replay": str(missing)})
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    assert "--roadtest-trace-cmd" in _usage_error({"roadtest_trace_cmd": str(blocker / "d")})
    not_elf = tmp_path / "driver.ko"
    not_elf.write_text("not a module")
    assert "not an ELF file" in _usage_error({"roadtest_module": [str(not_elf)]})
    assert "no such file" in _usage_error({"roadtest_module": [str(missing)]})
    assert "not a number" in _usage_error({"roadtest_boot_timeout": "soon"})
