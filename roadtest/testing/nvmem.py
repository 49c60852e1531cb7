"""NVMEM devices from userspace: the `nvmem` binary attribute a provider registers.

With CONFIG_NVMEM_SYSFS each nvmem device has a directory, /sys/bus/nvmem/devices/NAME,
whose `nvmem` file is its whole content: read(2) and write(2) at an offset reach the
provider's reg_read/reg_write (Documentation/ABI/stable/sysfs-bus-nvmem). A driver's
nvmem device is a child of the device that registered it (the RTC core registers its
drivers' with the RTC's parent: the I2C device), so it is found from the bound device's
sysfs directory, whatever its name and number.

Reads and writes go through a file descriptor in the guest (pread at an offset; a write
from offset 0, in one write(2)), the way a userspace tool would make them.
"""

from __future__ import annotations

import os

from roadtest.testing.guestpath import GuestPath


class NvmemDevice:
    """One nvmem device: its sysfs directory (`path`) and its `nvmem` file."""

    def __init__(self, path: GuestPath) -> None:
        self.path = path
        self.name = path.name
        self.file = path / "nvmem"

    def __repr__(self) -> str:
        return f"NvmemDevice({str(self.path)!r})"

    @property
    def type(self) -> str:
        """The `type` attribute: "Battery backed", "EEPROM", "OTP", "FRAM", "Unknown"."""
        return (self.path / "type").read_text().strip()

    def size(self) -> int:
        """The content's size in bytes (the `nvmem` file's length as a read gives it)."""
        return len(self.read())

    def read(self, offset: int = 0, length: int | None = None) -> bytes:
        """`length` bytes from `offset` (None: to the end), one pread(2) at a time."""
        agent = self.file.agent
        fd = agent.open(str(self.file), os.O_RDONLY)
        try:
            out = bytearray()
            while length is None or len(out) < length:
                want = 4096 if length is None else length - len(out)
                chunk = agent.pread(fd, want, offset + len(out))
                if not chunk:
                    break
                out += chunk
            return bytes(out)
        finally:
            agent.close(fd)

    def write(self, data: bytes) -> None:
        """`data` from offset 0, in one write(2): OSError with the guest's errno (EFBIG
        past the end, EPERM for a read-only device) as the kernel returns it."""
        agent = self.file.agent
        fd = agent.open(str(self.file), os.O_WRONLY)
        try:
            written = agent.write(fd, data)
        finally:
            agent.close(fd)
        if written != len(data):
            raise OSError(f"{self.file}: wrote {written} of {len(data)} bytes")


def nvmem_devices(device_dir: GuestPath) -> list[NvmemDevice]:
    """The nvmem devices registered under a device's sysfs directory: its child directories
    that have an `nvmem` file, in name order (links such as `driver` or `subsystem` lead to
    directories without one)."""
    found = []
    for child in sorted(device_dir.iterdir(), key=lambda p: p.name):
        try:
            names = child.agent.listdir(str(child))
        except (NotADirectoryError, FileNotFoundError, PermissionError):
            continue  # an attribute, not a directory
        if "nvmem" in names:
            found.append(NvmemDevice(child))
    return found


def only_nvmem(device_dir: GuestPath) -> NvmemDevice:
    """The one nvmem device under `device_dir` (FileNotFoundError if none or several)."""
    found = nvmem_devices(device_dir)
    if len(found) != 1:
        raise FileNotFoundError(
            f"expected one nvmem device under {device_dir}, found {[d.name for d in found]}"
        )
    return found[0]
