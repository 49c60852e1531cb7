"""`--vm qemu` without a VM: which arguments it takes, which host directories it lets the
VM write (and no others), and what it refuses."""

from __future__ import annotations

from pathlib import Path

import pytest

from roadtest.errors import RoadtestError
from roadtest.vm.command import check_supported, outputs, take_vm


def test_vm_is_taken_out_of_the_commands_arguments() -> None:
    assert take_vm(["--vm", "qemu", "-k", "lux"]) == (["-k", "lux"], "qemu")
    assert take_vm(["tests/x.py", "--vm=qemu"]) == (["tests/x.py"], "qemu")
    assert take_vm(["-k", "lux"]) == (["-k", "lux"], None)


@pytest.mark.parametrize("argv", [["--vm", "docker"], ["--vm"], ["--vm="]])
def test_an_unknown_vm_is_one_clear_error(argv: list[str]) -> None:
    with pytest.raises(RoadtestError, match="--vm: .* is not one of: qemu"):
        take_vm(argv)


def test_a_run_writes_nothing_but_its_work_directory() -> None:
    assert outputs(["tests/drivers", "-k", "lux"]) == []


def test_record_and_replay_may_write_their_own_directories_only(tmp_path: Path) -> None:
    # record stages traces in a directory of its own (the host switches them in place);
    # replay's player writes its results to one.
    staging, results = tmp_path / ".traces.record-1" / "staging", tmp_path / "results"
    dirs = outputs([f"--roadtest-record={staging}", f"--roadtest-replay-results={results}"])
    assert dirs == [staging, results]
    assert staging.is_dir() and results.is_dir()


def test_report_files_may_be_written_where_they_go(tmp_path: Path) -> None:
    ktap, junit = tmp_path / "k" / "run.ktap", tmp_path / "j" / "run.xml"
    dirs = outputs([f"--roadtest-ktap={ktap}", "--junitxml", str(junit)])
    assert dirs == [ktap.parent, junit.parent]


@pytest.mark.parametrize(
    ("option", "what"),
    [
        ("--sanitizers", "not the sanitizers one"),
        ("--coverage", "not the coverage one"),
        ("--machine=x86_64", "not the x86_64 machine"),
        ("--roadtest-sanitizers", "not the sanitizers one"),
    ],
)
def test_other_kernels_are_refused_in_one_line(option: str, what: str) -> None:
    with pytest.raises(RoadtestError, match=f"--vm qemu runs the main UML kernel: {what}"):
        check_supported(["tests/drivers", option])


@pytest.mark.parametrize("given", [["--roadtest-time=travel"], ["--roadtest-time", "travel"]])
def test_basic_time_travel_is_refused_in_one_line(given: list[str]) -> None:
    with pytest.raises(RoadtestError, match="basic time-travel panics in the VM"):
        check_supported(["tests/drivers", *given])
    check_supported(["tests/drivers", "--roadtest-time=real"])  # real time is fine
