"""`--vm qemu`: a whole `roadtest run`, `record` or `replay` inside a QEMU VM."""
