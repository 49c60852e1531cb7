"""A User-Mode Linux guest: boot, the agent channel, console logs, clean shutdown.

`UML` is the machine type (--roadtest-machine um): a kernel for roadtest.arch.um,
virtio devices over virtio_uml, and `UMLGuest`s.

UML's kernel is the guest's host process (process.py: confined by sandbox.py,
ended with everything it forked); hostfs is its root, read-only.
"""

from __future__ import annotations

import shutil
import socket
from collections.abc import Sequence
from pathlib import Path

from roadtest.arch.um import UM
from roadtest.machine import gdb
from roadtest.machine.base import (
    BootConfig,
    GuestError,
    MachineType,
    TimeMode,
    VirtioNode,
    device_node,
)
from roadtest.machine.guest_python import python_path
from roadtest.machine.process import (
    COMMON_BOOT_ARGS,
    ProcessGuest,
    confined,
    init_args,
)


class UMLGuest(ProcessGuest):
    """One UML guest, confined on the host by sandbox.py."""

    name = "UML"

    def __init__(self, config: BootConfig) -> None:
        super().__init__(config)
        self.umid = "guest"
        self.terminal_tty = "/dev/tty2" if config.terminal is not None else ""
        self._host_end: socket.socket | None = None
        self._guest_end: socket.socket | None = None

    def command(self, channel_fd: int | None) -> list[str]:
        """UML's command line; `channel_fd` is the host fd that becomes the guest's tty1 (the
        agent's channel; None under simulated time, where it is the virtio console's hvc0),
        and the config's terminal (if any) its tty2."""
        cfg = self.config
        args = [
            str(cfg.image),
            f"mem={cfg.mem}",
            "rootfstype=hostfs",
            "ro",
            f"init={cfg.python}",
            "con=null",
            "con0=null,fd:1",
            *([f"con1=fd:{channel_fd}"] if channel_fd is not None else []),
            *([f"con2=fd:{cfg.terminal}"] if cfg.terminal is not None else []),
            "ssl=null",
            f"uml_dir={self.workdir}",
            f"umid={self.umid}",
            *COMMON_BOOT_ARGS,
        ]
        if cfg.dtb is not None:
            args.append(f"dtb={cfg.dtb}")
        if cfg.time == "sim":
            if cfg.time_socket is None:
                raise GuestError("simulated time needs the calendar's socket")
            args.append(f"time-travel=ext:{cfg.time_socket}")
            # Kernel messages stay on tty0: without this, the agent's hvc0 is the console.
            args.append("console=tty0")
        elif cfg.time == "travel":
            # The guest clock jumps over idle time: driver delays cost nothing.
            args.append("time-travel")
        args += cfg.extra_args
        args += [
            f"ROADTEST_WORK={self.workdir}",
            f"ROADTEST_AGENT_TTY={'/dev/tty1' if channel_fd is not None else '/dev/hvc0'}",
            f"ROADTEST_PYTHONPATH={python_path()}",
            *init_args(cfg.python),
        ]
        # The guest is untrusted: confine UML on the host (sandbox.py says how).
        return confined(cfg, [self.workdir], args)

    def program(self) -> list[str]:
        if self.config.agent_channel is not None:
            return self.command(None)
        assert self._guest_end is not None
        return self.command(self._guest_end.fileno())

    def prepare(self) -> None:
        self._remove_uml_dir()

    def open_channel(self) -> tuple[int, ...]:
        if self.config.agent_channel is not None:
            self._host_end = self.config.agent_channel()
            return self._terminal_fds()
        self._host_end, self._guest_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        return (self._guest_end.fileno(), *self._terminal_fds())

    def connect_channel(self, deadline: float) -> socket.socket:
        assert self._host_end is not None
        self._close_guest_end()
        host_end, self._host_end = self._host_end, None
        return host_end

    def _close_guest_end(self) -> None:
        if self._guest_end is not None:
            self._guest_end.close()
            self._guest_end = None

    def gdb_command(self, module_dirs: Sequence[Path]) -> str:
        if self.proc is None:
            raise GuestError("the guest is not running")
        if not (self.config.image.parent / gdb.SCRIPTS).exists():
            raise GuestError(
                f"the kernel has no gdb scripts ({self.config.image.parent / gdb.SCRIPTS}): "
                "build it with CONFIG_GDB_SCRIPTS=y and debug info"
            )
        # The sandbox execs UML in place: the process roadtest started is UML's kernel.
        return gdb.shell_line(gdb.command(self.config.image, self.proc.pid, module_dirs))

    def debugger_attached(self) -> bool:
        return self.proc is not None and gdb.tracer(self.proc.pid) != 0

    def _terminal_fds(self) -> tuple[int, ...]:
        return () if self.config.terminal is None else (self.config.terminal,)

    def cleanup(self) -> None:
        self._close_guest_end()
        if self._host_end is not None:
            self._host_end.close()
            self._host_end = None
        self._remove_uml_dir()

    def _remove_uml_dir(self) -> None:
        shutil.rmtree(self.workdir / self.umid, ignore_errors=True)


class UMLMachine(MachineType):
    name = "um"
    target = UM
    gdb = True
    time_modes = (TimeMode.SIM, TimeMode.TRAVEL, TimeMode.REAL)
    variants = ("main", "coverage", "sanitizers")

    def describe(self) -> str:
        return "um (User-Mode Linux on the host)"

    def devicetree_root(self, virtio: Sequence[VirtioNode]) -> str:
        # virtio_uml: one "virtio,uml" platform node per device, holding its socket.
        transports = "".join(
            f"    virtio@{i} {{\n"
            f'        compatible = "virtio,uml";\n'
            f'        socket-path = "{node.socket}";\n'
            f"        virtio-device-id = <{node.device_id:#x}>;\n"
            f"{device_node(node, '        ')}"
            "    };\n"
            for i, node in enumerate(virtio)
        )
        # A root without a compatible makes of_have_populated_dt() false, and the regulator
        # core then refuses dummy supplies: drivers with an unnamed supply fail probe.
        return (
            "/ {\n"
            '    compatible = "roadtest,uml";\n'
            "    #address-cells = <2>;\n"
            "    #size-cells = <2>;\n"
            f"{transports}"
            "};\n"
        )

    def machine(self, config: BootConfig) -> UMLGuest:
        return UMLGuest(config)


UML = UMLMachine()
