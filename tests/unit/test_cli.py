"""The roadtest command's surface: subcommands and user errors (no guest, no kernel build)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROADTEST = Path(sys.executable).with_name("roadtest")


def roadtest(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(ROADTEST), *args],
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        check=False,
    )


def test_help_lists_the_subcommands() -> None:
    result = roadtest("--help")
    assert result.returncode == 0
    assert "build" in result.stdout and "run" in result.stdout


def test_missing_kernel_source_is_one_line_and_nonzero(tmp_path: Path) -> None:
    result = roadtest(
        "build",
        ROADTEST_KERNEL_SOURCE=str(tmp_path / "linux-source-6.12.tar.xz"),
        ROADTEST_CACHE=str(tmp_path / "cache"),
    )
    assert result.returncode != 0
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "not found" in lines[0] and "ROADTEST_KERNEL_SOURCE" in lines[0]
    assert "Traceback" not in result.stderr


def test_run_fails_the_same_way_before_starting_pytest(tmp_path: Path) -> None:
    result = roadtest(
        "run",
        "-q",
        "--co",
        ROADTEST_KERNEL_SOURCE=str(tmp_path / "missing.tar.xz"),
        ROADTEST_CACHE=str(tmp_path / "cache"),
    )
    assert result.returncode != 0
    assert result.stderr.strip().count("\n") == 0 and "not found" in result.stderr


def test_build_takes_one_variant() -> None:
    result = roadtest("build", "--coverage", "--sanitizers")
    assert result.returncode == 4
    assert "not allowed with argument" in result.stderr


def test_an_unknown_machine_is_one_line_for_every_command() -> None:
    for command in (
        ["build", "--machine", "arm"],
        ["run", "--machine", "arm", "tests/drivers"],
        ["fuzz", "--machine", "arm", "tests/drivers"],
        ["replay", "--machine=arm", "--golden", "traces"],
    ):
        result = roadtest(*command)
        assert result.returncode == 4, command
        assert result.stderr.strip() == "roadtest: unknown machine 'arm': roadtest has um, x86_64"


def test_vm_takes_only_qemu_and_only_the_main_kernel() -> None:
    result = roadtest("run", "--vm", "docker", "tests/drivers")
    assert result.returncode == 4
    assert result.stderr.strip() == "roadtest: --vm: 'docker' is not one of: qemu"
    result = roadtest("run", "--vm", "qemu", "--sanitizers", "tests/drivers")
    assert result.returncode == 4 and "runs the main UML kernel" in result.stderr


def test_record_writes_its_traces_itself(tmp_path: Path) -> None:
    """Given to `roadtest record`, --roadtest-record sent the traces past the verb, which
    then said nothing was recorded: one usage line now, before anything runs."""
    for option in ("--roadtest-record", "--roadtest-replay"):
        result = roadtest("record", f"{option}={tmp_path}", "tests/drivers/hwmon/test_tmp102.py")
        assert result.returncode == 4, option
        assert result.stderr.strip() == (
            f"roadtest: {option}: `roadtest record` writes the traces itself; use --out DIR"
        )
    assert list(tmp_path.iterdir()) == []
