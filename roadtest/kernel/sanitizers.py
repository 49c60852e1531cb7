"""The sanitizer kernel (`roadtest build --sanitizers`, `roadtest run --sanitizers`): the main
kernel's config with KASAN, kmemleak and larger stacks on top, and a release of its own
("-roadtest-fuzz"), for fuzzing. Its options, and why, are in its fragment."""

from __future__ import annotations

from pathlib import Path

from roadtest.arch import Target
from roadtest.arch.um import UM
from roadtest.errors import RoadtestError
from roadtest.kernel.build import Variant
from roadtest.kernel.config import config_fragments

FRAGMENT = Path("kernel-patches") / "sanitizers.config"

# Its guests' kernel arguments, after the machine's own (the last slub_debug= wins).
# slub_debug's red zones and poisoning (Z, P) give a false KASAN report at boot here:
# "slab-out-of-bounds in init_object", SLUB writing a new slab's left red zone. mm/slub.c
# is built without KASAN, but with GCC 12 (no CONFIG_CC_HAS_KASAN_MEMINTRINSIC_PREFIX)
# and no CONFIG_GENERIC_ENTRY (UML has none; x86 has it) mm/kasan/shadow.c replaces
# memset() with one that checks every caller. KASAN's own red zones and quarantine do
# what Z and P would; F (consistency checks) stays.
BOOT_ARGS = ("slub_debug=F",)


def kernel_variant(root: Path, target: Target = UM) -> Variant:
    """The main kernel's fragments, then the sanitizers' (merged last: its release wins)."""
    if target != UM:
        raise RoadtestError(
            f"the sanitizer kernel is UML's: {target.name} has none yet (fuzz with "
            "--no-sanitizers there)"
        )
    return Variant((*config_fragments(root, target), root / FRAGMENT))
