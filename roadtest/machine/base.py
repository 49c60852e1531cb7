"""What a machine is, for everything above it: the session, the plugin and the verdicts know
machines only through `MachineType` and `Machine`.

A `MachineType` (one per kind of guest, registered in registry.py) builds its
kernel, says how the guest's devicetree shows the backend's virtio devices,
and boots guests. A `Machine` is one guest: started, it gives the agent's
channel (`agent`), the console and kernel logs (`console`, `console_log`,
`kernel_log`), and tells whether it still runs (`alive`) and how it ended
(`exit_status`); `stop` powers it off, `kill` ends it now. A machine whose
type has `gdb` also says how gdb attaches to its kernel (`gdb_command`).
"""

from __future__ import annotations

import os
import socket
import sys
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

from roadtest.arch import Target
from roadtest.errors import RoadtestError
from roadtest.guest.client import AgentClient
from roadtest.kernel import Kernel, Variant, ensure_kernel
from roadtest.machine.console import Console


class GuestError(RoadtestError):
    """The guest failed to boot, crashed, or hung."""


class TimeMode(StrEnum):
    """How the guest's clock runs."""

    # Simulated time that roadtest owns (UML's time-travel=ext: the guest's clock moves only
    # when the backend's calendar says so). A terminal's input has no time in it, so an
    # interactive shell cannot run under it.
    SIM = "sim"
    # UML's basic time-travel: it skips idle time, but host load changes when timers fire.
    TRAVEL = "travel"
    # The host's clock (for timing-sensitive debugging; QEMU's only clock).
    REAL = "real"

    @property
    def takes_terminal_input(self) -> bool:
        return self is not TimeMode.SIM


TIME_MODES = tuple(mode.value for mode in TimeMode)


@dataclass(frozen=True)
class VirtioNode:
    """One backend device as the guest's devicetree declares it; the machine wraps it in its
    transport (UML: a virtio,uml node with the socket; QEMU: a PCI slot)."""

    label: str  # the node's name and label: fragments and phandles use &label
    device_id: int  # the virtio spec's device id
    socket: Path  # the backend's vhost-user socket for it
    properties: str  # devicetree properties of the device node itself


@dataclass
class BootConfig:
    """How to boot one guest; a machine ignores what it has no use for."""

    image: Path  # the kernel image (Kernel.image)
    workdir: Path  # the guest's logs and scratch; the one host path it may write
    dtb: Path | None = None
    # The backend's devices, in the devicetree's order: a machine whose transport is not
    # in the tree (QEMU's PCI devices) connects them itself.
    virtio: list[VirtioNode] = field(default_factory=list)
    cpu: int | None = 0  # the host CPU to pin the guest to
    mem: str = "128M"
    time: TimeMode = TimeMode.SIM
    # Under "sim": the calendar's socket (roadtest.simtime), and where the agent's channel
    # comes from (the backend's virtio console: a fresh host end for each guest).
    time_socket: Path | None = None
    agent_channel: Callable[[], socket.socket] | None = None
    # Told before the agent is asked to power the guest off: it will not wait for the test
    # again (under "sim", the guest's clock must then run on until it is off).
    before_poweroff: Callable[[], None] | None = None
    # The guest runs its agent with the host's Python, from the host's root.
    python: str = field(default_factory=lambda: os.path.realpath(sys.executable))
    extra_args: list[str] = field(default_factory=list)  # appended to the kernel command line
    # A host terminal (the guest's end of a pty) that becomes a tty in the guest
    # (Machine.terminal_tty), for an interactive shell; the tests' guests have none.
    terminal: int | None = None
    boot_timeout: float = 30.0
    call_timeout: float | None = 30.0  # None: no call into the guest times out (under gdb)


def device_node(node: VirtioNode, indent: str) -> str:
    """The device node (the virtio binding's "virtio,device<hex id>"), for a transport to wrap."""
    lines = [f'compatible = "virtio,device{node.device_id:x}";', *node.properties.splitlines()]
    body = "".join(f"{indent}    {line.strip()}\n" for line in lines if line.strip())
    return f"{indent}{node.label}: {node.label} {{\n{body}{indent}}};\n"


class Machine(ABC):
    """One guest. Use as a context manager, or start() then stop()."""

    name = "guest"  # what the kind of guest is called in messages ("UML")
    workdir: Path
    console_log: Path  # everything the guest printed
    kernel_log: Path  # the kernel's lines only
    console: Console | None = None  # live view of the console, once started
    release = ""  # the guest kernel's release, once booted
    terminal_tty = ""  # the guest's tty wired to BootConfig.terminal, e.g. "/dev/tty2"
    boot_seconds = 0.0

    @property
    @abstractmethod
    def agent(self) -> AgentClient:
        """The channel to the agent in the guest (GuestError when the guest does not run)."""

    @property
    @abstractmethod
    def alive(self) -> bool:
        """Running and answering: a guest whose agent timed out counts as dead (it hangs)."""

    @abstractmethod
    def start(self) -> None:
        """Boot, and return once the agent is ready (GuestError if it does not come up)."""

    def describe(self) -> str:
        """What ran the guest, for reports: the machine, its kernel, and its emulator."""
        return f"{self.name} {self.release}".strip()

    def flush_console(self, marker: str, since: int, timeout: float) -> None:
        """Make sure every kernel line so far reached `console`: the guest prints `marker`
        last, and this waits (up to `timeout` s) until it appears after line `since`."""
        self.agent.kmsg(marker)
        if self.console is not None:
            self.console.wait_for(marker, since, timeout)

    def gdb_command(self, module_dirs: Sequence[Path]) -> str:
        """A shell command that attaches gdb to this guest's kernel, with the kernel's lx-
        commands, and lx-symbols finding modules in `module_dirs` (first match wins)."""
        raise GuestError(f"gdb cannot attach to a {self.name} guest")

    def debugger_attached(self) -> bool:
        """Whether a debugger is attached to the guest's kernel now."""
        return False

    @abstractmethod
    def stop(self, timeout: float = 10.0) -> None:
        """Power the guest off; kill it if it does not go within `timeout`."""

    @abstractmethod
    def kill(self) -> None:
        """End the guest and everything it started on the host, now."""

    @abstractmethod
    def abort(self) -> None:
        """Stop the guest from another thread (a time limit): the call in flight fails,
        and the owner cleans up with kill(), as after a crash."""

    @abstractmethod
    def exit_status(self, wait: float) -> int | None:
        """How the guest's host process ended (waiting up to `wait` s, with every console
        line in), or None while it runs: a crash shows as a dead guest with a status."""

    def __enter__(self) -> Machine:
        self.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stop()


class MachineType(ABC):
    """A kind of guest: its kernel, its devicetree's transport, and booting it."""

    name: str  # --roadtest-machine's value
    target: Target  # the architecture its kernel is built for
    gdb = False  # whether gdb can attach to its guests' kernels (Machine.gdb_command)
    # The guest clocks it can run, the default first.
    time_modes: tuple[TimeMode, ...] = (TimeMode.REAL,)
    # The kernel variants it has (roadtest.kernel.variants), by name.
    variants: tuple[str, ...] = ("main",)

    def default_time(self, interactive: bool = False) -> TimeMode:
        """Its clock when the run names none; `interactive`: with a terminal in the guest."""
        modes = [m for m in self.time_modes if m.takes_terminal_input or not interactive]
        if not modes:
            raise RoadtestError(f"a {self.name} guest has no clock that a terminal can use")
        return modes[0]

    def time_mode(self, asked: TimeMode | None, interactive: bool = False) -> TimeMode:
        """The clock a run gets when it asks for `asked` (None: the default); RoadtestError
        for one this machine does not have, or one an interactive terminal cannot use."""
        if asked is None:
            return self.default_time(interactive)
        if asked not in self.time_modes:
            have = ", ".join(self.time_modes)
            raise RoadtestError(
                f"--roadtest-time={asked}: the {self.name} machine's guests run only in: {have}"
            )
        if interactive and not asked.takes_terminal_input:
            raise RoadtestError(
                f"--roadtest-time={asked} has no interactive terminal (a terminal's input is "
                f"not time-synchronised): use --roadtest-time={self.default_time(True)}"
            )
        return asked

    def check_variant(self, variant: str) -> None:
        """RoadtestError when this machine has no kernel of that variant."""
        if variant not in self.variants:
            raise RoadtestError(
                f"the {variant} kernel is not built for {self.name} guests "
                f"(they have: {', '.join(self.variants)})"
            )

    def describe(self) -> str:
        """The kind of guest and what runs it on this host, for a run's report header."""
        return self.name

    def unsupported(self, interrupts: bool) -> str | None:
        """Why a test cannot run on this machine as the host has it (None: it can);
        `interrupts`: its devices take interrupts from the GPIO controller."""
        return None

    def cannot_carry(self, device_id: int) -> str | None:
        """Why this machine's guests cannot have the backend's virtio device `device_id`
        (None: they can). A device it cannot carry is left out of its guests, with the
        test devices on it, and a test that declares one is skipped with this reason."""
        return None

    def build(self, repo_root: Path, variant: Variant | None = None) -> Kernel:
        """The machine's kernel (or `variant` of it), built if needed."""
        return ensure_kernel(repo_root, variant=variant, target=self.target)

    @abstractmethod
    def devicetree_root(self, virtio: Sequence[VirtioNode]) -> str:
        """The tree's root node: its properties, and the virtio devices in their transport
        (label each device node with `device_node`). Test fragments are added after it."""

    @abstractmethod
    def machine(self, config: BootConfig) -> Machine:
        """A guest to boot with `config` (not started yet)."""
