"""The sanitizer kernel (`roadtest build --sanitizers`, `roadtest run --sanitizers`): the main
kernel's config with KASAN, kmemleak and larger stacks on top, and a release of its own
("-roadtest-fuzz"), for fuzzing. Its options, and why, are in its fragment."""

from __future__ import annotations

from pathlib import Path

from roadtest.arch import Target
from roadtest.arch.um import UM
from roadtest.kernel.build import Variant
from roadtest.kernel.config import config_fragments

FRAGMENT = Path("kernel-patches") / "sanitizers.config"


def kernel_variant(root: Path, target: Target = UM) -> Variant:
    """The main kernel's fragments, then the sanitizers' (merged last: its release wins)."""
    return Variant((*config_fragments(root, target), root / FRAGMENT))
