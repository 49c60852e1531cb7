"""Where roadtest's own files are: kernel-patches/ always; tests/ and traces/ in a checkout.

Its own module because everything from the cli to the pytest plugin needs it,
and none of them should import another for it.
"""

from __future__ import annotations

import os
from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent


def repo_root() -> Path:
    """The roadtest checkout ($ROADTEST_ROOT, else the tree this package is in). An
    installed roadtest (a wheel: no checkout around it) answers with its package data,
    which holds kernel-patches/ (through the symlink roadtest/data/kernel-patches in the
    checkout) and no tests/: the user names their own."""
    env = os.environ.get("ROADTEST_ROOT")
    if env:
        return Path(env).resolve()
    checkout = _PACKAGE.parent
    if (checkout / "kernel-patches").is_dir():
        return checkout
    return _PACKAGE / "data"


def default_tests() -> Path | None:
    """The driver suite a command runs when given no tests: the checkout's tests/drivers
    (None for an installed roadtest, whose user names their tests)."""
    suite = repo_root() / "tests" / "drivers"
    return suite if suite.is_dir() else None
