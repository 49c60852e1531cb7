"""An x86_64 guest under QEMU (--roadtest-machine x86_64): the drivers in a real x86 kernel.

`X86_64_QEMU` is the machine type: a kernel for roadtest.arch.x86_64, the
backend's devices as QEMU's vhost-user-i2c-pci and vhost-user-gpio-pci (the
backend serves them unchanged), and `QEMUGuest`s. The guest boots the bzImage
with -kernel; its root is the host's, read-only, over virtio 9p, and the
run's work directory is a second, writable 9p share. The console is the
serial port; the agent's channel is a virtio-serial port (bulk transfers: a
16550 under TCG traps once per byte). QEMU runs confined by sandbox.py, as
UML does: even a QEMU bug cannot write outside the work directory.

x86 takes its devicetree only from setup_data (SETUP_DTB), which QEMU fills
from -dtb; `qemu_dtb` works around QEMU 10.0's misplaced pointer to it.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import socket
import struct
import subprocess
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from roadtest.arch.x86_64 import X86_64
from roadtest.machine.base import BootConfig, GuestError, MachineType, VirtioNode, device_node
from roadtest.machine.guest_python import guest_python, python_path
from roadtest.machine.initramfs import initramfs
from roadtest.machine.process import (
    COMMON_BOOT_ARGS,
    ProcessGuest,
    confined,
    init_args,
)

BINARY = "qemu-system-x86_64"
# `pc` without the legacy devices no test uses: the PS/2 controller alone cost 0.5 s of
# every boot under TCG (the kernel waits for its mouse probe before mounting the root).
MACHINE = "pc,i8042=off,vmport=off,smbus=off,sata=off,usb=off"
# TCG's default CPU (qemu64) with RDRAND, which the kernel trusts to seed its random
# generator (random.trust_cpu is on): without it, Python's first read of /dev/urandom at
# init waited about 1 s under TCG for the generator to gather jitter entropy.
TCG_CPU = ("-cpu", "qemu64,+rdrand")
MEMORY = "256M"  # the host's Python and a debug kernel; UML's 128M default is too little

# The vhost-user frontend QEMU has for each virtio device id (the virtio spec's, 5.18/5.19).
FRONTENDS = {0x22: "vhost-user-i2c-pci", 0x29: "vhost-user-gpio-pci"}
# Devices QEMU has no frontend for, and why, for the test that declares one. SPI (45):
# QEMU 10.0 has no vhost-user-spi, and its generic vhost-user-device-pci is not
# user-creatable ("Parameter 'driver' expects a pluggable device type").
NO_FRONTEND = {
    0x2D: "QEMU has no vhost-user SPI frontend (QEMU 10 has none, and its generic "
    "vhost-user-device-pci is not user-creatable), so the guest has no SPI controller; "
    "SPI devices run on UML, and under QEMU with --vm qemu",
}
# PCI slots: the agent's port, then the backend's devices (their devicetree nodes name
# these slots), then the two 9p shares.
AGENT_SLOT = 3
FIRST_VIRTIO_SLOT = 4
AGENT_PORT = "/dev/vport0p1"  # port 1 of the first virtio-serial device
OUTPUT_PORT = "/dev/vport0p2"  # port 2: a --vm run's output (QEMUGuest.output)
ROOT_TAG = "/dev/root"  # Documentation/filesystems/9p.rst's tag for a 9p root
ROOT_OPTIONS = "trans=virtio,version=9p2000.L,cache=loose,msize=262144"

# Boot protocol (Documentation/arch/x86/boot.rst).
_SETUP_SECTS = 0x1F1
_HEADER_MAGIC = 0x202
SETUP_DTB = 2
_SETUP_DATA_HEADER = struct.Struct("<QII")  # next, type, len


@dataclass(frozen=True)
class QEMU:
    """The QEMU found on the host."""

    path: str
    version: tuple[int, int, int]

    @property
    def describe(self) -> str:
        return f"QEMU {'.'.join(map(str, self.version))}"

    @property
    def gpio_interrupts(self) -> bool:
        """Whether its vhost-user-gpio offers VIRTIO_GPIO_F_IRQ: 7.2's does not (a driver
        that needs its interrupt stays deferred), 10.0's does."""
        return self.version >= (10, 0, 0)


_VERSION = re.compile(r"QEMU emulator version (\d+)\.(\d+)\.(\d+)")


@functools.cache
def find_qemu() -> QEMU:
    """The host's qemu-system-x86_64 (GuestError if there is none, or it does not run)."""
    path = shutil.which(BINARY)
    if path is None:
        raise GuestError(
            f"{BINARY} not found: --machine x86_64 needs QEMU "
            "(scripts/setup-system.sh installs 10.x from bookworm-backports)"
        )
    try:
        out = subprocess.run(
            [path, "--version"], capture_output=True, text=True, timeout=30, check=True
        ).stdout
    except (OSError, subprocess.SubprocessError) as err:
        raise GuestError(f"{path} --version failed: {err}") from None
    match = _VERSION.search(out)
    if match is None:
        raise GuestError(f"{path} --version: no version in {out.strip()!r}")
    major, minor, micro = (int(g) for g in match.groups())
    return QEMU(path, (major, minor, micro))


@dataclass(frozen=True)
class Accelerator:
    name: str  # QEMU's -accel
    why: str  # why this one, for the report

    @property
    def describe(self) -> str:
        return f"{self.name}: {self.why}"


ACCEL_ENV = "ROADTEST_QEMU_ACCEL"


def choose_accelerator(forced: str, cpuinfo: str, kvm_error: str | None) -> Accelerator:
    """KVM where the CPU has hardware virtualisation and /dev/kvm opens (`kvm_error` None),
    TCG otherwise; `forced` (kvm or tcg) overrides.

    A /dev/kvm without vmx or svm is a software KVM (kvm-pvm here): the decompressor
    crawled there, and the guest died after 240 s ("emulation failure" on an XRSTOR)."""
    if forced:
        if forced not in ("kvm", "tcg"):
            raise GuestError(f"${ACCEL_ENV}: {forced!r} is not kvm or tcg")
        return Accelerator(forced, f"${ACCEL_ENV}")
    if not re.search(r"^flags\s*:.*\b(vmx|svm)\b", cpuinfo, re.MULTILINE):
        return Accelerator("tcg", "the CPU has no vmx or svm")
    if kvm_error is not None:
        return Accelerator("tcg", f"/dev/kvm: {kvm_error}")
    return Accelerator("kvm", "/dev/kvm and hardware virtualisation")


@functools.cache
def accelerator() -> Accelerator:
    """This host's accelerator ($ROADTEST_QEMU_ACCEL, kvm or tcg, overrides the choice)."""
    try:
        cpuinfo = Path("/proc/cpuinfo").read_text()
    except OSError:
        cpuinfo = ""
    try:
        os.close(os.open("/dev/kvm", os.O_RDWR | os.O_CLOEXEC))
        kvm_error = None
    except OSError as err:
        kvm_error = err.strerror
    return choose_accelerator(os.environ.get(ACCEL_ENV, ""), cpuinfo, kvm_error)


def setup_size(bzimage: bytes) -> int:
    """The bytes of a bzImage's real-mode setup: (setup_sects + 1) sectors (0 means 4)."""
    if len(bzimage) < 0x260 or bzimage[_HEADER_MAGIC : _HEADER_MAGIC + 4] != b"HdrS":
        raise GuestError("not a bzImage (no HdrS boot header)")
    sects = bzimage[_SETUP_SECTS] or 4
    return (sects + 1) * 512


def qemu_dtb(dtb: bytes, setup: int) -> bytes:
    """The file to give QEMU's -dtb so that the kernel finds `dtb` on any QEMU.

    QEMU puts -dtb's file in a setup_data entry and points the kernel at it. QEMU 10.0
    (since its commit 214191f6b574, "x86/loader: read complete kernel") points `setup`
    bytes too far: it counts the offset from the whole file but loads only what follows
    the setup sectors. So the file is the DTB, zeros up to `setup` - 16, a setup_data
    header of its own (SETUP_DTB), then the DTB again: a correct QEMU's pointer lands on
    the first copy (the kernel reads the DTB's own size), 10.0's on the second header."""
    room = setup - _SETUP_DATA_HEADER.size
    if len(dtb) > room:
        raise GuestError(
            f"the devicetree is {len(dtb)} bytes; QEMU's -dtb workaround needs it under "
            f"{room} (the kernel's setup size less 16)"
        )
    header = _SETUP_DATA_HEADER.pack(0, SETUP_DTB, len(dtb))
    return dtb + bytes(room - len(dtb)) + header + dtb


class QEMUGuest(ProcessGuest):
    """One x86_64 guest: qemu-system-x86_64, confined on the host by sandbox.py.

    A --vm run's VM has more: `shares`, host directories it may write besides its work
    directory (9p, at the same paths); `overlay`, a root that is the host's under a tmpfs
    in the guest's memory (writable in the guest, the host's untouched); and `output`,
    a port (OUTPUT_PORT) whose bytes go to this file object."""

    name = "QEMU x86_64"

    def __init__(
        self,
        config: BootConfig,
        shares: Sequence[Path] = (),
        overlay: bool = False,
        output: BinaryIO | None = None,
    ) -> None:
        super().__init__(config)
        if config.terminal is not None:
            raise GuestError("a terminal in the guest (roadtest shell) needs a UML guest")
        self.virtio = list(config.virtio)
        self.shares = [self.workdir, *(p.resolve() for p in shares)]
        for path in self.shares:
            if any(c in str(path) for c in ' ;="\t'):
                raise GuestError(f"{path}: QEMU's 9p shares cannot have a space, ; or = in it")
        self.overlay = overlay
        self.output = output
        self.qemu = find_qemu()
        self.accel = accelerator()
        self.agent_socket = self.workdir / "agent.sock"
        self.output_socket = self.workdir / "output.sock"
        self._listeners: dict[Path, socket.socket] = {}
        self._output_thread: threading.Thread | None = None

    def describe(self) -> str:
        return f"{self.name} {self.release} ({self.qemu.describe}, {self.accel.describe})"

    def kernel_args(self) -> list[str]:
        cfg = self.config
        args = [
            "console=ttyS0",
            *(self._root_from_initramfs() if self.initrd is not None else self._root_args()),
            # A panic (oops=panic, panic_on_warn) resets at once; -no-reboot ends QEMU.
            "panic=-1",
            # Reset by a triple fault: the kernel's first ways (ACPI's reset register, then
            # the keyboard controller, which MACHINE leaves out) took 3 s under TCG.
            "reboot=t",
            *COMMON_BOOT_ARGS,
            *cfg.extra_args,
            f"ROADTEST_WORK={self.workdir}",
            f"ROADTEST_SHARES={';'.join(f'fs{i}={p}' for i, p in enumerate(self.shares, 1))}",
            *(["ROADTEST_ROOT_OVERLAY=1"] if self.overlay else []),
            f"ROADTEST_AGENT_TTY={AGENT_PORT}",
            "ROADTEST_POWER_OFF=reboot",
            f"ROADTEST_PYTHONPATH={python_path()}",
            *init_args(cfg.python),
        ]
        return args

    def _root_args(self) -> list[str]:
        """The kernel mounts the 9p root and runs init from it."""
        return [
            f"root={ROOT_TAG}",
            "rootfstype=9p",
            f"rootflags={ROOT_OPTIONS}",
            "ro",
            f"init={self.config.python}",
        ]

    def _root_from_initramfs(self) -> list[str]:
        """The kernel runs init from the initramfs; init mounts the 9p root itself."""
        return [f"rdinit={self.config.python}", f"ROADTEST_ROOT_9P={ROOT_TAG}:{ROOT_OPTIONS}"]

    @functools.cached_property
    def initrd(self) -> Path | None:
        """The initramfs of what the guest's Python reads at start (initramfs.py), or None
        where the host could not list it."""
        found = guest_python(self.config.python)
        return initramfs(found.files) if found is not None else None

    def program(self) -> list[str]:
        cfg = self.config
        memory = cfg.mem if self.overlay else MEMORY
        args = [
            self.qemu.path,
            *("-M", MACHINE, "-accel", self.accel.name, "-m", memory, "-smp", "1"),
            *(TCG_CPU if self.accel.name == "tcg" else ()),
            *("-nodefaults", "-no-user-config", "-display", "none", "-no-reboot"),
            # vhost-user needs the guest's memory shared with the backend.
            *("-object", f"memory-backend-memfd,id=mem,size={memory},share=on"),
            *("-machine", "memory-backend=mem"),
            *("-chardev", "stdio,id=console,signal=off", "-serial", "chardev:console"),
            *("-kernel", str(cfg.image), "-append", " ".join(self.kernel_args())),
        ]
        if self.initrd is not None:
            args += ["-initrd", str(self.initrd)]
        if cfg.dtb is not None:
            args += ["-dtb", str(self.workdir / "qemu.dtb")]
        for slot, node in enumerate(self.virtio, FIRST_VIRTIO_SLOT):
            frontend = FRONTENDS.get(node.device_id)
            if frontend is None:
                raise GuestError(f"QEMU has no vhost-user frontend for virtio device {node.label}")
            args += ["-chardev", f"socket,id={node.label},path={node.socket}"]
            args += ["-device", f"{frontend},chardev={node.label},addr={slot:#x}"]
        args += [
            *("-device", f"virtio-serial-pci,addr={AGENT_SLOT:#x}"),
            *("-chardev", f"socket,id=agent,path={self.agent_socket}"),
            *("-device", "virtserialport,chardev=agent,name=roadtest.agent,nr=1"),
        ]
        if self.output is not None:
            args += [
                *("-chardev", f"socket,id=output,path={self.output_socket}"),
                *("-device", "virtserialport,chardev=output,name=roadtest.output,nr=2"),
            ]
        # The host's root, read-only (multidevs=remap: its mounts' inode numbers collide),
        # then the writable shares, each with the tag ROADTEST_SHARES gives init.
        shares = [(ROOT_TAG, Path("/"), ",readonly=on,multidevs=remap")]
        shares += [(f"fs{i}", path, "") for i, path in enumerate(self.shares, 1)]
        for i, (tag, path, extra) in enumerate(shares):
            slot = FIRST_VIRTIO_SLOT + len(self.virtio) + i
            args += ["-fsdev", f"local,id=fs{i},path={path},security_model=none{extra}"]
            args += ["-device", f"virtio-9p-pci,fsdev=fs{i},mount_tag={tag},addr={slot:#x}"]
        # The guest is untrusted, and so is a QEMU it may exploit: confine QEMU on the host.
        return confined(cfg, self.shares, args)

    def prepare(self) -> None:
        if self.config.dtb is not None:
            setup = setup_size(self.config.image.read_bytes()[:0x1000])
            (self.workdir / "qemu.dtb").write_bytes(qemu_dtb(self.config.dtb.read_bytes(), setup))

    def open_channel(self) -> tuple[int, ...]:
        # QEMU connects to them (client chardevs) as it starts, as it does to the backend.
        paths = [self.agent_socket] + ([self.output_socket] if self.output is not None else [])
        for path in paths:
            path.unlink(missing_ok=True)
            listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
            listener.bind(str(path))
            listener.listen(1)
            self._listeners[path] = listener
        return ()

    def _accept(self, path: Path, deadline: float) -> socket.socket:
        listener = self._listeners[path]
        listener.settimeout(0.1)
        while True:
            try:
                conn, _ = listener.accept()
                break
            except TimeoutError:
                pass
            if self.exited():
                raise GuestError(f"{BINARY} exited before it connected {path.name}")
            if time.monotonic() > deadline:
                raise GuestError(f"{BINARY} did not connect {path.name}")
        conn.setblocking(True)
        return conn

    def connect_channel(self, deadline: float) -> socket.socket:
        agent = self._accept(self.agent_socket, deadline)
        if self.output is not None:
            output = self._accept(self.output_socket, deadline)
            self._output_thread = threading.Thread(
                target=_copy, args=(output, self.output), name="roadtest-vm-output", daemon=True
            )
            self._output_thread.start()
        self._close_listeners()
        return agent

    def _close_listeners(self) -> None:
        for path, listener in self._listeners.items():
            listener.close()
            path.unlink(missing_ok=True)
        self._listeners.clear()

    def cleanup(self) -> None:
        self._close_listeners()
        if self._output_thread is not None:
            self._output_thread.join(5.0)  # QEMU is gone: the port's last bytes are in
            self._output_thread = None


def _copy(conn: socket.socket, out: BinaryIO) -> None:
    with conn:
        while data := conn.recv(65536):
            out.write(data)
            out.flush()


class QEMUMachine(MachineType):
    name = "x86_64"
    target = X86_64

    def describe(self) -> str:
        try:
            qemu, accel = find_qemu(), accelerator()
        except GuestError as err:
            return f"{self.name} ({err})"
        return f"{self.name} under {qemu.describe} ({accel.describe})"

    def unsupported(self, interrupts: bool) -> str | None:
        qemu = find_qemu()
        if interrupts and not qemu.gpio_interrupts:
            return (
                f"unsupported on {qemu.describe}: its vhost-user-gpio offers no interrupts "
                "(VIRTIO_GPIO_F_IRQ), so the driver would wait for its IRQ forever; "
                "QEMU 10 (bookworm-backports) has them"
            )
        return None

    def cannot_carry(self, device_id: int) -> str | None:
        if device_id in FRONTENDS:
            return None
        return NO_FRONTEND.get(
            device_id, f"QEMU has no vhost-user frontend for virtio device {device_id}"
        )

    def devicetree_root(self, virtio: Sequence[VirtioNode]) -> str:
        # The PCI host bridge's node (x86's pcibios_get_phb_of_node matches bus-range),
        # a node per slot (reg: devfn << 8), each holding the virtio device's node.
        slots = "".join(
            f"        virtio@{slot:x} {{\n"
            f"            reg = <{slot << 11:#x} 0 0 0 0>;\n"
            f"{device_node(node, '            ')}"
            "        };\n"
            for slot, node in enumerate(virtio, FIRST_VIRTIO_SLOT)
        )
        # No compatible at the root: with one, x86 takes its APIC and timer setup from
        # the devicetree (which has none) in place of the MP table.
        return (
            "/ {\n"
            "    #address-cells = <1>;\n"
            "    #size-cells = <1>;\n"
            "    pci {\n"
            '        device_type = "pci";\n'
            "        bus-range = <0 0>;\n"
            "        #address-cells = <3>;\n"
            "        #size-cells = <2>;\n"
            f"{slots}"
            "    };\n"
            "};\n"
        )

    def machine(self, config: BootConfig) -> QEMUGuest:
        return QEMUGuest(config)


X86_64_QEMU = QEMUMachine()
