"""`--vm qemu` without a VM: which arguments it takes, which host directories it lets the
VM write (and no others), and what it refuses."""

from __future__ import annotations

from pathlib import Path

import pytest

from roadtest.errors import RoadtestError
from roadtest.testing.vm_command import check_supported, outputs, take_vm


def test_vm_is_taken_out_of_the_commands_arguments() -> None:
    assert take_vm(["--vm", "qemu", "-k", "lux"]) == (["-k", "lux"], "qemu")
    assert take_vm(["tests/x.py", "--vm=qemu"]) == (["tests/x.py"], "qemu")
    assert take_vm(["-k", "lux"]) == (["-k", "lux"], None)


@pytest.mark.parametrize("argv", [["--vm", "docker"], ["--vm"], ["--vm="]])
def test_an_unknown_vm_is_one_clear_error(argv: list[str]) -> None:
    with pytest.raises(RoadtestError, match="--vm: .* is not one of: qemu"):
        take_vm(argv)


def test_a_run_writes_nothing_but_its_work_directory(tmp_path: Path) -> None:
    assert outputs("run", ["tests/drivers", "-k", "lux"], tmp_path / "traces") == []


def test_record_may_write_its_traces_and_their_staging_beside_them(tmp_path: Path) -> None:
    out = tmp_path / "golden" / "traces"
    assert outputs("record", ["--out", str(out)], tmp_path / "default") == [out.parent]
    assert out.is_dir()
    # Without --out: the default, traces/ of the checkout.
    assert outputs("record", [], tmp_path / "repo" / "traces") == [tmp_path / "repo"]


def test_report_files_may_be_written_where_they_go(tmp_path: Path) -> None:
    ktap, junit = tmp_path / "k" / "run.ktap", tmp_path / "j" / "run.xml"
    dirs = outputs("run", [f"--roadtest-ktap={ktap}", "--junitxml", str(junit)], tmp_path)
    assert dirs == [ktap.parent, junit.parent]


@pytest.mark.parametrize(
    "option", ["--sanitizers", "--coverage", "--machine=x86_64", "--roadtest-sanitizers"]
)
def test_other_kernels_are_refused_in_one_line(option: str) -> None:
    with pytest.raises(RoadtestError, match=f"--vm qemu runs the main UML kernel: {option}"):
        check_supported(["tests/drivers", option])
