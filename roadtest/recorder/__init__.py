"""Traces of what a driver did with a device: the file format and its register-level decoding.

See SCHEMA.md here for the format (schema version 1).
"""

from roadtest.recorder.decode import Decoder
from roadtest.recorder.format import (
    FORMAT,
    SCHEMA_VERSION,
    SUFFIX,
    Header,
    TraceError,
    TraceReader,
    TraceWriter,
    load_trace,
    read_trace,
    validate_event,
    write_trace_atomic,
)

__all__ = [
    "FORMAT",
    "SCHEMA_VERSION",
    "SUFFIX",
    "Decoder",
    "Header",
    "TraceError",
    "TraceReader",
    "TraceWriter",
    "load_trace",
    "read_trace",
    "validate_event",
    "write_trace_atomic",
]
