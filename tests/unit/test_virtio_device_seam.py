"""Virtio devices as plug-ins: a device type declared once (its class: name, virtio device id,
devicetree properties) is served by the backend and appears in every machine's devicetree."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from fake_frontend import FakeFrontend

from roadtest.backend import registry
from roadtest.backend.device import VirtioDevice
from roadtest.backend.gpio import VirtioGpio
from roadtest.backend.i2c import VirtioI2C
from roadtest.backend.server import Backend
from roadtest.backend.spi import VirtioSpi
from roadtest.backend.virtqueue import Virtqueue
from roadtest.machine.uml import UML
from roadtest.testing.devicetree import build
from roadtest.testing.session import virtio_nodes


class VirtioEcho(VirtioDevice):
    """Test-only: answers each request with its bytes reversed."""

    device_id = 0x3F  # not assigned by the virtio spec
    name = "echo"
    num_queues = 1
    dt_properties = "echo-depth = <3>;"

    def queue_kicked(self, vq: Virtqueue) -> None:
        while (req := vq.pop()) is not None:
            vq.push(req, req.write(req.out[::-1]), notify=False)
        vq.notify()


@pytest.fixture
def echo_registered() -> Iterator[None]:
    registry.register(VirtioEcho)
    try:
        yield
    finally:
        registry.unregister(VirtioEcho)


def fdtget(dtb: Path, node: str, prop: str, kind: str = "s") -> str:
    return subprocess.run(
        ["fdtget", "-t", kind, str(dtb), node, prop], capture_output=True, text=True, check=True
    ).stdout.strip()


def test_the_device_ids_are_the_virtio_specs() -> None:
    # Virtio 1.2, 5 "Device Types": 34 is the I2C adapter, 41 the GPIO device; the 1.4
    # draft's SPI Controller Device section: 45.
    assert VirtioI2C.device_id == 34
    assert VirtioGpio.device_id == 41
    assert VirtioSpi.device_id == 45


def test_the_uml_tree_declares_each_device_with_its_spec_id(tmp_path: Path) -> None:
    dtb = build(
        [], include_root(tmp_path), tmp_path, UML.devicetree_root(virtio_nodes(Backend(Path("/w"))))
    )
    # Documentation/devicetree/bindings/virtio/virtio-device.yaml: "virtio,device<hex id>";
    # virtio_uml reads the id from virtio-device-id and the socket from socket-path.
    assert fdtget(dtb, "/virtio@0/gpio", "compatible") == "virtio,device29"
    assert fdtget(dtb, "/virtio@0", "virtio-device-id", "u") == "41"
    assert fdtget(dtb, "/virtio@0", "socket-path") == "/w/gpio.sock"
    assert fdtget(dtb, "/virtio@1/i2c", "compatible") == "virtio,device22"
    assert fdtget(dtb, "/virtio@1", "virtio-device-id", "u") == "34"
    assert fdtget(dtb, "/virtio@1", "socket-path") == "/w/i2c.sock"
    assert fdtget(dtb, "/virtio@2/spi", "compatible") == "virtio,device2d"
    assert fdtget(dtb, "/virtio@2", "virtio-device-id", "u") == "45"
    assert fdtget(dtb, "/virtio@2", "socket-path") == "/w/spi.sock"
    # Its children are SPI devices: reg is the chip select, with no size.
    assert fdtget(dtb, "/virtio@2/spi", "#address-cells", "u") == "1"
    assert fdtget(dtb, "/virtio@2/spi", "#size-cells", "u") == "0"


def include_root(tmp_path: Path) -> Path:
    bindings = tmp_path / "ksrc/scripts/dtc/include-prefixes/dt-bindings"
    for header in ("gpio/gpio.h", "interrupt-controller/irq.h"):
        (bindings / header).parent.mkdir(parents=True, exist_ok=True)
        (bindings / header).write_text("")
    return tmp_path / "ksrc"


@pytest.mark.usefixtures("echo_registered")
def test_a_registered_device_is_in_the_devicetree(tmp_path: Path) -> None:
    root = UML.devicetree_root(virtio_nodes(Backend(Path("/w"))))
    dtb = build([], include_root(tmp_path), tmp_path, root)
    assert fdtget(dtb, "/virtio@3/echo", "compatible") == "virtio,device3f"
    assert fdtget(dtb, "/virtio@3/echo", "echo-depth", "u") == "3"
    assert fdtget(dtb, "/virtio@3", "virtio-device-id", "u") == "63"
    assert fdtget(dtb, "/virtio@3", "socket-path") == "/w/echo.sock"


@pytest.mark.usefixtures("echo_registered")
def test_the_backend_serves_a_registered_device_over_vhost_user(tmp_path: Path) -> None:
    with Backend(tmp_path) as backend:
        assert backend.socket("echo") == tmp_path / "echo.sock"
        with FakeFrontend.connect(backend.socket("echo")) as fe:
            (q,) = fe.setup(num_queues=1)
            q.add([b"\x01\x02\x03"], [3])
            q.kick()
            (done,) = q.wait_used()
        assert done.written == 3 and done.buffers == [b"\x03\x02\x01"]
        assert backend.device(VirtioEcho).connections == 1
        # The built-in devices are still there.
        assert backend.i2c_socket.is_socket() and backend.gpio_socket.is_socket()


def test_a_device_type_is_registered_once(echo_registered: None) -> None:
    with pytest.raises(ValueError, match="'echo' is registered already"):
        registry.register(VirtioEcho)
