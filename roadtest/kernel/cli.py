"""`roadtest build`: build the guest kernel, or confirm that the cached one is current."""

from __future__ import annotations

import time
from pathlib import Path

from roadtest.arch import Target
from roadtest.arch.um import UM
from roadtest.kernel.build import Variant, cached_kernel, ensure_kernel


def build_main(repo_root: Path, variant: Variant | None = None, target: Target = UM) -> int:
    """Print the kernel release, its image and whether it was cached; errors propagate as
    RoadtestError (the caller prints them as one line)."""
    kernel = cached_kernel(repo_root, variant=variant, target=target)
    if kernel is not None:
        print(f"kernel {kernel.release}: up to date ({kernel.image})")
        return 0
    start = time.monotonic()
    kernel = ensure_kernel(repo_root, variant=variant, target=target)
    print(f"kernel {kernel.release}: built in {time.monotonic() - start:.0f} s ({kernel.image})")
    return 0
