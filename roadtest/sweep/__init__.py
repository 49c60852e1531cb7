"""`roadtest sweep`: every I2C and SPI driver of the kernel's device subsystems, bound
against an invented device. The inventory of those drivers, read from the kernel tree itself
(inventory.py), with what kconfig lets each be built for (kconfig.py), and `roadtest sweep
--list` (command.py); the invented device, a register file answering by a Hypothesis plan
(device.py), the constants a driver compares its device's answers with, mined from its
source to favour in plans (constants.py), and each driver's devicetree node, from its
binding's example or its compatible (devicetree.py). Binding them in a guest is next."""
