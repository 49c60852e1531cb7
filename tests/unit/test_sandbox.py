"""The host-side confinement of a guest process (roadtest/machine/sandbox.py), without a guest.

The launcher runs a shell in place of UML; what the shell can and cannot do
is what UML, and kernel code running in it, can and cannot do.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from roadtest.machine import sandbox

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="confines as root here")


def confined(writable: Path, script: str, *extra: str) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-I", "-S", sandbox.__file__, "--writable", str(writable), *extra]
    return subprocess.run(
        [*argv, "--", "/bin/sh", "-c", script], capture_output=True, text=True, timeout=30
    )


def test_writes_land_in_the_writable_directory_only(tmp_path: Path) -> None:
    work, outside = tmp_path / "work", tmp_path / "outside"
    work.mkdir()
    outside.mkdir()
    result = confined(
        work, f"echo in > {work}/file; echo out > {outside}/file; touch /tmp/roadtest-sbx-probe"
    )
    assert (work / "file").read_text() == "in\n"
    assert not (outside / "file").exists()
    assert not Path("/tmp/roadtest-sbx-probe").exists()
    assert result.stderr.count("Read-only file system") == 2


def test_no_capability_survives_exec(tmp_path: Path) -> None:
    result = confined(tmp_path, "grep -E '^(Cap|NoNewPrivs)' /proc/self/status")
    fields = dict(line.split(":\t") for line in result.stdout.splitlines())
    assert fields == {
        "CapInh": "0000000000000000",
        "CapPrm": "0000000000000000",
        "CapEff": "0000000000000000",
        "CapBnd": "0000000000000000",
        "CapAmb": "0000000000000000",
        "NoNewPrivs": "1",
    }


def test_mounts_cannot_be_made_writable_again(tmp_path: Path) -> None:
    work, probe = tmp_path / "work", tmp_path / "outside"
    work.mkdir()
    probe.mkdir()
    result = confined(
        work,
        f"mount -o remount,rw / ; mount -t tmpfs none {probe}; "
        f"unshare -Urm sh -c 'mount -o remount,rw / && touch {probe}/x'; "
        f"unshare -Urm sh -c 'mount -o remount,bind,rw {probe} && touch {probe}/y'; true",
    )
    assert list(probe.iterdir()) == [], result.stderr


def test_no_host_network(tmp_path: Path) -> None:
    result = confined(tmp_path, "cat /proc/net/dev")
    interfaces = [line.split(":")[0].strip() for line in result.stdout.splitlines()[2:]]
    assert interfaces == ["lo"]


def test_pinned_to_the_cpu_asked_for(tmp_path: Path) -> None:
    result = confined(tmp_path, "grep Cpus_allowed_list /proc/self/status", "--cpu", "0")
    assert result.stdout.split() == ["Cpus_allowed_list:", "0"]


@pytest.mark.parametrize(
    "args",
    [
        [],
        ["--writable"],
        ["--writable", "/nonexistent/roadtest", "--", "/bin/true"],
        ["--writable", "/etc/hostname", "--", "/bin/true"],
        ["--writable", "/tmp", "--cpu", "x", "--", "/bin/true"],
        ["--writable", "/tmp", "--", "/nonexistent/program"],
    ],
)
def test_bad_usage_is_one_line_and_status_126(args: list[str]) -> None:
    result = subprocess.run(
        [sys.executable, "-I", "-S", sandbox.__file__, *args],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert result.returncode == 126
    assert result.stdout == ""
    assert len(result.stderr.splitlines()) == 1
    assert result.stderr.startswith("roadtest sandbox: ")
