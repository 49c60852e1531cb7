"""Traces of what a driver did with a device, neutral ground for record and replay.

- `format`: the file format (SCHEMA.md here, schema version 2): writing,
  streaming reads, validation;
- `decode`: register-level descriptions of events, with register names;
- `names`: where traces live (DIR/<chip>/<test>.rtrace) and the test a trace names;
- `i2c`: virtio-i2c's message flags and statuses, which traces hold verbatim;
- `spi`: virtio-spi's results, mode bits and lane counts, and an SPI message as a
  trace event holds it;
- `commands`: `roadtest trace show` and `diff`.

Nothing is imported here: the backend takes `i2c` from this package, and must
not pay for the format's compression libraries.
"""
