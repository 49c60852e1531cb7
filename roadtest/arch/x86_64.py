"""x86_64 under QEMU: a bzImage booted with -kernel, built from tinyconfig (kunit.py's
qemu_configs/x86_64.py, with roadtest's own base fragment)."""

from __future__ import annotations

from pathlib import Path

from roadtest.arch import Target

X86_64 = Target(
    name="x86_64",
    make_arch="x86_64",
    cross_compile="",
    defconfig="tinyconfig",
    base_config=Path("kernel-patches") / "x86_64.config",
    build_targets=("bzImage", "modules"),
    image=Path("arch") / "x86" / "boot" / "bzImage",
    guest_machine="x86_64",
)
