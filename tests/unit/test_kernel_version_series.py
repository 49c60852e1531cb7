"""Our stable-branch series (kernel-patches/6.1.y/) go, after kernel-patches/series, to a
--tree of that version only: the distribution's 6.12 build and other trees never see them."""

from __future__ import annotations

from pathlib import Path

from roadtest.kernel.build import our_series
from roadtest.kernel.tree import KernelTree


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_a_trees_version_brings_its_stable_series_after_ours(tmp_path: Path) -> None:
    patches = tmp_path / "kernel-patches"
    write(patches / "series", "um\n")
    main = write(patches / "um/0001-fix.patch", "")
    write(patches / "um/series", "0001-fix.patch\n")
    write(patches / "6.1.y/series", "# for 6.1 trees\num\n")
    backport = write(patches / "6.1.y/um/0001-fix.patch", "")
    write(patches / "6.1.y/um/series", "0001-fix.patch\n")

    def tree(version: str) -> KernelTree:
        return KernelTree(tmp_path / "linux", version, "", None)

    assert our_series(tmp_path, tree("6.1.192")) == [main, backport]
    assert our_series(tmp_path, tree("6.1.0")) == [main, backport]
    assert our_series(tmp_path, tree("6.12.118")) == [main]
    assert our_series(tmp_path, tree("6.10.3")) == [main]
    assert our_series(tmp_path, None) == [main]  # the distribution's source
