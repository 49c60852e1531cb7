"""The kernels roadtest builds from one tree, each one data object: the main kernel and its
variants. The CLI, the plugin, `--vm`, the benches and the coverage summary ask here which
kernel a run needs; a machine says which variants it has (MachineType.variants).

A variant's config is the main kernel's fragments with its own merged after them (its
release, set there, then wins), and its build may set kbuild variables of its own.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from roadtest.arch import Target
from roadtest.errors import RoadtestError
from roadtest.kernel.build import Kernel, Variant, ensure_kernel
from roadtest.kernel.config import config_fragments


@dataclass(frozen=True)
class KernelVariant:
    name: str  # what `roadtest build --NAME` and the messages call it
    purpose: str  # one line, for help texts and errors
    fragments: tuple[str, ...] = ()  # under the repository, merged after the main kernel's
    # (target name, fragment): merged after `fragments` on that target only.
    target_fragments: tuple[tuple[str, str], ...] = ()
    make_vars: tuple[str, ...] = ()  # kbuild variables of its build
    boot_args: tuple[str, ...] = ()  # its guests' kernel arguments, before the user's
    # What fails a test on it beyond what fails it anywhere, and where a run reports it.
    reports: str = ""

    @property
    def is_main(self) -> bool:
        return self is MAIN

    def build_variant(
        self,
        root: Path,
        target: Target,
        extra: Sequence[Path] = (),
        generated: Sequence[Path] = (),
    ) -> Variant | None:
        """What the cache builds for it on `target`: None for the main kernel without
        `extra` (directories of a user's tests, whose *.config fragments come after ours).
        `generated`: fragments made for this build (the sweep's drivers), merged last."""
        if self.is_main and not extra and not generated:
            return None
        fragments = (
            *config_fragments(root, target, extra),
            *(root / f for f in self.own_fragments(target)),
            *generated,
        )
        return Variant(fragments, self.make_vars)

    def own_fragments(self, target: Target) -> tuple[str, ...]:
        """Its fragments on `target`, in merge order."""
        return (*self.fragments, *(f for t, f in self.target_fragments if t == target.name))

    def ensure(self, root: Path, target: Target, generated: Sequence[Path] = ()) -> Kernel:
        """This kernel for `target`, built if the cache has no current one."""
        variant = self.build_variant(root, target, generated=generated)
        return ensure_kernel(root, variant=variant, target=target)


MAIN = KernelVariant("main", "the kernel of every run that asks for no variant")

# kbuild's own gcov flags, for module objects only (CFLAGS_GCOV is expanded by kbuild):
# the main kernel has gcov support, idle (base.config). Why modules only: coverage.py.
COVERAGE = KernelVariant(
    "coverage",
    "the gcov kernel that `run --coverage` uses",
    make_vars=("CFLAGS_MODULE=$(CFLAGS_GCOV)",),
    reports="a line and branch summary of the driver modules the tests loaded, at the end",
)

# slub_debug's red zones and poisoning (Z, P) give a false KASAN report at boot here:
# "slab-out-of-bounds in init_object", SLUB writing a new slab's left red zone. mm/slub.c
# is built without KASAN, but with GCC 12 (no CONFIG_CC_HAS_KASAN_MEMINTRINSIC_PREFIX)
# and no CONFIG_GENERIC_ENTRY (UML has none; x86 has it) mm/kasan/shadow.c replaces
# memset() with one that checks every caller. KASAN's own red zones and quarantine do
# what Z and P would; F (consistency checks) stays (the last slub_debug= wins).
SANITIZERS = KernelVariant(
    "sanitizers",
    "the KASAN and kmemleak kernel that `run --sanitizers`, fuzzing and the sweep use",
    fragments=("kernel-patches/sanitizers.config",),
    # UML's own options (its stack size), and the drivers of make test's mini-sweep
    # (tests/guest/test_mini_sweep.py), which runs on UML.
    target_fragments=(
        ("um", "kernel-patches/sanitizers-um.config"),
        ("um", "kernel-patches/sweep-mini.config"),
    ),
    # KCOV for the modules only (sanitizers.config), as COVERAGE's gcov.
    make_vars=("CFLAGS_MODULE=$(CFLAGS_KCOV)",),
    boot_args=("slub_debug=F",),
    reports="a KASAN report fails the test that caused it; hostile mode asks kmemleak "
    "after each unbind",
)

# The sanitizer kernel with every I2C and SPI driver the sweep can build as a module: the
# drivers' fragment is made from the tree's inventory (roadtest/sweep/kernel.py) and
# passed as `generated`.
SWEEP = KernelVariant(
    "sweep",
    "the sanitizer kernel with every I2C and SPI driver `roadtest sweep` binds, as modules",
    fragments=(*SANITIZERS.fragments, "kernel-patches/sweep.config"),
    target_fragments=SANITIZERS.target_fragments,
    make_vars=SANITIZERS.make_vars,
    boot_args=SANITIZERS.boot_args,
    reports="each driver's findings, in the sweep's results database",
)

VARIANTS = {v.name: v for v in (MAIN, COVERAGE, SANITIZERS, SWEEP)}


def get(name: str) -> KernelVariant:
    try:
        return VARIANTS[name]
    except KeyError:
        raise RoadtestError(
            f"unknown kernel variant {name!r}: roadtest has {', '.join(VARIANTS)}"
        ) from None
