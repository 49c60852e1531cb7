"""Reading and writing sysfs attributes the way the RFC's tests do."""

from __future__ import annotations

from roadtest.testing.guestpath import GuestPath


def read_str(path: GuestPath) -> str:
    return path.read_text().rstrip("\n")


def read_int(path: GuestPath, base: int = 10) -> int:
    return int(read_str(path), base)


def read_float(path: GuestPath) -> float:
    return float(read_str(path))


def write_str(path: GuestPath, value: str) -> None:
    path.write_text(value)


def write_int(path: GuestPath, value: int) -> None:
    write_str(path, str(value))


def write_float(path: GuestPath, value: float) -> None:
    write_str(path, repr(value))
