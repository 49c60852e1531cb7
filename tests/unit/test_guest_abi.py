"""The agent takes its syscall numbers from the architecture it runs on (the guest's), found
by os.uname().machine in roadtest/guest/abi.py, not from x86-64 constants."""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import Any

import pytest

from roadtest.arch.um import UM
from roadtest.guest import abi, agent


class FakeLibc:
    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []

    def syscall(self, *args: Any) -> int:
        self.calls.append(args)
        return 0


@pytest.fixture
def libc(monkeypatch: pytest.MonkeyPatch) -> FakeLibc:
    fake = FakeLibc()
    monkeypatch.setattr(agent, "_libc", fake)
    return fake


def as_machine(monkeypatch: pytest.MonkeyPatch, machine: str) -> None:
    real = os.uname()
    fake = os.uname_result((real.sysname, real.nodename, real.release, real.version, machine))
    monkeypatch.setattr(os, "uname", lambda: fake)


@pytest.mark.parametrize(
    ("machine", "finit_module", "delete_module"),
    [
        # arch/x86/entry/syscalls/syscall_64.tbl
        ("x86_64", 313, 176),
        # include/uapi/asm-generic/unistd.h (arm64)
        ("aarch64", 273, 106),
    ],
)
def test_module_syscalls_use_the_guests_numbers(
    monkeypatch: pytest.MonkeyPatch,
    libc: FakeLibc,
    tmp_path: Path,
    machine: str,
    finit_module: int,
    delete_module: int,
) -> None:
    as_machine(monkeypatch, machine)
    ko = tmp_path / "widget.ko"
    ko.write_bytes(b"")
    agent.load_module(str(ko), "debug=1")
    agent.remove_module("widget")
    assert [call[0] for call in libc.calls] == [finit_module, delete_module]
    assert libc.calls[0][2] == b"debug=1" and libc.calls[1][1] == b"widget"


def test_a_guest_without_a_table_gets_enosys_not_a_wrong_syscall(
    monkeypatch: pytest.MonkeyPatch, libc: FakeLibc
) -> None:
    as_machine(monkeypatch, "pdp11")
    reply = agent.handle({"op": "remove_module", "name": "widget"})
    assert reply["errno"] == errno.ENOSYS and "pdp11" in reply["msg"]
    assert libc.calls == []


def test_the_uml_target_names_a_known_guest_abi() -> None:
    assert abi.for_machine(UM.guest_machine).syscall("finit_module") == 313
