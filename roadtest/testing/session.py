"""One guest with its backend and devices: what the pytest fixtures hand to tests.

The session owns the backend (a thread in this process) and the guest, which
it boots on the machine it was given (machine/registry.py). A guest that
crashed or hung is replaced before the next test, with the same devicetree;
the backend stays and takes the new guest's connections.

Devicetrees: the devices the tests declare come in groups (one per test
module), and the session packs the groups, in order, into as few trees as
their addresses, GPIO lines and node names allow: one, unless they are many
or clash. A test whose devices the running guest's tree lacks (its module's
group went into another tree, or it declares a variant of its own) gets a
guest booted with a tree that has them (`require`).
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import shutil
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, TypeVar, overload

from roadtest.backend.server import Backend
from roadtest.errors import RoadtestError
from roadtest.guest.client import AgentClient
from roadtest.guest.protocol import ProtocolError
from roadtest.kernel import Kernel
from roadtest.machine import registry
from roadtest.machine.base import (
    BootConfig,
    GuestError,
    Machine,
    MachineType,
    TimeMode,
    VirtioNode,
)
from roadtest.models.base import ChipModel, I2CModel, SPIModel, restore_inputs, saved_inputs
from roadtest.simtime.clock import SimulatedClock
from roadtest.testing import bus as buses
from roadtest.testing import devicetree, kmemleak
from roadtest.testing.bus import TestBus
from roadtest.testing.bus.i2c import I2CTestBus
from roadtest.testing.devices import (
    Device,
    Layout,
    ModelDevice,
    PlacementError,
    PlatformDevice,
    SPIDevice,
)
from roadtest.testing.guestpath import GuestPath
from roadtest.testing.hooks import DeviceHooks, EventScriptHooks, LiveHooks
from roadtest.testing.modules import ModuleIndex, ModuleInfo, params_from_cmdline
from roadtest.trace.names import TracedDevice

if TYPE_CHECKING:
    from roadtest.backend.gpio import GpioLine
    from roadtest.fuzz.events import DeviceEvent

log = logging.getLogger("roadtest.session")

M = TypeVar("M", bound=ChipModel)  # a device's model class: `dev.model` has its type

# roadtest's own kernel lines: "roadtest: start <test>", "roadtest: log 3", ...
_ROADTEST_MARKER = re.compile(r"\] roadtest: ")
_PF_KTHREAD = 0x00200000  # include/linux/sched.h: the task is a kernel thread


class BindError(RoadtestError):
    pass


@dataclass(kw_only=True)
class Bound:
    """A declared device during one test: its place and its sysfs directory."""

    session: RoadtestSession
    device: Device
    bus: str  # the sysfs bus: where drivers_probe and the device live ("i2c", "platform")
    gpios: dict[str, int]
    lines: dict[str, GpioLine]
    name: str
    path: GuestPath
    bound: bool = False

    @property
    def driver_path(self) -> GuestPath:
        return self.path / "driver"

    def bind(self) -> None:
        self.session.bind(self)

    def unbind(self) -> None:
        self.session.unbind(self)


@dataclass(kw_only=True)
class BoundDevice(Bound, Generic[M]):
    """A device with the model that answers at its address on its bus."""

    device: ModelDevice[M]
    model: M
    addr: int


@dataclass(kw_only=True)
class BoundPlatformDevice(Bound):
    device: PlatformDevice


def virtio_nodes(backend: Backend, machine: MachineType | None = None) -> list[VirtioNode]:
    """The backend's devices, for the machine to put in the guest's devicetree: those it
    can carry (all, without `machine`)."""
    return [
        VirtioNode(name, device.device_id, backend.socket(name), device.dt_properties)
        for name, device in backend.devices.items()
        if machine is None or machine.cannot_carry(device.device_id) is None
    ]


def _fits(devices: Sequence[Device]) -> bool:
    try:
        Layout(devices)
    except PlacementError:
        return False
    return True


class Tree:
    """One devicetree a guest can boot with: where its devices are, compiled on first use."""

    def __init__(self, layout: Layout) -> None:
        self.layout = layout
        self.dtb: Path | None = None

    def has(self, device: Device) -> bool:
        return id(device) in self.layout.placements


def pack(groups: Sequence[Sequence[Device]]) -> list[Tree]:
    """The groups' devices in as few trees as fit, keeping each group in one tree and the
    groups in order (the order tests run in). A group that does not fit a tree even alone
    gets none: its tests get the reason from `require`."""
    trees: list[Tree] = []
    current: list[Device] = []
    for group in groups:
        new = [d for d in group if d not in current]  # a device two modules import is one
        if _fits([*current, *new]):
            current += new
            continue
        if current:
            trees.append(Tree(Layout(current)))
        current = list(group) if _fits(group) else []
    if current or not trees:
        trees.append(Tree(Layout(current)))
    return trees


class RoadtestSession:
    def __init__(
        self,
        kernel: Kernel,
        devices: Sequence[Device],
        workdir: Path,
        cpu: int | None = 0,
        time: TimeMode = TimeMode.SIM,
        boot_timeout: float = 30.0,
        hooks: DeviceHooks | None = None,
        module_overrides: list[Path] | None = None,
        *,
        groups: Sequence[Sequence[Device]] = (),
        machine: MachineType | None = None,
        boot_args: list[str] | None = None,
        terminal: int | None = None,
        debugger: Callable[[Machine, list[Path]], None] | None = None,
        mem: str | None = None,
    ) -> None:
        """`devices` and each of `groups` (the devices of one test module) are sets of devices
        tests use together: each goes into one devicetree whole. `terminal`: a host pty every
        guest gets as a terminal of its own (BootConfig.terminal), for `roadtest shell`.

        `debugger` (--roadtest-gdb) gets each guest once it booted, before anything runs in
        it, with the directories of the modules it may load; while it is set, no call into
        the guest times out (a debugger may hold the guest as long as its user likes)."""
        self.kernel = kernel
        self.workdir = workdir
        self.machine_type = machine if machine is not None else registry.get(registry.DEFAULT)
        # The guest can make set-uid files in its own work dir (a subdirectory):
        # no other host user may reach them.
        workdir.mkdir(parents=True, exist_ok=True)
        workdir.chmod(0o700)
        self.trees = pack([list(g) for g in (devices, *groups) if g])
        self.tree = self.trees[0]
        self.modules = ModuleIndex(kernel.modules_dir)
        for path in module_overrides or []:
            self.modules.override(path)
        self.time = TimeMode(time)
        self.backend = Backend(workdir, simulated_time=self.time == TimeMode.SIM)
        self.cpu = cpu
        self.boot_timeout = boot_timeout  # host seconds from start to the agent's ready
        self.boot_args = list(boot_args or [])  # the user's extra kernel arguments
        self.terminal = terminal
        self.debugger = debugger
        self.mem = mem  # the guests' memory (BootConfig.mem), when not the machine's default
        # Host seconds an agent request may take (BootConfig.call_timeout): hang_limit().
        self.call_timeout: float | None = BootConfig.call_timeout
        self.machine: Machine | None = None
        self.boots = 0
        self.buses: dict[str, TestBus] = buses.session_buses()
        self.active: list[Bound] = []
        # Devices bound across the examples of a Hypothesis test, with their models' first
        # inputs (bound_for_examples); by declaration.
        self._kept: dict[int, tuple[BoundDevice[Any], dict[str, Any]]] = {}
        self.hooks: DeviceHooks = hooks if hooks is not None else LiveHooks()
        self.test_id = ""  # the running test's node id, set by the plugin
        # The guest and console position when the test began (set by the plugin).
        self.log_start: tuple[Machine | None, int] = (None, 0)
        self._log_reads = 0
        # The driver modules loaded into the current guest, and what wants to see them
        # (and the guest) before the guest ends (coverage.py copies their counters).
        self.drivers_loaded: dict[str, ModuleInfo] = {}
        self.before_guest_ends: list[Callable[[AgentClient, list[ModuleInfo]], object]] = []
        # Where to note the name of every module a test needs (--roadtest-modules-used):
        # `roadtest bisect` compares those modules between steps.
        self.modules_log: Path | None = None
        self.problems: list[Exception] = []  # the hooks' verdicts on detached devices
        # Told when `require` replaces a live guest (the plugin's test log follows it).
        self.on_replaced: Callable[[Machine], None] | None = None
        self.dtb = self._compile(self.tree)

    @property
    def layout(self) -> Layout:
        """Where the devices of the running guest's tree are."""
        return self.tree.layout

    def _compile(self, tree: Tree) -> Path:
        if tree.dtb is None:
            virtio = virtio_nodes(self.backend, self.machine_type)
            # The first tree keeps the name it always had: guest.dtb.
            index = self.trees.index(tree)
            tree.dtb = devicetree.build(
                tree.layout.fragments(self.uncarried_buses()),
                self.kernel.source_dir,
                self.workdir,
                self.machine_type.devicetree_root(virtio),
                name="guest" if index == 0 else f"guest-tree{index}",
            )
        return tree.dtb

    # Devicetrees
    def require(self, *devices: Device) -> None:
        """Make sure the guest's devicetree has every one of `devices`, booting one with a tree
        that has them if it does not: call it first in a test that declares devices of its own
        and uses them together. The tree is the running one plus `devices` if they fit, else
        just `devices`."""
        if all(self.tree.has(d) for d in devices):
            return
        if self.active:
            raise PlacementError(
                f"{', '.join(d.origin or d.compatible for d in devices if not self.tree.has(d))} "
                "is not in the running guest's devicetree, and a new guest cannot have the "
                f"devices attached now ({', '.join(b.name for b in self.active)}): call "
                "guest.require() with all of the test's devices before attaching any"
            )
        tree = next((t for t in self.trees if all(t.has(d) for d in devices)), None)
        if tree is None:
            wanted = list(dict.fromkeys(devices))
            current = self.tree.layout.devices
            union = [*current, *(d for d in wanted if not self.tree.has(d))]
            tree = Tree(Layout(union if _fits(union) else wanted))
            self.trees.append(tree)
        log.info("booting a guest with devicetree %d for %s", self.trees.index(tree), self.test_id)
        self.dtb = self._compile(tree)
        self.tree = tree
        # A guest that died is not replaced quietly: the test's verdict reports its death.
        replacing = self.machine is not None and self.machine.alive
        guest = self.boot()
        if replacing and self.on_replaced is not None:
            self.on_replaced(guest)

    # Guest lifetime
    def start(self) -> None:
        self.backend.start()
        self.boot()

    def boot(self) -> Machine:
        if self.machine is not None:
            self._guest_ends(self.machine)
            self.machine.kill()
        self.boots += 1
        config = BootConfig(
            image=self.kernel.image,
            workdir=self.workdir / f"guest-{self.boots}",
            dtb=self.dtb,
            virtio=virtio_nodes(self.backend, self.machine_type),
            cpu=self.cpu,
            time=self.time,
            time_socket=self.backend.socket("time") if self.time == TimeMode.SIM else None,
            agent_channel=self.backend.console.new_channel if self.backend.console else None,
            before_poweroff=self.backend.console.agent_leaves if self.backend.console else None,
            boot_timeout=self.boot_timeout,
            extra_args=self.boot_args,
            terminal=self.terminal,
        )
        if self.mem is not None:
            config.mem = self.mem
        config.call_timeout = None if self.debugger is not None else self.call_timeout
        self.machine = self.machine_type.machine(config)
        self.machine.start()
        if self.debugger is not None:
            self._load_drivers()
            self.debugger(self.machine, self.modules.directories())
        for bus in self.buses.values():
            try:
                bus.discover(self.machine.agent)
            except RoadtestError as err:
                raise RoadtestError(f"{err}; console: {self.machine.console_log}") from None
        return self.machine

    @property
    def i2c_bus_number(self) -> int:
        """The guest's virtio I2C adapter, i2c-N (for tools that open /dev/i2c-N)."""
        i2c = self.buses["i2c"]
        assert isinstance(i2c, I2CTestBus)
        return i2c.adapter

    def uncarried_buses(self) -> set[str]:
        """The buses whose controller this session's machine cannot carry (QEMU: SPI)."""
        machine = self.machine_type
        return {
            name
            for name, bus in self.buses.items()
            if bus.virtio_device_id is not None
            and machine.cannot_carry(bus.virtio_device_id) is not None
        }

    def cannot_carry(self, devices: Sequence[Device]) -> str | None:
        """Why this session's machine cannot run a test of `devices` (None: it can): one
        of them sits on a bus whose controller the machine leaves out."""
        for device in devices:
            device_id = self.bus_of(device).virtio_device_id
            if device_id is None:
                continue
            why = self.machine_type.cannot_carry(device_id)
            if why is not None:
                return (
                    f"unsupported on {self.machine_type.name}: {device.origin} is an "
                    f"{self.bus_of(device).name.upper()} device, and {why}"
                )
        return None

    def bus_of(self, device: Device) -> TestBus:
        return self.buses[device.bus] if device.bus in self.buses else buses.get(device.bus)()

    def _load_drivers(self) -> None:
        """Load the driver of every device in the guest's devicetree (nothing is bound), so
        that a debugger attached now gets every module's symbols at once."""
        for device in self.layout.devices:
            try:
                self.load_driver(device.compatible, self.bus_of(device).sysfs)
            except RoadtestError as err:
                log.warning("not loaded for the debugger: %s", err)  # its test will say so

    def ensure_guest(self) -> Machine:
        if self.machine is None or not self.machine.alive:
            log.info("starting a new guest")
            return self.boot()
        return self.machine

    def _guest_ends(self, guest: Machine) -> None:
        """Give the callbacks a last look at a guest that still answers."""
        if guest.alive:
            for callback in self.before_guest_ends:
                callback(guest.agent, list(self.drivers_loaded.values()))
        self.drivers_loaded = {}

    def stop(self) -> None:
        if self.machine is not None:
            self._guest_ends(self.machine)
            self.machine.stop()
            self.machine = None
        self.backend.stop()

    @property
    def agent(self) -> AgentClient:
        return self.ensure_guest().agent

    def path(self, path: str) -> GuestPath:
        return GuestPath(self.ensure_guest().agent, path)

    # Guest time and the kernel's log, for tests
    @contextlib.contextmanager
    def hang_limit(self, seconds: float) -> Iterator[None]:
        """For the block, an agent request that takes more than `seconds` host seconds
        fails (AgentTimeout: the guest counts as hung), in the running guest and in any
        booted meanwhile: for a test that expects a hang, not to wait out the default.
        Under a debugger nothing times out."""
        saved = self.call_timeout
        self.call_timeout = seconds
        self._set_agent_timeout(seconds)
        try:
            yield
        finally:
            self.call_timeout = saved
            self._set_agent_timeout(saved)

    def _set_agent_timeout(self, seconds: float | None) -> None:
        if self.debugger is not None or self.machine is None:
            return
        try:
            self.machine.agent.timeout = seconds
        except GuestError:
            pass  # not running: the next guest boots with self.call_timeout

    def sleep(self, seconds: float) -> None:
        """Let `seconds` of guest time pass (for drivers that refuse reads for a while after
        probe). Under simulated time or time-travel it costs no host time."""
        self.agent.run(["/bin/sleep", f"{seconds:g}"], timeout=30.0 + seconds)

    def kernel_log(self) -> list[str]:
        """What the kernel printed since the test began (roadtest's own markers left out),
        up to now: the kernel's lines reach the host through the console, so this waits
        for a marker the guest prints last."""
        guest = self.ensure_guest()
        start_guest, mark = self.log_start
        if start_guest is not guest:
            mark = 0  # a new guest since the test began: all of its lines are this test's
        self._log_reads += 1
        guest.flush_console(f"roadtest: log {self._log_reads}", mark, timeout=5.0)
        assert guest.console is not None  # a started guest has one
        return [
            line
            for line in guest.console.kernel_lines_since(mark)
            if not _ROADTEST_MARKER.search(line)
        ]

    def assert_kernel_log(self, pattern: str, timeout: float = 2.0) -> re.Match[str]:
        """The first kernel line since the test began that `pattern` (a regex) matches,
        waiting up to `timeout` host seconds for one; AssertionError with what the
        kernel did print if none came."""
        deadline = time.monotonic() + timeout
        regex = re.compile(pattern)
        while True:
            lines = self.kernel_log()
            found = next((m for line in lines if (m := regex.search(line))), None)
            if found is not None:
                return found
            if time.monotonic() >= deadline:
                excerpt = "\n".join(f"  {line}" for line in lines[-20:]) or "  (nothing)"
                raise AssertionError(
                    f"no kernel line matches {pattern!r} since the test began; "
                    f"the kernel printed:\n{excerpt}"
                )
            time.sleep(0.05)

    def kmemleak_scan(self) -> list[str]:
        """kmemleak's report of each kernel object nothing points to any more, leaked at
        least 5 s of guest time ago and not returned by an earlier call; the sanitizer
        kernel only (kmemleak.py: what kmemleak can and cannot see)."""
        return kmemleak.scan(self.agent, self.sleep)

    # Processes a test leaves behind
    def guest_pids(self) -> set[int]:
        return {int(name) for name in self.agent.listdir("/proc") if name.isdigit()}

    def kill_strays(self, before: set[int]) -> list[str]:
        """Kill the guest's user processes that were started after `before` was taken and
        still run; returns them ("pid: command line").

        The agent runs one program at a time and waits for it, so anything new still
        running at a test's end was left in the background by that test, and whatever it
        does next (a sysrq crash after a sleep) would land in the next test."""
        agent = self.agent
        strays: list[tuple[int, str]] = []
        for pid in sorted(self.guest_pids() - before):
            try:
                stat = agent.read_file(f"/proc/{pid}/stat").decode(errors="replace")
                cmdline = agent.read_file(f"/proc/{pid}/cmdline")
            except OSError:
                continue  # it ended meanwhile
            # After "pid (comm) ": state ppid pgrp session tty_nr tpgid flags ...
            fields = stat.rpartition(")")[2].split()
            if fields[0] in "ZX" or int(fields[6]) & _PF_KTHREAD:
                continue  # a zombie (dead already) or a kernel thread
            command = cmdline.rstrip(b"\0").replace(b"\0", b" ").decode(errors="replace")
            strays.append((pid, command or stat.partition(" ")[2].split(")")[0] + ")"))
        if strays:
            agent.run(["kill", "-KILL", *(str(pid) for pid, _ in strays)])
        return [f"{pid}: {command}" for pid, command in strays]

    # Devices
    def load_driver(self, compatible: str, bus: str = "") -> None:
        agent = self.ensure_guest().agent
        module = self.modules.for_compatible(compatible, bus)
        self.drivers_loaded[module.name] = module
        needed = self.modules.load_order(module)
        if self.modules_log is not None:
            with self.modules_log.open("a") as log:
                log.write("".join(f"{mod.name}\n" for mod in needed))
        for mod in needed:
            if not agent.exists(f"/sys/module/{mod.name}"):
                agent.load_module(str(mod.path), params_from_cmdline(self.boot_args, mod.name))

    @overload
    def attach(self, device: ModelDevice[M], model: M | None = None) -> BoundDevice[M]: ...
    @overload
    def attach(self, device: PlatformDevice) -> BoundPlatformDevice: ...
    def attach(self, device: Device, model: ChipModel | None = None) -> Bound:
        """Get the device ready for binding: an I2C device gets a fresh model (or `model`)
        at its address. The driver is not bound yet. A device the guest's devicetree lacks
        gets a guest with a tree that has it (see `require`)."""
        if not self.tree.has(device):
            self.require(device)
        place = self.layout.placement(device)
        lines = {name: self.backend.gpio.line(n) for name, n in place.gpios.items()}
        bus = self.bus_of(device)
        node = device.node_name if isinstance(device, PlatformDevice) else ""
        name = bus.sysfs_name(place.addr, node)
        path = self.path(f"/sys/bus/{bus.sysfs}/devices/{name}")
        bound: Bound
        if isinstance(device, PlatformDevice):
            bound = BoundPlatformDevice(
                session=self,
                bus=bus.sysfs,
                device=device,
                gpios=dict(place.gpios),
                lines=lines,
                name=name,
                path=path,
            )
        else:
            assert place.addr is not None
            model = model if model is not None else device.model()
            for gpio_name, line in lines.items():
                setattr(model, gpio_name, line)
            if self.backend.controller is not None:
                model.clock = SimulatedClock(self.backend.controller)
            bound = BoundDevice(
                session=self,
                bus=bus.sysfs,
                device=device,
                model=model,
                addr=place.addr,
                gpios=dict(place.gpios),
                lines=lines,
                name=name,
                path=path,
            )
            # What answers for it (the model, a trace, a lie) is the hooks' choice. A model
            # of a chip with both buses is both kinds: the declaration's bus says which.
            if isinstance(model, I2CModel) and not (
                isinstance(model, SPIModel) and device.bus == SPIDevice.bus
            ):
                target = self.hooks.attached(self.test_id, traced(bound), model, lines)
                bus.attach(self.backend, place.addr, target)
            elif isinstance(model, SPIModel):
                spi_target = self.hooks.attached_spi(self.test_id, traced(bound), model, lines)
                bus.attach_spi(self.backend, place.addr, spi_target)
            else:
                raise RoadtestError(
                    f"{device.origin}: its model {type(model).__name__} is neither an "
                    "I2CModel nor an SPIModel"
                )
        self.active.append(bound)
        return bound

    @contextlib.contextmanager
    def hooks_wrapped(self, wrap: Callable[[DeviceHooks], DeviceHooks]) -> Iterator[None]:
        """Devices attached in the block are answered as `wrap(hooks)` decides (hostile
        mode: behind a lying device), keeping what the session's own hooks observe."""
        hooks = self.hooks
        self.hooks = wrap(hooks)
        try:
            yield
        finally:
            self.hooks = hooks

    def device_events(
        self, script: Sequence[DeviceEvent]
    ) -> contextlib.AbstractContextManager[None]:
        """Devices attached in the block do what `script` says on their own (a device-events
        script, roadtest.fuzz.events: register changes, interrupts, failed transfers), each
        event before the device's next transfer (roadtest.fuzz.scripted)."""
        return self.hooks_wrapped(lambda inner: EventScriptHooks(inner, script))

    def detach(self, bound: Bound) -> None:
        """Unbind (if the guest still runs) and take any model off the bus."""
        if bound.bound and self.machine is not None and self.machine.alive:
            try:
                self.unbind(bound)
            except ProtocolError:
                pass  # the guest died under us; the next test gets a new one
        if isinstance(bound, BoundDevice):
            self.bus_of(bound.device).detach(self.backend, bound.addr)
            self.problems += self.hooks.detached(traced(bound))
        if bound in self.active:
            self.active.remove(bound)

    def bind(self, bound: Bound) -> None:
        compatible = bound.device.compatible
        self.load_driver(compatible, bound.bus)
        if isinstance(bound, BoundDevice):
            # Not the device's name: its address depends on the run.
            self.hooks.marker(traced(bound), "bind", None)
        agent = self.ensure_guest().agent
        if len(self.modules.claimants(compatible, bound.bus)) > 1:
            # drivers_probe would take the first driver loaded that matches: bind the
            # module's own driver (/sys/module/<module>/drivers/<bus>:<driver>).
            module = self.modules.for_compatible(compatible, bound.bus)
            drivers = [
                entry.partition(":")[2]
                for entry in agent.listdir(f"/sys/module/{module.name}/drivers")
                if entry.startswith(f"{bound.bus}:")
            ]
            try:
                for driver in drivers[:1]:
                    agent.write_file(f"/sys/bus/{bound.bus}/drivers/{driver}/bind", bound.name)
            except OSError:
                pass  # its probe failed: said below
        else:
            # drivers_probe binds the matching driver even though autoprobe is off.
            agent.write_file(f"/sys/bus/{bound.bus}/drivers_probe", bound.name)
        if not agent.exists(str(bound.driver_path)):
            raise BindError(
                f"no driver bound to {bound.name} ({compatible}): its probe failed or was "
                "deferred (is its supplier bound?), see the kernel log"
            )
        bound.bound = True

    def unbind(self, bound: Bound) -> None:
        if isinstance(bound, BoundDevice):
            self.hooks.marker(traced(bound), "unbind", None)
        agent = self.ensure_guest().agent
        if agent.exists(str(bound.driver_path)):
            agent.write_file(str(bound.driver_path / "unbind"), bound.name)
        bound.bound = False

    @overload
    def bound(
        self, device: ModelDevice[M], model: M | None = None
    ) -> contextlib.AbstractContextManager[BoundDevice[M]]: ...
    @overload
    def bound(
        self, device: PlatformDevice
    ) -> contextlib.AbstractContextManager[BoundPlatformDevice]: ...
    def bound(
        self, device: Device, model: ChipModel | None = None
    ) -> contextlib.AbstractContextManager[Bound]:
        """Attach and bind for the `with` block; unbind and detach after it."""
        return self._bound(device, model)

    @contextlib.contextmanager
    def _bound(self, device: Device, model: ChipModel | None) -> Iterator[Bound]:
        dev = self.attach(device, model) if isinstance(device, ModelDevice) else self.attach(device)
        try:
            dev.bind()
            yield dev
        finally:
            self.detach(dev)

    def detach_all(self) -> None:
        # Newest first: a consumer goes before the supplier it was bound against.
        self._kept.clear()
        for bound in reversed(list(self.active)):
            self.detach(bound)

    # Hypothesis tests: devices kept bound across examples

    def bound_for_examples(self, device: ModelDevice[M]) -> BoundDevice[M]:
        """`device`, bound at a test's first call and then kept bound for all its
        examples (and until the test ends): each example gets it with its model's inputs
        back at their first values, but with the registers the driver wrote (a device
        that stays powered). For properties over what the driver reads at each access;
        one over what it reads at probe binds the device in each example (`bound`).
        A guest replaced after a crash binds it anew, with a new model."""
        kept = self._kept.get(id(device))
        if kept is None:
            bound = self.attach(device)
            bound.bind()
            kept = self._kept[id(device)] = (bound, saved_inputs(bound.model))
        return kept[0]

    def reset_kept(self) -> None:
        """Before an example: every kept device's model inputs back to their first values."""
        for bound, inputs in self._kept.values():
            restore_inputs(bound.model, inputs)

    def forget_kept(self) -> None:
        """The guest is being replaced: kept devices are bound again when next asked for."""
        kept, self._kept = self._kept, {}
        for bound, _ in kept.values():
            bound.bound = False  # its guest is gone: nothing to unbind
            self.detach(bound)


def traced(bound: BoundDevice[Any]) -> TracedDevice:
    """How record and replay know a bound device."""
    device = bound.device
    return TracedDevice(
        device.compatible, bound.addr, device.origin, tuple(bound.lines), bus=device.bus
    )


KEEP_RUNS = 10


def default_workdir(cache_dir: Path, worker: str) -> Path:
    """This run's work dir; the newest KEEP_RUNS others stay for their logs, older ones go."""
    runs = cache_dir / "runs"
    runs.mkdir(parents=True, exist_ok=True)
    old = sorted(runs.iterdir(), key=lambda p: p.stat().st_mtime, reverse=True)[KEEP_RUNS:]
    for path in old:
        pid = path.name.split("-", 1)[0]
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():
            shutil.rmtree(path, ignore_errors=True)
    return runs / f"{os.getpid()}-{worker}"
