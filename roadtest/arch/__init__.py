"""Guest architectures: one small data object per target, as kunit.py's qemu_configs/<arch>.py.

Everything that differs between the kernels roadtest builds and boots is a
field of a `Target`, written once in its own module (um.py); the kernel
build, out-of-tree module builds and the machines read it from there.

    from roadtest.arch.um import UM
    make = ["make", *UM.make_args(), ...]
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

_NOT_BUILD_INPUTS = ("isa_ports",)


@dataclass(frozen=True)
class Target:
    """What building a guest kernel for one architecture, and talking to it, needs to know."""

    name: str  # names the target to users (`roadtest build` prints it)
    make_arch: str  # kbuild's ARCH=
    cross_compile: str  # kbuild's CROSS_COMPILE= ("": the host's toolchain)
    defconfig: str  # the make target the configuration starts from
    base_config: Path  # roadtest's base fragment, relative to the checkout
    build_targets: tuple[str, ...]  # what `make` builds (the image and the modules)
    image: Path  # what the machine boots, relative to the build directory
    # os.uname().machine in the guest: the key of its syscall numbers and struct layouts in
    # roadtest.guest.abi (which the agent imports inside the guest, where this package is not).
    guest_machine: str
    # Whether the machine has the legacy ISA I/O ports (a Super-I/O chip at 0x2e): QEMU's
    # pc does. UML's HAS_IOPORT comes from PCI over virtio, and an inb() or outb() of an
    # ISA port WARNs there (lib/logic_iomem.c). What the machine runs, not what is built:
    # not in key_data.
    isa_ports: bool = True

    def make_args(self) -> list[str]:
        """ARCH= and CROSS_COMPILE=, for every kbuild command of this target."""
        args = [f"ARCH={self.make_arch}"]
        if self.cross_compile:
            args.append(f"CROSS_COMPILE={self.cross_compile}")
        return args

    def key_data(self) -> bytes:
        """What a kernel cache key takes from the target: two targets never share a build."""
        fields = {
            k: str(v) if isinstance(v, Path) else v
            for k, v in asdict(self).items()
            if k not in _NOT_BUILD_INPUTS
        }
        return json.dumps(fields, sort_keys=True).encode()
