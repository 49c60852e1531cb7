"""Exercise what a driver's probe created, through its userspace ABI only: every sysfs
attribute of the device and of its class devices (the directories below the device's:
iio:deviceN, hwmon/hwmonN, rtc/rtcN, power_supply/..., leds/..., input/inputN,
gpiochipN, regulator/...), and their character devices.

- Every readable attribute is read.
- Every writable one gets the boundary values (BOUNDARY: 0, -1, the limits of the C
  integer types, an empty string, 4 KiB of garbage), each followed by a read back; the
  attributes whose effect leaves the device are skipped (SKIPPED).
- A class device with a `dev` attribute is opened at /dev/<DEVNAME> (its uevent names
  it), read without blocking, and, for an RTC, asked its time (RTC_RD_TIME) and set to
  what it said (RTC_SET_TIME).

What the driver answers (an errno, a value) is counted, not judged: a sweep's verdicts
come from the kernel's own reports (oracles.py). A guest that stops answering raises the
agent's ProtocolError to the caller.
"""

from __future__ import annotations

import os
import random
from collections import Counter
from dataclasses import dataclass, field

from roadtest.guest.client import AgentClient
from roadtest.testing.rtc import RTC_RD_TIME, RTC_SET_TIME, RTC_TIME

# What leaves the device or its driver: unbinding, rebinding elsewhere, a fake uevent
# (udev-less here, but a "remove" uevent confuses nothing we would learn from).
SKIPPED = frozenset({"unbind", "bind", "driver_override", "uevent"})

_GARBAGE_SIZE = 4096  # a sysfs store gets at most a page


def boundary_values(seed: str) -> tuple[bytes, ...]:
    """The values written to each writable attribute; the garbage is the same for the
    same `seed` (the attribute's path), so a run repeats."""
    garbage = random.Random(seed).randbytes(_GARBAGE_SIZE)
    return (
        b"0",
        b"-1",
        b"1",
        b"2147483647",
        b"-2147483648",
        b"4294967295",
        b"9223372036854775807",
        b"-9223372036854775808",
        b"18446744073709551615",
        b"",
        garbage,
    )


@dataclass
class Exercised:
    read: int = 0  # attribute reads that returned data
    written: int = 0  # attribute writes the driver accepted
    refused: Counter[str] = field(default_factory=Counter)  # errno name -> how many
    devices: int = 0  # character devices opened

    def count_error(self, err: OSError) -> None:
        name = os.strerror(err.errno) if err.errno is not None else type(err).__name__
        self.refused[name] += 1


def exercise(agent: AgentClient, device_dir: str) -> Exercised:
    """Read and write every attribute under `device_dir` (a device's sysfs directory), and
    use its class devices' character devices."""
    done = Exercised()
    entries = agent.walk(device_dir)
    attributes = [(name, mode) for name, kind, mode in entries if kind == "f"]
    for name, mode in attributes:
        path = f"{device_dir}/{name}"
        if mode & 0o444:
            _read(agent, path, done)
    for name, mode in attributes:
        path = f"{device_dir}/{name}"
        if mode & 0o222 and name.rpartition("/")[2] not in SKIPPED:
            for value in boundary_values(path):
                try:
                    agent.write_file(path, value)
                    done.written += 1
                except OSError as err:
                    done.count_error(err)
                if mode & 0o444:
                    _read(agent, path, done)
    for name, _ in attributes:
        if name.rpartition("/")[2] == "dev":
            _use_device(agent, f"{device_dir}/{name.rpartition('/')[0]}", done)
    return done


def _read(agent: AgentClient, path: str, done: Exercised) -> None:
    try:
        agent.read_file(path)
        done.read += 1
    except OSError as err:
        done.count_error(err)


def _devname(agent: AgentClient, class_dir: str) -> str | None:
    try:
        uevent = agent.read_file(f"{class_dir}/uevent").decode(errors="replace")
    except OSError:
        return None
    for line in uevent.splitlines():
        if line.startswith("DEVNAME="):
            return "/dev/" + line.removeprefix("DEVNAME=")
    return None


def _use_device(agent: AgentClient, class_dir: str, done: Exercised) -> None:
    node = _devname(agent, class_dir)
    if node is None:
        return
    try:
        fd = agent.open(node, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as err:
        done.count_error(err)
        return
    done.devices += 1
    try:
        try:
            agent.read(fd, 4096)
        except OSError as err:
            done.count_error(err)
        if node.startswith("/dev/rtc"):
            try:
                _, now = agent.ioctl(fd, RTC_RD_TIME, bytes(RTC_TIME.size))
                if now is not None:
                    agent.ioctl(fd, RTC_SET_TIME, now)
            except OSError as err:
                done.count_error(err)
    finally:
        agent.close(fd)
