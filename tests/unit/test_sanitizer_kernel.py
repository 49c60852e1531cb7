"""The sanitizer kernel's configuration: the main kernel's, with the sanitizers on top."""

from __future__ import annotations

from pathlib import Path

from roadtest.arch.um import UM
from roadtest.checkout import repo_root
from roadtest.kernel import config_fragments
from roadtest.kernel.config import requested_options
from roadtest.kernel.variants import SANITIZERS


def test_it_asks_for_kasan_kmemleak_and_a_release_of_its_own() -> None:
    root = repo_root()
    main = requested_options(config_fragments(root))
    variant = requested_options(_fragments(root))
    for option in ("CONFIG_KASAN", "CONFIG_DEBUG_KMEMLEAK", "CONFIG_PROVE_LOCKING", "CONFIG_UBSAN"):
        assert variant[option].value == "y", option
    # A release of its own: its modules never load into the main kernel, nor the reverse.
    assert variant["CONFIG_LOCALVERSION"].value != main["CONFIG_LOCALVERSION"].value


def test_the_drivers_under_test_are_built_as_in_the_main_kernel() -> None:
    root = repo_root()
    main = requested_options(config_fragments(root))
    variant = requested_options(_fragments(root))
    drivers = {n: r.value for n, r in main.items() if r.fragment.is_relative_to(root / "tests")}
    assert drivers  # the drivers' fragments (tests/**/*.config)
    assert {name: variant[name].value for name in drivers} == drivers


def _fragments(root: Path) -> list[Path]:
    variant = SANITIZERS.build_variant(root, UM)
    assert variant is not None
    return list(variant.fragments)
