"""Bad --roadtest-cpu and --roadtest-workdir values stop the run with one line, before any test.

They used to give the same traceback once per test ("34 errors").
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = """
def test_one(guest):
    pass

def test_two(guest):
    pass
"""


def pytest_run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "test_user.py").write_text(TESTS)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args, "test_user.py"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        # No kernel either: a run that got past the options would stop at once.
        env={
            **os.environ,
            "ROADTEST_CACHE": str(tmp_path / "cache"),
            "ROADTEST_KERNEL_SOURCE": str(tmp_path / "missing.tar.xz"),
        },
        timeout=120,
        check=False,
    )


def one_line(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode != 0
    output = (result.stdout + result.stderr).strip().splitlines()
    assert len(output) == 1, result.stdout + result.stderr
    assert "Traceback" not in output[0]
    return output[0]


@pytest.mark.parametrize("cpu", ["99", "-1", str(os.cpu_count() or 1)])
def test_cpu_that_is_not_ours(tmp_path: Path, cpu: str) -> None:
    line = one_line(pytest_run(tmp_path, f"--roadtest-cpu={cpu}"))
    assert f"roadtest: --roadtest-cpu {cpu}: not a CPU this process may run on" in line


def test_unknown_machine(tmp_path: Path) -> None:
    line = one_line(pytest_run(tmp_path, "--roadtest-machine=pdp11"))
    assert "roadtest: unknown machine 'pdp11': roadtest has um" in line


def test_workdir_that_cannot_be_created(tmp_path: Path) -> None:
    line = one_line(pytest_run(tmp_path, "--roadtest-workdir=/proc/x"))
    assert "roadtest: --roadtest-workdir /proc/x: cannot create it" in line


def test_workdir_that_is_a_file(tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("")
    line = one_line(pytest_run(tmp_path, f"--roadtest-workdir={tmp_path / 'afile'}"))
    assert line.endswith("afile: not a directory")


def test_workdir_too_long_for_a_socket_address(tmp_path: Path) -> None:
    # sun_path holds 108 bytes with the NUL (unix(7)); this leaves no room for the sockets.
    long = tmp_path / ("d" * max(1, 108 - len(os.fsencode(tmp_path))))
    line = one_line(pytest_run(tmp_path, f"--roadtest-workdir={long}"))
    assert "too long for the guest's sockets" in line and "at most 107" in line
    assert not long.exists()  # nothing made for a run that never starts


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="needs two CPUs")
def test_a_cpu_outside_the_current_affinity_is_still_valid(tmp_path: Path) -> None:
    # The harness tests run roadtest from a process pinned to its own guest's CPU, and
    # give the inner run the other one.
    (tmp_path / "test_user.py").write_text(TESTS)
    result = subprocess.run(
        ["taskset", "-c", "0", sys.executable, "-m", "pytest", "-p", "no:cacheprovider"]
        + ["--roadtest-cpu=1", "--co", "-q", "test_user.py"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_ktap_file_whose_directory_cannot_be_made(tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("")
    line = one_line(pytest_run(tmp_path, f"--roadtest-ktap={tmp_path / 'a-file' / 'run.ktap'}"))
    assert "roadtest: --roadtest-ktap" in line and "cannot make its directory" in line


def test_ktap_file_that_is_a_directory(tmp_path: Path) -> None:
    line = one_line(pytest_run(tmp_path, f"--roadtest-ktap={tmp_path}"))
    assert line.endswith(
        f"--roadtest-ktap {tmp_path}: is a directory: give the results file's name"
    )


@pytest.mark.parametrize("given", ["missing.ko", "."])
def test_module_that_is_not_a_file(tmp_path: Path, given: str) -> None:
    # Named by the option and known before the run, not "not a kernel module: [Errno 2]"
    # from the session's start.
    line = one_line(pytest_run(tmp_path, f"--roadtest-module={given}"))
    why = "no such file" if given == "missing.ko" else "not a file"
    assert line.endswith(f"roadtest: --roadtest-module {given}: {why}")


def test_coverage_and_sanitizers_are_two_kernels(tmp_path: Path) -> None:
    line = one_line(
        pytest_run(tmp_path, f"--roadtest-coverage={tmp_path / 'cov'}", "--roadtest-sanitizers")
    )
    assert "--roadtest-coverage and --roadtest-sanitizers each run a kernel of their own" in line


@pytest.mark.parametrize(
    ("args", "mode"),
    [
        ((), "sim"),  # UML: simulated time unless asked otherwise
        (("--roadtest-machine=x86_64",), "real"),  # QEMU's clock is the host's
        (("--roadtest-time=travel",), "travel"),
        (("--roadtest-no-time-travel",), "real"),
    ],
)
def test_the_report_says_how_the_guests_clock_runs(
    tmp_path: Path, args: tuple[str, ...], mode: str
) -> None:
    result = pytest_run(tmp_path, "--collect-only", *args)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"roadtest time: {mode}\n" in result.stdout


def test_simulated_time_needs_uml(tmp_path: Path) -> None:
    line = one_line(pytest_run(tmp_path, "--roadtest-time=sim", "--roadtest-machine=x86_64"))
    assert "--roadtest-time=sim: the x86_64 machine's guests run only in: real" in line


def test_a_clock_the_machine_does_not_have_is_one_line(tmp_path: Path) -> None:
    # QEMU's clock is the host's: basic time-travel is UML's alone.
    result = pytest_run(
        tmp_path, "--collect-only", "--roadtest-machine=x86_64", "--roadtest-time=travel"
    )
    assert result.returncode == 4, result.stdout + result.stderr
    assert "--roadtest-time=travel: the x86_64 machine's guests run only in: real" in (
        one_line(result)
    )
