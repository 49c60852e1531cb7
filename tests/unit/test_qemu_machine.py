"""The x86_64 QEMU machine without booting it: its devicetree (x86's PCI binding), the -dtb
file that works around QEMU 10.0's setup_data pointer, the accelerator choice, the QEMU
version, and the command line's wiring of the backend's sockets to PCI slots."""

from __future__ import annotations

import os
import stat
import struct
import subprocess
from pathlib import Path

import pytest

from roadtest.backend.server import Backend
from roadtest.machine.base import BootConfig, GuestError
from roadtest.machine.qemu import (
    X86_64_QEMU,
    QEMUGuest,
    choose_accelerator,
    find_qemu,
    qemu_dtb,
    setup_size,
)
from roadtest.testing.devicetree import build
from roadtest.testing.session import virtio_nodes


def include_root(tmp_path: Path) -> Path:
    bindings = tmp_path / "ksrc/scripts/dtc/include-prefixes/dt-bindings"
    for header in ("gpio/gpio.h", "interrupt-controller/irq.h"):
        (bindings / header).parent.mkdir(parents=True, exist_ok=True)
        (bindings / header).write_text("")
    return tmp_path / "ksrc"


def x86_dtb(tmp_path: Path) -> Path:
    root = X86_64_QEMU.devicetree_root(virtio_nodes(Backend(Path("/w"))))
    return build([], include_root(tmp_path), tmp_path, root)


def fdtget(dtb: Path, node: str, prop: str, kind: str = "s") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["fdtget", "-t", kind, str(dtb), node, prop], capture_output=True, text=True
    )


def test_devices_sit_in_pci_slots_by_the_pci_binding(tmp_path: Path) -> None:
    dtb = x86_dtb(tmp_path)
    # x86's pcibios_get_phb_of_node takes the node of device_type "pci" whose bus-range
    # holds the root bus.
    assert fdtget(dtb, "/pci", "device_type").stdout.strip() == "pci"
    assert fdtget(dtb, "/pci", "bus-range", "u").stdout.split() == ["0", "0"]
    # IEEE 1275 PCI binding: phys.hi bits 15-11 are the device number, 10-8 the function.
    gpio_reg = fdtget(dtb, "/pci/virtio@4", "reg", "x").stdout.split()
    i2c_reg = fdtget(dtb, "/pci/virtio@5", "reg", "x").stdout.split()
    assert int(gpio_reg[0], 16) == 4 << 11 and len(gpio_reg) == 5
    assert int(i2c_reg[0], 16) == 5 << 11
    assert fdtget(dtb, "/pci/virtio@4/gpio", "compatible").stdout.strip() == "virtio,device29"
    assert fdtget(dtb, "/pci/virtio@5/i2c", "compatible").stdout.strip() == "virtio,device22"


def test_the_root_has_no_compatible(tmp_path: Path) -> None:
    # With one, x86 (arch/x86/kernel/devicetree.c) would take its APIC setup from the tree.
    assert fdtget(x86_dtb(tmp_path), "/", "compatible").returncode != 0


def _setup_data_at(memory: bytes, offset: int) -> bytes:
    """What the kernel reads at a setup_data pointer: a header, then `len` bytes."""
    _next, kind, length = struct.unpack_from("<QII", memory, offset)
    assert kind == 2  # SETUP_DTB, arch/x86/include/uapi/asm/bootparam.h
    return memory[offset + 16 : offset + 16 + length]


def _fdt_at(data: bytes) -> bytes:
    magic, total = struct.unpack_from(">II", data, 0)
    assert magic == 0xD00DFEED  # the devicetree specification's FDT header
    return data[:total]


def test_the_dtb_file_is_found_by_a_correct_qemu_and_by_qemu_10_0(tmp_path: Path) -> None:
    dtb = x86_dtb(tmp_path).read_bytes()
    setup = 32 * 512  # a bzImage with setup_sects = 31, as 6.12's x86_64 one
    file = qemu_dtb(dtb, setup)
    # QEMU writes a setup_data header, then the file, and points the kernel at the header.
    memory = struct.pack("<QII", 0, 2, len(file)) + file
    assert _fdt_at(_setup_data_at(memory, 0)) == dtb
    # QEMU 10.0 points setup_size bytes too far.
    assert _fdt_at(_setup_data_at(memory, setup)) == dtb


def test_a_dtb_too_big_for_the_workaround_is_one_clear_error() -> None:
    with pytest.raises(GuestError, match="devicetree is 20000 bytes"):
        qemu_dtb(bytes(20000), 32 * 512)


def _bzimage_header(setup_sects: int) -> bytes:
    image = bytearray(0x1000)
    image[0x1F1] = setup_sects
    image[0x202:0x206] = b"HdrS"
    return bytes(image)


def test_setup_size_is_read_from_the_boot_header() -> None:
    # Documentation/arch/x86/boot.rst: the setup is setup_sects + 1 sectors; 0 means 4.
    assert setup_size(_bzimage_header(31)) == 16384
    assert setup_size(_bzimage_header(0)) == 5 * 512
    with pytest.raises(GuestError, match="not a bzImage"):
        setup_size(bytes(0x1000))


CPU_VMX = "processor\t: 0\nflags\t\t: fpu vme vmx sse\n"
CPU_PLAIN = "processor\t: 0\nflags\t\t: fpu vme sse\n"


def test_kvm_only_with_hardware_virtualisation_and_a_usable_dev_kvm() -> None:
    assert choose_accelerator("", CPU_VMX, None).name == "kvm"
    assert choose_accelerator("", CPU_VMX, "Permission denied").name == "tcg"
    # A /dev/kvm that opens on a CPU without vmx/svm is a software KVM: TCG.
    tcg = choose_accelerator("", CPU_PLAIN, None)
    assert tcg.name == "tcg" and "vmx" in tcg.why
    assert choose_accelerator("tcg", CPU_VMX, None).name == "tcg"
    with pytest.raises(GuestError, match="not kvm or tcg"):
        choose_accelerator("hvf", CPU_PLAIN, None)


def _fake_qemu(tmp_path: Path, version_line: str) -> Path:
    bindir = tmp_path / "bin"
    bindir.mkdir()
    script = bindir / "qemu-system-x86_64"
    script.write_text(f"#!/bin/sh\necho '{version_line}'\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return bindir


@pytest.fixture
def fresh_qemu_lookup() -> object:
    find_qemu.cache_clear()
    yield
    find_qemu.cache_clear()


@pytest.mark.usefixtures("fresh_qemu_lookup")
def test_qemu_7_2_has_no_gpio_interrupts_and_10_0_has(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bindir = _fake_qemu(tmp_path, "QEMU emulator version 7.2.22 (Debian 1:7.2+dfsg-7+deb12u18)")
    monkeypatch.setenv("PATH", str(bindir))
    old = find_qemu()
    assert old.version == (7, 2, 22) and not old.gpio_interrupts
    find_qemu.cache_clear()
    (bindir / "qemu-system-x86_64").write_text(
        "#!/bin/sh\necho 'QEMU emulator version 10.0.2 (Debian 1:10.0.2+ds-2)'\n"
    )
    assert find_qemu().gpio_interrupts


@pytest.mark.usefixtures("fresh_qemu_lookup")
def test_no_qemu_is_one_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(GuestError, match="qemu-system-x86_64 not found.*setup-system.sh"):
        find_qemu()


@pytest.mark.usefixtures("fresh_qemu_lookup")
def test_the_backend_sockets_go_to_the_slots_the_tree_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", f"{_fake_qemu(tmp_path, 'QEMU emulator version 10.0.2')}:/usr/bin")
    monkeypatch.setenv("ROADTEST_QEMU_ACCEL", "tcg")
    config = BootConfig(
        image=tmp_path / "bzImage",
        workdir=tmp_path / "guest",
        virtio=virtio_nodes(Backend(Path("/w")), X86_64_QEMU),
    )
    argv = QEMUGuest(config).program()
    devices = [argv[i + 1] for i, a in enumerate(argv) if a == "-device"]
    chardevs = [argv[i + 1] for i, a in enumerate(argv) if a == "-chardev"]
    assert "vhost-user-gpio-pci,chardev=gpio,addr=0x4" in devices
    assert "vhost-user-i2c-pci,chardev=i2c,addr=0x5" in devices
    assert "socket,id=gpio,path=/w/gpio.sock" in chardevs
    assert "socket,id=i2c,path=/w/i2c.sock" in chardevs
    # vhost-user maps the guest's memory: it must be a shared memfd.
    assert any("memory-backend-memfd" in a and "share=on" in a for a in argv)
    # The host's root is read-only to the guest; only the work directory is writable.
    fsdevs = [argv[i + 1] for i, a in enumerate(argv) if a == "-fsdev"]
    assert any(",path=/," in f and "readonly=on" in f for f in fsdevs)
    assert any(f",path={tmp_path / 'guest'}," in f and "readonly" not in f for f in fsdevs)
    # QEMU itself runs confined: the sandbox starts it, writable: the work directory.
    sandbox = argv.index("--writable")
    assert argv[sandbox + 1] == str(tmp_path / "guest")
    assert argv[argv.index("--") + 1].endswith("qemu-system-x86_64")
    assert os.path.basename(argv[sandbox - 1]) == "sandbox.py"


@pytest.mark.usefixtures("fresh_qemu_lookup")
def test_a_test_needing_gpio_interrupts_is_unsupported_on_qemu_7_2_with_the_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bindir = _fake_qemu(tmp_path, "QEMU emulator version 7.2.22 (Debian 1:7.2+dfsg-7+deb12u18)")
    monkeypatch.setenv("PATH", str(bindir))
    reason = X86_64_QEMU.unsupported(interrupts=True)
    assert reason is not None
    assert reason.startswith("unsupported on QEMU 7.2.22: ") and "VIRTIO_GPIO_F_IRQ" in reason
    assert X86_64_QEMU.unsupported(interrupts=False) is None
    find_qemu.cache_clear()
    (bindir / "qemu-system-x86_64").write_text("#!/bin/sh\necho 'QEMU emulator version 10.0.2'\n")
    assert X86_64_QEMU.unsupported(interrupts=True) is None
