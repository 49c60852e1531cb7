"""What the host finds for the guest's Python (roadtest.machine.guest_python): the
guest's init, started as the kernel starts it, loads every module it imports from
bytecode the host compiled; the files it reads at start are listed by the names the
dynamic loader used; a host that cannot run its Python still boots."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import roadtest.guest
from roadtest.machine.guest_python import GUEST_IMPORTS, guest_python, python_path
from roadtest.machine.process import init_args

INIT = str(Path(roadtest.guest.__file__).with_name("init.py"))


@pytest.fixture(autouse=True)
def own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("ROADTEST_CACHE", str(tmp_path / "cache"))
    guest_python.cache_clear()
    yield
    guest_python.cache_clear()


def test_the_guests_init_imports_nothing_it_must_compile(tmp_path: Path) -> None:
    args = init_args(sys.executable)
    options = args[1 : args.index(INIT)]
    assert "-I" in options and "-S" in options
    # What init imports at boot and what the agent imports when asked, as the guest's
    # Python would (-v: each module says whether it came from bytecode or source).
    code = f"import sys; sys.path[0:0] = {python_path().split(':')!r}; import {GUEST_IMPORTS}"
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


def test_the_files_its_start_reads_are_listed() -> None:
    found = guest_python(sys.executable)
    assert found is not None
    files = set(found.files)
    assert sys.executable in files
    agent = Path(roadtest.guest.__file__).with_name("agent.py")
    assert str(agent) in files
    assert any(f.startswith(str(found.pycache)) and "agent." in f for f in files)
    # The C library by the name the dynamic loader opened it under (a link, on a
    # merged-/usr system), and the loader's cache that name came from.
    libc = [f for f in files if Path(f).name == "libc.so.6"]
    assert libc and all(Path(f).is_absolute() for f in libc)
    assert "/etc/ld.so.cache" in files
    # _ctypes (init's ctypes) is a shared object of the standard library's.
    assert any(Path(f).name.startswith("_ctypes.") for f in files)


def test_a_host_that_cannot_run_its_python_leaves_the_guest_to_compile(tmp_path: Path) -> None:
    assert guest_python(str(tmp_path / "no-such-python")) is None
    assert init_args(str(tmp_path / "no-such-python")) == ["--", "-I", "-S", INIT]
