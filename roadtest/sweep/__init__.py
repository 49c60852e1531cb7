"""`roadtest sweep`: every I2C driver of the kernel's device subsystems, bound against an
invented device. Its first part is the inventory of those drivers, read from the kernel
tree itself (inventory.py), with what kconfig lets each be built for (kconfig.py), and
`roadtest sweep --list` (command.py)."""
