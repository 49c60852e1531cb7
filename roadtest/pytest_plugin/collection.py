"""The devices each collected test module declares: a group tests use together; the
kernel-version marks, checked before any guest boots; and the tests left to a replay
(`--roadtest-leave-replayed`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from roadtest.pytest_plugin.kernel_marks import check_marks
from roadtest.pytest_plugin.options import run_options
from roadtest.pytest_plugin.stash import DEVICES
from roadtest.replayer.golden import scan_golden
from roadtest.testing.devices import Device, declared_devices


def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    check_marks(items)
    golden = run_options(config).leave_replayed
    if golden is not None:
        leave_replayed(config, items, replayed_tests(golden))
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


def replayed_tests(golden: Path) -> set[str]:
    """The tests (node ids) that have a trace under `golden`: `roadtest replay --golden`
    runs each of them, with its driver's I/O checked against the trace."""
    return {header.test for header in scan_golden(golden).headers.values()}


def leave_replayed(config: pytest.Config, items: list[pytest.Item], replayed: set[str]) -> None:
    """Deselect the tests a replay runs (as -k does: pytest counts them as deselected)."""
    left = [item for item in items if item.nodeid in replayed]
    if left:
        config.hook.pytest_deselected(items=left)
        items[:] = [item for item in items if item.nodeid not in replayed]
