"""pytest.main as roadtest's verbs call it."""

from __future__ import annotations

import os
from collections.abc import Sequence

import pytest

_XDIST_OPTIONS = {"--numprocesses", "--dist", "--tx", "-d", "--looponfail", "-f"}


def pytest_main(pytest_args: list[str], plugins: Sequence[object] = ()) -> int:
    """pytest.main, without the plugins a roadtest run does not use (they cost start-up)."""
    # Hypothesis' pytest plugin: 1.3x the CPU of a trivial run's start (~0.15 s, bytecode
    # cached; 6.170 no longer imports Hypothesis for it). @given tests work without it (the
    # profiles suppress the fixture health check it would add); ROADTEST_HYPOTHESIS_PLUGIN=1
    # keeps it, for its options.
    if os.environ.get("ROADTEST_HYPOTHESIS_PLUGIN") != "1":
        pytest_args = ["-p", "no:hypothesispytest", *pytest_args]
    # Loading xdist costs ~0.15 s; only load it when the run asks for workers.
    wants_xdist = any(a.split("=")[0] in _XDIST_OPTIONS or a[:2] == "-n" for a in pytest_args)
    if not wants_xdist and not os.environ.get("PYTEST_ADDOPTS"):
        pytest_args = ["-p", "no:xdist", *pytest_args]
    return int(pytest.main(pytest_args, plugins=list(plugins)))
