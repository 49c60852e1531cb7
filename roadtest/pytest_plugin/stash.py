"""What the plugin's modules keep on pytest's config and items (pytest.StashKey)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from roadtest.pytest_plugin import examples
    from roadtest.testing.devices import Device

# The devices each collected test module declares, by module name: a group tests use together.
DEVICES: pytest.StashKey[dict[str, list[Device]]] = pytest.StashKey()
# Tests the machine cannot run as the host has it (MachineType.unsupported).
UNSUPPORTED = pytest.StashKey[list[str]]()
CALL_FAILED = pytest.StashKey[bool]()
BOOT_ARGS = pytest.StashKey[list[str]]()  # --roadtest-bootargs, split
# The last test that ended with the guest alive, and the console position then.
LAST_TEST = pytest.StashKey[tuple[str, int]]()
RUNNER: pytest.StashKey[examples.ExampleRunner] = pytest.StashKey()  # a Hypothesis test's
# The run's example figures, for `roadtest fuzz`.
EXAMPLE_STATS: pytest.StashKey[examples.ExampleStats] = pytest.StashKey()
