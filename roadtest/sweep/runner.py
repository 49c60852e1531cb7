"""Sweeping drivers in one reused guest: each driver's device instantiated, its module
loaded, the device bound against register files drawn by Hypothesis until a probe gets
past, what probe created exercised, then unbind, module removal and a leak scan.

The guest boots with a devicetree that holds the devices of many drivers at once (the
session packs them, as it packs a test run's), none bound: the kernel's autoprobe is off
in roadtest guests, so a loaded module binds only the device it is told to
(drivers_probe). An I2C driver without an OF compatible gets its device from the I2C
core's new_device file instead; an SPI one, a node that matches its id table by modalias
(devicetree.id_node). The SPI devices of one guest are on the chip selects of its virtio-spi
controller, one each, handed out in the order the drivers are swept (the devicetree holds
as many SPI devices as the controller has chip selects). The guest is replaced after a
finding (the kernel is tainted and may be in any state) and when the next devices are in
another devicetree.

One driver, step by step (`Sweeper.sweep_one`):
1. its module and the modules it needs are loaded (NOT_LOADED if not);
2. examples: a register plan (device.plans: the mined constants favoured) behind the
   device's address or chip select (on SPI framed as device.spi_shape guessed), bind; a
   probe that fails is tried with the next plan, up to `examples` of them (PROBE_FAILED
   after all); the first that binds is exercised (exercise.py), unbound;
3. the module is removed, and kmemleak scanned once (after the last example: what the
   driver leaked is unreferenced by then);
4. the kernel's log since the driver began goes to the oracles; a finding, or a guest that
   died or stopped answering, ends the guest.
"""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from hypothesis import HealthCheck, Phase, Verbosity, example, given, settings

from roadtest.backend.i2c_model import ModelHandler
from roadtest.errors import RoadtestError
from roadtest.guest.client import AgentTimeout
from roadtest.guest.protocol import ProtocolError
from roadtest.kernel import Kernel
from roadtest.machine import registry
from roadtest.machine.base import GuestError, MachineType
from roadtest.sweep import exercise, feedback, oracles
from roadtest.sweep.constants import Mined
from roadtest.sweep.device import (
    RegisterFile,
    RegisterPlan,
    SPIRegisterFile,
    SPIShape,
    plans,
)
from roadtest.sweep.devicetree import Bindings, DeviceNode, NewDevice, devices
from roadtest.sweep.inventory import Driver, driver_key
from roadtest.sweep.outcome import DriverResult, Finding, Stage
from roadtest.testing import kmemleak
from roadtest.testing.bus.i2c import I2C_ADDRESSES, I2CTestBus
from roadtest.testing.bus.spi import SPITestBus
from roadtest.testing.devices import I2CDevice, ModelDevice, SPIDevice
from roadtest.testing.modules import ModuleError, ModuleIndex
from roadtest.testing.session import RoadtestSession

log = logging.getLogger("roadtest.sweep")

# Runs of a driver's examples a shrink may add, beyond its `examples`: each run of a plan
# that still fails costs a guest's boot.
SHRINK_RUNS = 12
# The sanitizer kernel's KASAN quarantine and kmemleak metadata grow over hundreds of
# drivers in one guest: twice the default memory keeps them from an out-of-memory panic.
GUEST_MEMORY = "256M"
# Probes the feedback loop may take (label, learn, label, learn, ...) before Hypothesis.
LEARN_STEPS = 6


@dataclass(frozen=True)
class Plan:
    """One driver and the device the sweep instantiates for it."""

    driver: Driver
    device: DeviceNode | NewDevice | None
    mined: Mined
    shape: SPIShape | None = None  # on SPI: how its register file is framed

    @property
    def how(self) -> str:
        """Where the device comes from: a binding's example, a sibling chip's, the
        compatible alone, new_device (I2C), or an id-table name (SPI, by modalias)."""
        if isinstance(self.device, NewDevice):
            return "new_device"
        if isinstance(self.device, DeviceNode):
            if self.device.id_name:
                return "id-table"
            if self.device.example:
                return "sibling"
            return "example" if self.device.binding else "compatible"
        return ""

    @property
    def match(self) -> str:
        if isinstance(self.device, NewDevice):
            return self.device.name
        if isinstance(self.device, DeviceNode):
            return self.device.id_name or self.device.compatible
        return ""

    def model(self, register_plan: RegisterPlan) -> RegisterFile | SPIRegisterFile:
        """The register file that answers for the device, on the driver's bus."""
        if self.driver.bus == "spi":
            return SPIRegisterFile(register_plan, self.shape)
        return RegisterFile(register_plan)


def plan(driver: Driver, bindings: Bindings, mined: Mined, shape: SPIShape | None = None) -> Plan:
    """The driver's first device: its first compatible's node, or its first id-table name."""
    found = devices(driver, bindings)
    return Plan(driver, found[0] if found else None, mined, shape)


class _Found(Exception):
    """A finding, raised out of an example so that Hypothesis shrinks its plan."""

    def __init__(self, findings: list[Finding]) -> None:
        super().__init__(findings[0].signature)
        self.findings = findings


@dataclass
class _Progress:
    stage: Stage = Stage.PROBE_FAILED
    detail: str = ""
    examples: int = 0
    read: int = 0
    written: int = 0
    findings: tuple[Finding, ...] = ()
    failing: RegisterPlan | None = None  # the plan of the findings, shrunk
    reads: tuple[tuple[int, int], ...] = ()  # what the last probe read: (register, value)
    comparisons: list[feedback.Comparison] | None = None  # its comparisons (KCOV)
    coverage: int = 0  # the most comparison sites a probe reached


def machine_for(kernel: Kernel) -> MachineType:
    """The machine that boots `kernel` (UML for an `um` kernel, QEMU for x86_64)."""
    for name in registry.names():
        machine = registry.get(name)
        if machine.target.name == kernel.target.name:
            return machine
    raise RoadtestError(f"sweep: no machine boots a {kernel.target.name} kernel")


def _device_of(
    plan: Plan, chip_select: int | None = None
) -> ModelDevice[RegisterFile | SPIRegisterFile] | None:
    """The devicetree device of a plan (None for a new_device one); an SPI one on
    `chip_select` (a session would derive one from its name, and eight chip selects
    clash soon: the sweep hands them out in turn). An interrupt the
    example had, dropped with the other board's controller, is wired to a virtio-gpio line
    (`irq`), falling-edge: the sweep pulses it, and a register file never clears an
    interrupt source, so a level trigger would fire without end (an interrupt storm that
    fills the guest's memory: a harness artefact, not the driver's bug)."""
    node = plan.device
    if not isinstance(node, DeviceNode):
        return None
    dts = node.dts
    gpios: tuple[str, ...] = ()
    if any(d.kind == "interrupt" and d.node == "" for d in node.dropped):
        # Properties come before subnodes: right after the node's opening line.
        start = dts.index("\n", dts.index("@$addr$")) + 1
        wired = "    interrupt-parent = <&gpio>;\n    interrupts = <$irq$ IRQ_TYPE_EDGE_FALLING>;\n"
        dts, gpios = dts[:start] + wired + dts[start:], ("irq",)
    if plan.driver.bus == "spi":
        return SPIDevice(
            compatible=node.compatible,
            model=SPIRegisterFile,
            dts=dts,
            gpios=gpios,
            addr=chip_select,
            origin=plan.driver.key,
        )
    return I2CDevice(
        compatible=node.compatible,
        model=RegisterFile,
        dts=dts,
        gpios=gpios,
        origin=plan.driver.key,
    )


class Sweeper:
    """A session of guests on the sweep kernel, and the drivers swept in it."""

    def __init__(
        self,
        kernel: Kernel,
        workdir: Path,
        plans_: Sequence[Plan],
        *,
        examples: int = 8,
        mined: bool = True,
        feedback: bool = True,
        boot_args: Sequence[str] = (),
        cpu: int | None = 0,
        progress: Callable[[str], None] = lambda _: None,
    ) -> None:
        self.kernel = kernel
        self.examples = examples
        self.use_mined = mined  # the constants of the driver's source favoured in plans
        self.feedback = feedback  # KCOV's comparisons teach the next plan (feedback.py)
        self._kcov: bool | None = None  # whether the guest kernel has KCOV (asked once)
        # Leaks a driver's scan found in another module (an earlier driver's, whose objects
        # were still referenced at its own scan): (module, finding), for the caller to add
        # to that driver's result.
        self.late: list[tuple[str, Finding]] = []
        self._others: list[int] = []  # the addresses of the companions (_companions)
        self.progress = progress
        self.devices: dict[str, ModelDevice[RegisterFile | SPIRegisterFile]] = {}
        chip_selects = SPITestBus.addresses
        assert chip_selects is not None
        spi = 0
        for p in plans_:
            cs = None
            if p.driver.bus == "spi" and isinstance(p.device, DeviceNode):
                cs, spi = chip_selects[spi % len(chip_selects)], spi + 1
            if (device := _device_of(p, cs)) is not None:
                self.devices[p.driver.key] = device
        machine = machine_for(kernel)
        self.session = RoadtestSession(
            kernel,
            [],
            workdir,
            machine=machine,
            cpu=cpu,
            # Simulated time where the machine has it (UML); QEMU's guests run on real time.
            time=machine.default_time(),
            groups=[[d] for d in self.devices.values()],
            boot_args=list(boot_args),
            mem=GUEST_MEMORY,
        )
        self.modules = ModuleIndex(kernel.modules_dir)

    def __enter__(self) -> Sweeper:
        self.session.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.session.stop()

    # --- one driver ---------------------------------------------------------------------

    def sweep_one(self, plan: Plan) -> DriverResult:
        started = time.monotonic()
        driver = plan.driver

        def result(stage: Stage, detail: str = "", **more: object) -> DriverResult:
            return DriverResult(
                module=driver.module or driver.source,
                subsystem=driver.subsystem,
                source=driver.source,
                bus=driver.bus,
                machine=self.kernel.target.name if stage != Stage.NOT_BUILT else "",
                device=plan.how,
                match=plan.match,
                stage=stage,
                detail=detail,
                seconds=round(time.monotonic() - started, 3),
                **more,  # type: ignore[arg-type]
            )

        name = driver.module.replace("-", "_")
        if not driver.module or name not in self.modules.by_name:
            return result(Stage.NOT_BUILT, "the sweep kernel has no module for it")
        if plan.device is None:
            return result(Stage.NO_DEVICE, f"no OF compatible and no {driver.bus}_device_id name")
        module = self.modules.by_name[name]
        guest = self.session.ensure_guest()
        assert guest.console is not None
        mark = guest.console.mark()
        try:
            self._load(module.name)
        except (ProtocolError, GuestError, TimeoutError) as err:
            # Loading it (or a module it needs) killed the guest: its init is the finding.
            died = self._died(err, mark, self.own_modules(module.name))
            return result(Stage.NOT_LOADED, "the guest died loading it", findings=tuple(died))
        except (ModuleError, OSError) as err:
            return result(Stage.NOT_LOADED, str(err))
        progress = self._examples(plan, module.name)
        progress.findings += tuple(self._remove(module.name, mark))
        return result(
            progress.stage,
            progress.detail,
            examples=progress.examples,
            coverage=progress.coverage,
            attributes_read=progress.read,
            attributes_written=progress.written,
            findings=tuple(oracles.distinct(progress.findings)),
        )

    def _examples(self, plan: Plan, module: str) -> _Progress:
        """Bind the device against register plans until one gets past probe (exercised
        then), `examples` of them at most. An example with a finding is shrunk: Hypothesis
        looks for the smallest plan with the same finding, within SHRINK_RUNS runs."""
        done = _Progress()
        mined = plan.mined if self.use_mined else Mined()
        strategy = plans(values=mined.values, registers=mined.registers, pairs=mined.pairs)
        failing: dict[RegisterPlan, list[Finding]] = {}
        # Findings of another signature than the one being shrunk: kept with their plans,
        # not shrunk (a shrink follows one bug).
        others: list[tuple[RegisterPlan, list[Finding]]] = []
        wanted: set[str] = set()  # the signatures the shrink follows
        first = self._learn(plan, module, _first_plan(mined), done)
        runs = done.examples
        if done.failing is not None:
            failing[first] = list(done.findings)
            wanted = {f.signature for f in done.findings}

        @settings(
            max_examples=self.examples,
            database=None,
            derandomize=True,
            deadline=None,
            phases=(Phase.explicit, Phase.generate, Phase.shrink),
            suppress_health_check=list(HealthCheck),
            report_multiple_bugs=False,
            verbosity=Verbosity.quiet,  # the sweep reports findings its own way
        )
        @example(first)
        @given(strategy)
        def one(register_plan: RegisterPlan) -> None:
            nonlocal runs, wanted
            found = failing.get(register_plan)  # a plan run before: its result again
            if found is None:
                if not failing and done.stage == Stage.EXERCISED:
                    return  # past probe and exercised: the rest of the budget is not needed
                if runs >= self.examples + (SHRINK_RUNS if failing else 0):
                    return  # the shrink's budget is spent: what is smaller counts as passing
                runs += 1
                found = self._example(plan, module, register_plan, done)
                if not found:
                    return
                if wanted and not wanted & {f.signature for f in found}:
                    others.append((register_plan, found))
                    return
                failing[register_plan] = found
                wanted = wanted or {f.signature for f in found}
            done.failing = register_plan
            raise _Found(found)  # one place: Hypothesis tells failures apart by where

        if done.stage != Stage.EXERCISED or failing:
            try:
                one()
            except _Found as found:
                done.findings = tuple(found.findings)
        if done.findings:
            assert done.failing is not None
            again = reproducer(plan, done.failing)
            done.findings = tuple(replace(f, reproducer=again) for f in done.findings)
        for other_plan, found_there in others:
            again = reproducer(plan, other_plan)
            done.findings += tuple(replace(f, reproducer=again) for f in found_there)
        done.examples = runs
        return done

    def _learn(self, plan: Plan, module: str, start: RegisterPlan, done: _Progress) -> RegisterPlan:
        """The feedback loop (feedback.py): from `start`, while the probe fails and KCOV's
        comparisons teach something new, label the registers it read, then learn what it
        compared them with. Stops at a finding (`done.failing`); returns the last plan tried."""
        current = start
        for _ in range(LEARN_STEPS):
            found = self._example(plan, module, current, done)
            done.examples += 1
            if found:
                done.failing, done.findings = current, tuple(found)
                return current
            if done.stage == Stage.EXERCISED or not self._feedback_on():
                return current
            if done.comparisons is None:
                return current
            better = feedback.learned(current, done.reads, done.comparisons)
            if better is None:
                better = feedback.labelled(current, done.reads)
                if better == current:
                    return current
            current = better
        return current

    def _feedback_on(self) -> bool:
        if not self.feedback:
            return False
        if self._kcov is None:
            self._kcov = self.session.agent.exists("/sys/kernel/debug/kcov")
        return self._kcov

    def _example(
        self, plan: Plan, module: str, register_plan: RegisterPlan, done: _Progress
    ) -> list[Finding]:
        """One device answering by `register_plan`: bind; if bound, exercise it (the first
        time), unbind, rebind and unbind again. The findings of the kernel's log since; a
        finding ends the guest."""
        session = self.session
        guest = session.ensure_guest()
        assert guest.console is not None
        mark = guest.console.mark()
        modules = self.own_modules(module)
        try:
            self._load(module)
            bound = self._bind(plan, register_plan, done)
            if bound is None:
                done.detail = self._probe_error(mark) or done.detail
            else:
                first = done.stage not in (Stage.BOUND, Stage.EXERCISED)
                done.stage = Stage.BOUND if first else done.stage
                if first:
                    used = exercise.exercise(guest.agent, bound)
                    done.read, done.written = used.read, used.written
                    self._fire_interrupts()
                self._unbind(bound)
                bus = plan.driver.bus
                session.agent.write_file(f"/sys/bus/{bus}/drivers_probe", bound.rpartition("/")[2])
                self._unbind(bound)
                done.stage = Stage.EXERCISED
            self._detach()
            lines = self._lines(mark)
        except (ProtocolError, GuestError, TimeoutError) as err:
            return self._died(err, mark, modules)
        found = oracles.findings(lines, modules)
        if found:
            session.boot()  # a tainted kernel: the next example gets a clean one
        return found

    def _remove(self, module: str, mark: int) -> list[Finding]:
        """Ask kmemleak, once per driver, then remove the driver's module: what the driver
        leaked is unreferenced once its devices are gone."""
        session = self.session
        guest = session.machine
        if guest is None or not guest.alive:
            return []
        modules = self.own_modules(module)
        try:
            # Scanned while the module is loaded: kmemleak names a backtrace's functions
            # when its report is read, and a removed module's are bare addresses then.
            # The driver's objects are unreferenced once its devices are unbound; those
            # its module's own data still pointed to, once it is removed: a second scan.
            leaks = kmemleak.scan(guest.agent, session.sleep)
            # Its core module goes too (lis3lv02d beside lis3lv02d_i2c): an object only
            # the core's data still points to (lis3_dev.pdata) is unreferenced only then,
            # and the report then gives the removed modules' frames as bare addresses.
            kallsyms = guest.agent.read_file("/proc/kallsyms").decode(errors="replace")
            symbols = oracles.ModuleSymbols.parse(kallsyms, modules)
            for name in self.own_load_order(module)[::-1]:
                if guest.agent.exists(f"/sys/module/{name}"):
                    try:
                        guest.agent.remove_module(name)
                    except OSError as err:  # EWOULDBLOCK: another driver still uses it
                        log.info("%s stays loaded: %s", name, err)
            leaks += [symbols.symbolise(r) for r in kmemleak.scan(guest.agent, session.sleep)]
            lines = self._lines(mark)
        except (ProtocolError, GuestError, TimeoutError) as err:
            return self._died(err, mark, modules)
        ours, others = _whose(leaks, modules)
        for owner, report in others:
            self.late += [(owner, f) for f in oracles.leak_findings([report], {owner})]
        found = [*oracles.findings(lines, modules), *oracles.leak_findings(ours, modules)]
        if found or others:
            session.boot()
        return found

    def own_modules(self, module: str) -> set[str]:
        """The driver's module and the modules it needs from its own directory (a chip's
        core module beside its bus glue: adxl313_core for adxl313_i2c): the frames a
        report's signature takes as the driver's."""
        return set(self.own_load_order(module))

    def own_load_order(self, module: str) -> list[str]:
        """`own_modules`, dependencies first."""
        mod = self.modules.by_name[module]
        return [m.name for m in self.modules.load_order(mod) if m.path.parent == mod.path.parent]

    def _died(self, err: Exception, mark: int, modules: set[str]) -> list[Finding]:
        """The guest stopped answering or died: what it printed, and a new guest."""
        self._detach()
        guest = self.session.machine
        lines = guest.console.kernel_lines_since(mark) if guest and guest.console else []
        reports = oracles.findings(lines, modules)
        self.session.boot()
        if reports:
            return oracles.distinct(reports)  # what killed the guest, not its death again
        return [oracles.guest_died(_reason(err), lines, modules)]

    def reproduce(self, plan: Plan, register_plan: RegisterPlan) -> list[Finding]:
        """The findings of one example with `register_plan`, its module's removal and leak
        scan included: a finding's reproducer run again."""
        module = plan.driver.module.replace("-", "_")
        self._load(module)  # the same module on either bus
        guest = self.session.ensure_guest()
        assert guest.console is not None
        mark = guest.console.mark()
        found = self._example(plan, module, register_plan, _Progress())
        return oracles.distinct([*found, *self._remove(module, mark)])

    # --- the steps ----------------------------------------------------------------------

    def _load(self, module: str) -> None:
        agent = self.session.agent
        if not agent.exists(f"/sys/module/{module}"):
            mod = self.modules.by_name[module]
            for needed in self.modules.load_order(mod):
                if not agent.exists(f"/sys/module/{needed.name}"):
                    agent.load_module(str(needed.path))

    def _bind(self, plan: Plan, register_plan: RegisterPlan, done: _Progress) -> str | None:
        """Put the device behind its address and bind it; its sysfs directory if a driver
        bound, else None. What the probe read, and (with feedback) what it compared, go to
        `done`."""
        session = self.session
        model = plan.model(register_plan)
        agent = session.agent
        bus = plan.driver.bus
        device = self.devices.get(plan.driver.key)
        if device is not None:
            bound = session.attach(device, model)
            for line in bound.lines.values():
                line.set(True)  # released: an INT pin idles high
            name = bound.name
        else:
            assert isinstance(plan.device, NewDevice) and isinstance(model, RegisterFile)
            i2c = session.buses["i2c"]
            assert isinstance(i2c, I2CTestBus)
            addr = self._free_address()
            i2c.attach(session.backend, addr, (ModelHandler(model), None))
            adapter = f"/sys/bus/i2c/devices/i2c-{i2c.adapter}"
            self._new_device = (adapter, addr)
            agent.write_file(f"{adapter}/new_device", plan.device.line(addr))
            name = i2c.sysfs_name(addr, "")
        if bus == "i2c":
            self._companions(register_plan)
        tracing = self._feedback_on()
        if tracing:
            agent.kcov_start(feedback.KCOV_TRACE_CMP, feedback.WORDS)
        try:
            agent.write_file(f"/sys/bus/{bus}/drivers_probe", name)
        except OSError as err:
            # device_attach()'s error: the probe's own, when it is not -ENODEV or -ENXIO.
            done.detail = f"probe: {err.strerror}"
        finally:
            raw = agent.kcov_stop() if tracing else b""
        done.reads = tuple(model.reads)
        done.comparisons = feedback.comparisons(raw) if tracing else None
        if done.comparisons:
            done.coverage = max(done.coverage, feedback.sites(done.comparisons))
        path = f"/sys/bus/{bus}/devices/{name}"
        return path if agent.exists(f"{path}/driver") else None

    _new_device: tuple[str, int] | None = None

    def _fire_interrupts(self, times: int = 3) -> None:
        """Pulse each interrupt line of the bound device (asserted low, then released), and
        let the guest's handlers run."""
        for bound in self.session.active:
            for line in bound.lines.values():
                for _ in range(times):
                    line.set(False)
                    self.session.sleep(0.01)
                    line.set(True)
        if any(b.lines for b in self.session.active):
            self.session.sleep(0.01)

    def _unbind(self, path: str) -> None:
        agent = self.session.agent
        if agent.exists(f"{path}/driver"):
            agent.write_file(f"{path}/driver/unbind", path.rpartition("/")[2])

    def _companions(self, register_plan: RegisterPlan) -> None:
        """A register file by the same plan at every address no device of the guest's
        devicetree or new_device holds: a chip that answers at more than one address (a
        second client, i2c_new_dummy_device()) finds its other half there."""
        session = self.session
        i2c = session.buses["i2c"]
        assert isinstance(i2c, I2CTestBus)
        taken = {p.addr for p in session.layout.placements.values() if p.addr is not None}
        if self._new_device is not None:
            taken.add(self._new_device[1])
        for addr in I2C_ADDRESSES:
            if addr not in taken:
                i2c.attach(session.backend, addr, (ModelHandler(RegisterFile(register_plan)), None))
                self._others.append(addr)

    def _detach(self) -> None:
        """Take the device off the bus (and out of the guest, for a new_device one), and
        the companions with it."""
        session = self.session
        i2c_bus = session.buses["i2c"]
        assert isinstance(i2c_bus, I2CTestBus)
        for addr in self._others:
            i2c_bus.detach(session.backend, addr)
        self._others = []
        for bound in list(session.active):
            bound.bound = False  # unbound already, or its guest is gone
            session.detach(bound)
        if self._new_device is not None:
            adapter, addr = self._new_device
            self._new_device = None
            i2c = session.buses["i2c"]
            assert isinstance(i2c, I2CTestBus)
            i2c.detach(session.backend, addr)
            guest = session.machine
            if guest is not None and guest.alive:
                try:
                    guest.agent.write_file(f"{adapter}/delete_device", f"{addr:#04x}")
                except OSError:
                    pass  # not there: its instantiation failed

    def _free_address(self) -> int:
        taken = {p.addr for p in self.session.layout.placements.values() if p.addr is not None}
        for addr in reversed(I2C_ADDRESSES):
            if addr not in taken:
                return addr
        raise RoadtestError("sweep: no free I2C address for a new_device instantiation")

    def _lines(self, mark: int) -> list[str]:
        guest = self.session.ensure_guest()
        self._flushes += 1
        guest.flush_console(f"roadtest: sweep {self._flushes}", mark, timeout=10.0)
        assert guest.console is not None
        return guest.console.kernel_lines_since(mark)

    _flushes = 0

    def _probe_error(self, mark: int) -> str:
        """The kernel's line on why the probe failed, if it printed one."""
        for line in reversed(self._lines(mark)):
            if "probe" in line and ("failed" in line or "error" in line):
                return line.partition("] ")[2].strip()
        return ""


def _first_plan(mined: Mined) -> RegisterPlan:
    """The explicit first example: every (register, value) pair the source compares a read
    with, answered as it wants; the others 0."""
    return RegisterPlan(tuple(dict(mined.pairs[:16]).items()))


_MODULE_FRAME = re.compile(r"\[(\w+)\]\s*$", re.M)


def _whose(leaks: Sequence[str], modules: set[str]) -> tuple[list[str], list[tuple[str, str]]]:
    """The leak reports whose allocation names one of `modules` or no module at all (ours),
    and those that name another module only (its name, the report)."""
    ours, others = [], []
    for report in leaks:
        named = set(_MODULE_FRAME.findall(report))
        if not named or named & modules:
            ours.append(report)
        else:
            others.append((sorted(named)[0], report))
    return ours, others


def _reason(err: Exception) -> str:
    """A guest's death as a finding's title: the kind of failure, not its changing text."""
    # AgentTimeout: the agent's request outlived its limit (a driver blocked in a call).
    if isinstance(err, TimeoutError | AgentTimeout) or "timed out" in str(err):
        return "the guest stopped answering"
    return "the guest died"


def reproducer(plan: Plan, register_plan: RegisterPlan) -> str:
    """What `roadtest sweep --reproduce` needs to run a finding again: the driver (source
    and bus), its device, and the register plan the device answered by."""
    return json.dumps(
        {
            "source": plan.driver.source,
            "bus": plan.driver.bus,
            "match": plan.match,
            "plan": asdict(register_plan),
        },
        sort_keys=True,
    )


def plan_of(reproducer_text: str) -> tuple[str, RegisterPlan]:
    """The driver's key (inventory.driver_key: its source, and its bus unless I2C) and the
    register plan of a reproducer (one saved before SPI was swept is an I2C driver's)."""
    data = json.loads(reproducer_text)
    saved = data["plan"]
    registers = tuple((int(a), int(v)) for a, v in saved["registers"])
    source, bus = str(data["source"]), str(data.get("bus", "i2c"))
    return driver_key(source, bus), RegisterPlan(
        registers, int(saved["default"]), int(saved["block_length"])
    )
