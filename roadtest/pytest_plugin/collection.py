"""The devices each collected test module declares: a group tests use together; and the
kernel-version marks, checked before any guest boots."""

from __future__ import annotations

import pytest

from roadtest.pytest_plugin.kernel_marks import check_marks
from roadtest.pytest_plugin.stash import DEVICES
from roadtest.testing.devices import Device, declared_devices


def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    check_marks(items)
    groups: dict[str, list[Device]] = {}
    for item in items:
        module = getattr(item, "module", None)
        if module is None or module.__name__ in groups:
            continue
        groups[module.__name__] = declared_devices(module)
    config.stash[DEVICES] = groups


def collected(config: pytest.Config) -> dict[str, list[Device]]:
    """The devices each collected test module declares, by module name."""
    return config.stash.get(DEVICES, {})
