"""UML's time-travel protocol (include/uapi/linux/um_timetravel.h), as this controller uses it.

Every message is 16 bytes, `<IIQ`: op, seq, time (ns). Each is answered with an
ACK carrying the same seq (GET's and GET_TOD's carry a time); the controller's
RUN is ACKed by the guest. The START ACK carries a memfd: the shared-memory
schedule (`Schedule`, version 2), in which the guest keeps its request and reads
the time and how far it may run alone, WAIT and RUN go unacknowledged, and GET,
REQUEST and UPDATE need no message at all; or, to decline it, a memfd whose
version is not 2, and the guest talks messages only.
"""

from __future__ import annotations

import mmap
import os
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
SCHEDSHM_VERSION: Final = 2
SCHEDSHM_HEADER: Final = 4096  # struct um_timetravel_schedshm's header, a page
SCHEDSHM_CLIENT: Final = 128  # union um_timetravel_schedshm_client
_HEADER: Final = struct.Struct("<IIQQHH")  # version, len, free_until, current_time, running_id,
# max_clients
_CLIENT: Final = struct.Struct("<IIQQ")  # capa, flags, req_time, name
_CAPA: Final = struct.Struct("<I")
_FLAGS_REQ: Final = struct.Struct("<IQ")  # flags, req_time: a client's from its offset 4
_FREE_NOW: Final = struct.Struct("<QQ")  # free_until, current_time: the header's at 8
CAP_TIME_SHARE: Final = 0x1
FLAG_REQ_RUN: Final = 0x1


class TimeProtocolError(Exception):
    """The guest broke the time-travel protocol."""


def name(op: int) -> str:
    return NAMES.get(op, f"op {op}")


class Schedule:
    """The shared-memory schedule of one guest, client 0 (struct um_timetravel_schedshm).

    The controller writes the header (the time, how far the guest may run alone, who
    runs); the guest writes its client entry (its request) and, while it runs, the time.
    `version` other than 2 makes a schedule the guest declines (message-only mode)."""

    def __init__(self, version: int = SCHEDSHM_VERSION) -> None:
        self.size = SCHEDSHM_HEADER + SCHEDSHM_CLIENT
        self.fd = os.memfd_create("roadtest-schedshm", os.MFD_CLOEXEC)
        try:
            os.ftruncate(self.fd, self.size)
            self._map = mmap.mmap(self.fd, self.size)
        except BaseException:
            os.close(self.fd)
            raise
        _HEADER.pack_into(self._map, 0, version, self.size, 1, 0, 0, 1)
        self._taken = False

    def close(self) -> None:
        self._map.close()
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def close_fd(self) -> None:
        """Sent: the guest has its own reference."""
        os.close(self.fd)
        self.fd = -1

    def publish(self, now: int, free_until: int) -> None:
        """The time is `now`; the guest may take what it asks for before `free_until`
        without asking (it moves its own clock there, and tells nobody)."""
        _FREE_NOW.pack_into(self._map, 8, free_until, now)

    @property
    def time_share(self) -> bool:
        """The guest took the schedule (it sets CAP_TIME_SHARE once it mapped it; it never
        clears it)."""
        if not self._taken:
            self._taken = bool(_CAPA.unpack_from(self._map, SCHEDSHM_HEADER)[0] & CAP_TIME_SHARE)
        return self._taken

    def request(self) -> int | None:
        """The time the guest asked to run at, or None."""
        flags, req = _FLAGS_REQ.unpack_from(self._map, SCHEDSHM_HEADER + 4)
        return req if flags & FLAG_REQ_RUN else None

    @property
    def current_time(self) -> int:
        return int(struct.unpack_from("<Q", self._map, 16)[0])
