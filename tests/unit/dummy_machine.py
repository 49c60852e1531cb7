"""A test-only machine, registered through the machine seam: its "guest" is a thread in this
process that answers the agent protocol with canned replies. It boots nothing, so the
session, the plugin and the devicetree can be tested without a kernel."""

from __future__ import annotations

import errno
import os
import socket
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from roadtest.arch import Target
from roadtest.guest.client import AgentClient
from roadtest.guest.protocol import Channel, ProtocolError
from roadtest.kernel import Kernel, Variant
from roadtest.machine.base import (
    BootConfig,
    GuestError,
    Machine,
    MachineType,
    VirtioNode,
    device_node,
)
from roadtest.machine.console import Console

DUMMY_TARGET = Target(
    name="dummy",
    make_arch="dummy",
    cross_compile="",
    defconfig="defconfig",
    base_config=Path("kernel-patches") / "base.config",
    build_targets=("image",),
    image=Path("image"),
    guest_machine="x86_64",
)

# What the canned agent lists: one I2C adapter, and a /proc with init only.
LISTINGS = {"/sys/bus/i2c/devices": ["i2c-0"], "/proc": ["1"]}


class DummyGuest(Machine):
    name = "dummy"

    def __init__(self, config: BootConfig) -> None:
        self.config = config
        self.workdir = config.workdir
        self.console_log = self.workdir / "console.log"
        self.kernel_log = self.workdir / "kernel.log"
        self.requests: list[dict[str, Any]] = []
        self._agent: AgentClient | None = None
        self._thread: threading.Thread | None = None
        self._status: int | None = None

    @property
    def agent(self) -> AgentClient:
        if self._agent is None:
            raise GuestError("the guest is not running")
        return self._agent

    @property
    def alive(self) -> bool:
        return self._agent is not None and not self._agent.broken and self._status is None

    def start(self) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)
        host, guest = socket.socketpair()
        console_r, self._console_w = os.pipe()
        self.console = Console(console_r, self.console_log, self.kernel_log)
        self._host, self._guest = host, guest
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()
        self._agent = AgentClient(Channel(host.fileno()), timeout=5.0)
        self.release = str(self._agent.wait_ready(5.0)["release"])

    def _serve(self) -> None:
        channel = Channel(self._guest.fileno())
        channel.send({"ready": True, "release": "6.12.0-dummy"})
        while True:
            try:
                request = channel.recv()
            except ProtocolError:
                break
            self.requests.append(request)
            op = request.get("op")
            if op == "poweroff":
                channel.send({"r": None})
                break
            if op == "kmsg":
                os.write(self._console_w, f"[    0.000000] {request['text']}\n".encode())
                channel.send({"r": None})
            elif op == "listdir" and request["path"] in LISTINGS:
                channel.send({"r": LISTINGS[request["path"]]})
            elif op == "listdir":  # as the agent answers for a path that is not there
                channel.send({"errno": errno.ENOENT, "msg": f"no {request['path']}"})
            elif op == "ping":
                channel.send({"r": None})
            else:
                channel.send({"errno": errno.ENOSYS, "msg": f"the dummy guest has no {op}"})
        self._status = 0

    def stop(self, timeout: float = 10.0) -> None:
        if self._agent is not None and self.alive:
            self._agent.call("poweroff")
        self.kill()

    def abort(self) -> None:
        self._guest.shutdown(socket.SHUT_RDWR)  # the agent's channel ends, as when UML dies

    def kill(self) -> None:
        if self._thread is None:
            return
        self._guest.shutdown(socket.SHUT_RDWR)
        self._thread.join(5.0)
        self._status = 0 if self._status is None else self._status
        os.close(self._console_w)
        assert self.console is not None
        self.console.wait_closed(5.0)
        self._host.close()
        self._guest.close()
        self._agent = None
        self._thread = None

    def exit_status(self, wait: float) -> int | None:
        return self._status


class DummyMachine(MachineType):
    """Boots DummyGuests; its devicetree puts each virtio device in a "dummy,virtio" node."""

    name = "dummy"
    target = DUMMY_TARGET

    def __init__(self, kernel: Kernel) -> None:
        self.kernel = kernel
        self.booted: list[DummyGuest] = []

    def build(self, repo_root: Path, variant: Variant | None = None) -> Kernel:
        return self.kernel

    def devicetree_root(self, virtio: Sequence[VirtioNode]) -> str:
        transports = "".join(
            f'    transport@{i} {{\n        compatible = "dummy,virtio";\n'
            f'        socket = "{node.socket}";\n{device_node(node, "        ")}    }};\n'
            for i, node in enumerate(virtio)
        )
        return f'/ {{\n    compatible = "roadtest,dummy";\n{transports}}};\n'

    def machine(self, config: BootConfig) -> DummyGuest:
        guest = DummyGuest(config)
        self.booted.append(guest)
        return guest


def dummy_kernel(tmp_path: Path, include_root: Path) -> Kernel:
    """A Kernel whose "source" has only the dt-bindings headers the devicetree includes."""
    modules = tmp_path / "modules"
    modules.mkdir(exist_ok=True)
    return Kernel(
        release="6.12.0-dummy",
        source_dir=include_root,
        build_dir=tmp_path,
        target=DUMMY_TARGET,
        image=tmp_path / "image",
        modules_dir=modules,
        config=tmp_path / ".config",
    )


def fake_include_root(root: Path) -> Path:
    """A stand-in for the kernel tree's dt-bindings headers."""
    bindings = root / "scripts/dtc/include-prefixes/dt-bindings"
    (bindings / "gpio").mkdir(parents=True, exist_ok=True)
    (bindings / "interrupt-controller").mkdir(parents=True, exist_ok=True)
    (bindings / "gpio/gpio.h").write_text("#define GPIO_ACTIVE_HIGH 0\n#define GPIO_ACTIVE_LOW 1\n")
    (bindings / "interrupt-controller/irq.h").write_text(
        "#define IRQ_TYPE_EDGE_RISING 1\n#define IRQ_TYPE_EDGE_FALLING 2\n"
    )
    return root
