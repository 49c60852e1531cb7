"""The backend's log records, kept so that a failing test can show its own."""

from __future__ import annotations

import logging


class BackendLog(logging.Handler):
    """Keeps the backend's log records so a failing test can show its own."""

    def __init__(self) -> None:
        super().__init__(level=logging.DEBUG)
        self.records: list[str] = []
        self.setFormatter(
            logging.Formatter("%(relativeCreated)10.1f ms %(levelname)s %(name)s: %(message)s")
        )

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(self.format(record))


# The one handler, on the "roadtest" logger from pytest_configure on.
BACKEND_LOG = BackendLog()
