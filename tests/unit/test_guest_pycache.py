"""The bytecode the host compiles for the guest's Python (roadtest.machine.process):
the guest's init, started as the kernel starts it, loads every module it imports from
that bytecode instead of compiling it, and a host that cannot make it still boots."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import roadtest.guest
from roadtest.machine.process import guest_pycache, guest_python_path, init_args


@pytest.fixture(autouse=True)
def own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("ROADTEST_CACHE", str(tmp_path / "cache"))
    guest_pycache.cache_clear()
    yield
    guest_pycache.cache_clear()


def test_the_guests_init_imports_nothing_it_must_compile(tmp_path: Path) -> None:
    args = init_args(sys.executable)
    options = args[1 : args.index(str(Path(roadtest.guest.__file__).with_name("init.py")))]
    assert "-I" in options and "-S" in options
    # What init imports at boot and what the agent imports when asked, as the guest's
    # Python would (-v: each module says whether it came from bytecode or source).
    code = (
        f"import sys; sys.path[0:0] = {guest_python_path().split(':')!r}; "
        "import roadtest.guest.init, subprocess, termios, traceback"
    )
    out = subprocess.run(
        [sys.executable, *options, "-v", "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONDONTWRITEBYTECODE": "1"},  # ignored under -I: it changes nothing
    ).stderr
    compiled = re.findall(r"^# code object from '?([^'\n]+\.py)'?$", out, re.MULTILINE)
    loaded = re.findall(r"^# code object from '?([^'\n]+\.pyc)'?$", out, re.MULTILINE)
    assert compiled == []
    agent = Path(roadtest.guest.__file__).with_name(f"agent.{sys.implementation.cache_tag}.pyc")
    assert f"{tmp_path}/cache/guest-pycache{agent}" in loaded, out[-2000:]


def test_a_host_that_cannot_compile_leaves_the_guest_to_compile(tmp_path: Path) -> None:
    args = init_args(str(tmp_path / "no-such-python"))
    assert args == ["--", "-I", "-S", str(Path(roadtest.guest.__file__).with_name("init.py"))]
