"""Listening Unix sockets, as the backend's devices and the time-travel calendar make them."""

from __future__ import annotations

import os
import socket
from pathlib import Path


def listen_unix(path: Path, backlog: int) -> socket.socket:
    """A non-blocking listening socket at `path`, replacing a stale socket file left there
    (OSError if it cannot be made)."""
    try:
        path.unlink()
    except FileNotFoundError:
        pass
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
    try:
        sock.bind(os.fspath(path))
        sock.listen(backlog)
    except OSError:
        sock.close()
        raise
    sock.setblocking(False)
    return sock
