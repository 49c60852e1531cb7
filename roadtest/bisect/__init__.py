"""`roadtest bisect`: which commit of a kernel tree, or which patch of a series, changed a
driver's behaviour, with tests or golden traces as the oracle (command.py)."""
