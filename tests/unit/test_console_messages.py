"""The agent's busy/idle tracking in the console device: length-prefixed messages in a
byte stream (roadtest.guest.protocol's framing: a 4-byte little-endian length, then the
body), counted however the stream is cut."""

from __future__ import annotations

import struct

import pytest

from roadtest.backend.console import MessageCounter
from roadtest.guest.protocol import encode


def stream() -> bytes:
    return encode({"op": "ping"}) + encode({"r": b"x" * 300}) + struct.pack("<I", 0)


@pytest.mark.parametrize("cut", [1, 2, 3, 4, 5, 7, 64, 1000])
def test_messages_are_counted_however_the_stream_is_cut(cut: int) -> None:
    data = stream()
    counter = MessageCounter()
    for i in range(0, len(data), cut):
        counter.feed(data[i : i + cut])
    assert (counter.started, counter.ended) == (3, 3)


def test_a_message_started_is_not_ended_until_its_last_byte() -> None:
    data = encode({"op": "read_file", "path": "/sys/x"})
    counter = MessageCounter()
    counter.feed(data[:2])  # half the length prefix: the message has begun
    assert (counter.started, counter.ended) == (1, 0)
    counter.feed(data[2:-1])
    assert (counter.started, counter.ended) == (1, 0)
    counter.feed(data[-1:])
    assert (counter.started, counter.ended) == (1, 1)
