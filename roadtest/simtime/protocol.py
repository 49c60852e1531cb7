"""UML's time-travel protocol (include/uapi/linux/um_timetravel.h), as this controller uses it.

Every message is 16 bytes, `<IIQ`: op, seq, time (ns). Each is answered with an
ACK carrying the same seq (GET's and GET_TOD's carry a time); the controller's
RUN is ACKed by the guest. Shared-memory scheduling is declined: the START ACK
carries a memfd whose version is not UM_TIMETRAVEL_SCHEDSHM_VERSION, and the
guest then talks messages only.
"""

from __future__ import annotations

import struct
from typing import Final

MESSAGE: Final = struct.Struct("<IIQ")

ACK: Final = 0
START: Final = 1
REQUEST: Final = 2
WAIT: Final = 3
GET: Final = 4
UPDATE: Final = 5
RUN: Final = 6
FREE_UNTIL: Final = 7
GET_TOD: Final = 8
BROADCAST: Final = 9

NAMES: Final = {
    ACK: "ACK",
    START: "START",
    REQUEST: "REQUEST",
    WAIT: "WAIT",
    GET: "GET",
    UPDATE: "UPDATE",
    RUN: "RUN",
    FREE_UNTIL: "FREE_UNTIL",
    GET_TOD: "GET_TOD",
    BROADCAST: "BROADCAST",
}

# The START ACK's fds: the schedule's shared memory and a log fd. 6.12 reads both slots
# whatever was sent (time.c, TTMH_READ_START_ACK): sending none makes it close fd 0.
SHARED_FDS: Final = 2
SCHEDSHM_HEADER: Final = 4096  # the memfd's size: the guest maps its header to read the version


class TimeProtocolError(Exception):
    """The guest broke the time-travel protocol."""


def name(op: int) -> str:
    return NAMES.get(op, f"op {op}")
