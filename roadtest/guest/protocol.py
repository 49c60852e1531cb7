"""Framing shared by the guest agent and its host client.

A message is a 4-byte little-endian length followed by that many bytes of
msgpack. A request is a map with an "op" key and the op's arguments; a reply
is {"r": value} on success or {"errno": n, "msg": text} when the guest raised
OSError (the host re-raises it with the same errno). Messages stay small: the
channel is a UML tty line, where every byte costs time.
"""

from __future__ import annotations

import os
import struct

import msgpack

TYPE_CHECKING = False  # not typing's: importing typing costs the guest ~60 ms of boot
if TYPE_CHECKING:
    from typing import Any

LENGTH = struct.Struct("<I")
MAX_MESSAGE = 16 << 20
# Before the channel is up: the console line in which init says why the guest could not
# get ready (the host gives it as the reason the guest did not boot).
BOOT_FAILED = "roadtest init:"


class ProtocolError(Exception):
    """The byte stream between host and agent is broken (peer gone or garbage)."""


def encode(message: dict[str, Any]) -> bytes:
    body: bytes = msgpack.packb(message, use_bin_type=True)
    return LENGTH.pack(len(body)) + body


def decode(body: bytes) -> dict[str, Any]:
    try:
        message = msgpack.unpackb(body, raw=False, strict_map_key=False)
    except (ValueError, msgpack.UnpackException) as err:
        raise ProtocolError(f"undecodable message: {err}") from err
    if not isinstance(message, dict):
        raise ProtocolError(f"message is a {type(message).__name__}, not a map")
    return message


class Channel:
    """Length-prefixed msgpack messages over a pair of file descriptors."""

    def __init__(self, rfd: int, wfd: int | None = None) -> None:
        self.rfd = rfd
        self.wfd = rfd if wfd is None else wfd
        self._buf = bytearray()

    def send(self, message: dict[str, Any]) -> None:
        data = memoryview(encode(message))
        while data:
            n = os.write(self.wfd, data)
            data = data[n:]

    def _fill(self, size: int) -> None:
        while len(self._buf) < size:
            chunk = os.read(self.rfd, max(65536, size - len(self._buf)))
            if not chunk:
                raise ProtocolError("channel closed by peer")
            self._buf += chunk

    def has_buffered(self) -> bool:
        """Whether bytes of a next message already arrived (so select() would lie)."""
        return bool(self._buf)

    def recv(self) -> dict[str, Any]:
        self._fill(LENGTH.size)
        (size,) = LENGTH.unpack_from(self._buf)
        if size > MAX_MESSAGE:
            raise ProtocolError(f"message of {size} bytes exceeds the {MAX_MESSAGE}-byte limit")
        self._fill(LENGTH.size + size)
        body = bytes(self._buf[LENGTH.size : LENGTH.size + size])
        del self._buf[: LENGTH.size + size]
        return decode(body)
