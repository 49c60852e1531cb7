"""Where the roadtest checkout is: kernel-patches/, tests/ and traces/ live there.

Its own module because everything from the cli to the pytest plugin needs it,
and none of them should import another for it.
"""

from __future__ import annotations

import os
from pathlib import Path


def repo_root() -> Path:
    """The roadtest checkout ($ROADTEST_ROOT, else the tree this package is in)."""
    env = os.environ.get("ROADTEST_ROOT")
    if env:
        return Path(env).resolve()
    return Path(__file__).resolve().parents[1]
