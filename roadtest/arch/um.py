"""User-Mode Linux on x86_64: the kernel is a host program (vmlinux) run under the sandbox."""

from __future__ import annotations

from pathlib import Path

from roadtest.arch import Target

UM = Target(
    name="um",
    make_arch="um",
    cross_compile="",
    defconfig="defconfig",
    base_config=Path("kernel-patches") / "base.config",
    # scripts_gdb: vmlinux-gdb.py for --roadtest-gdb (only `make all` builds it otherwise).
    build_targets=("vmlinux", "modules", "scripts_gdb"),
    image=Path("vmlinux"),
    # UML's uname reports its host's machine, and it uses the host's syscall table.
    guest_machine="x86_64",
    isa_ports=False,
)
