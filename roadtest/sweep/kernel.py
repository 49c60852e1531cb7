"""The sweep's kernel: the SWEEP variant (roadtest.kernel.variants) with a fragment that
asks for every driver of the inventory that builds for the target.

The fragment is *settled*: it asks kconfig for what the inventory wants (kconfig.requests:
the drivers as modules, and what they need), lets olddefconfig decide over the variant's
own configuration, and then lists each of those symbols with the value it ended with. The
build's config check (every fragment's request honoured) then holds by construction, and
the either/or pairs come out the one way kconfig takes them. It is cached by what it was
made from: the requests and the variant's fragments."""

from __future__ import annotations

import hashlib
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

from roadtest.arch import Target
from roadtest.atomic import write_atomically
from roadtest.kernel.config import configure, parse_config
from roadtest.kernel.runner import Runner
from roadtest.kernel.variants import SWEEP
from roadtest.sweep import kconfig
from roadtest.sweep.inventory import Driver

# Bump when how the fragment is made changes.
_FRAGMENT_VERSION = 1


def swept(drivers: Sequence[Driver], target: Target) -> list[Driver]:
    """The drivers the sweep kernel for `target` is asked to build."""
    return [d for d in drivers if d.symbol and d.builds.get(target.name)]


def drivers_fragment(
    tree: Path,
    drivers: Sequence[Driver],
    target: Target,
    root: Path,
    cache_dir: Path,
    progress: Callable[[str], None],
) -> Path:
    """The settled fragment of `drivers` for `target`, from the cache or made now (an
    olddefconfig run in a scratch directory; `tree` is only read)."""
    wanted = kconfig.requests(
        kconfig.KconfigTree(tree, kconfig.kconfig_macros(target)), swept(drivers, target)
    )
    base = [f for f in _variant_fragments(root, target)]
    digest = hashlib.sha256(f"{_FRAGMENT_VERSION}\n{tree}\n{target.name}\n".encode())
    digest.update(kconfig.fragment_text(wanted).encode())
    for fragment in base:
        digest.update(fragment.read_bytes())
    path = cache_dir / "sweep" / f"drivers-{target.name}-{digest.hexdigest()[:16]}.config"
    if path.is_file():
        return path
    progress(f"sweep: settling the drivers' config for {target.name} ({len(wanted)} symbols)")
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="roadtest-sweep-config-") as scratch:
        build_dir = Path(scratch) / "build"
        build_dir.mkdir()
        runner = Runner(path.parent / "drivers-config.log", progress)
        configured = configure(runner, tree, build_dir, base, root, target)
        start = Path(scratch) / "base.config"
        start.write_bytes(configured.read_bytes())
        request = Path(scratch) / "request.config"
        request.write_text(kconfig.fragment_text(wanted))
        final = kconfig.settle(runner, tree, build_dir, start, request, target)
    settled = {name: final.get(f"CONFIG_{name}") for name in wanted}
    on = {name: value for name, value in settled.items() if value is not None}
    off = [name for name, value in settled.items() if value is None]
    write_atomically(path, kconfig.fragment_text(on, off))
    return path


def built_symbols(fragment: Path) -> set[str]:
    """The symbols a settled fragment turns on (m or y), without CONFIG_."""
    return {
        name.removeprefix("CONFIG_")
        for name, value in parse_config(fragment.read_text()).items()
        if value in ("m", "y")
    }


def _variant_fragments(root: Path, target: Target) -> list[Path]:
    variant = SWEEP.build_variant(root, target)
    assert variant is not None  # SWEEP is not the main kernel
    return list(variant.fragments)
