"""A developer's tree may predate a test's driver: an option its Kconfig files do not
define at all is left out and said in one line; one the tree has but could not keep still
fails the build, as it does for the distribution's source."""

from __future__ import annotations

from pathlib import Path

import pytest

from roadtest.errors import RoadtestError
from roadtest.kernel.config import check_config


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A tree whose Kconfig defines IIO and OPT3001 but not TI_ADS1119 (added later)."""
    src = tmp_path / "linux"
    write(src / "drivers/iio/Kconfig", 'menuconfig IIO\n\ttristate "IIO"\n')
    write(src / "drivers/iio/light/Kconfig", 'config OPT3001\n\ttristate "OPT3001"\n')
    return src


def test_an_option_the_tree_does_not_have_is_left_out_and_said(tree: Path, tmp_path: Path) -> None:
    frag = write(tmp_path / "repo/tests/ti-ads1119.config", "CONFIG_IIO=y\nCONFIG_TI_ADS1119=m\n")
    final = write(tmp_path / "build/.config", "CONFIG_IIO=y\n")
    said: list[str] = []
    check_config(final, [frag], tmp_path / "repo", absent=said.append, source_dir=tree)
    assert said == [
        "kernel: not in this tree, left out: CONFIG_TI_ADS1119 (tests/ti-ads1119.config)"
    ]


def test_an_option_the_tree_has_but_dropped_still_fails(tree: Path, tmp_path: Path) -> None:
    frag = write(tmp_path / "repo/opt.config", "CONFIG_OPT3001=m\nCONFIG_TI_ADS1119=m\n")
    final = write(tmp_path / "build/.config", "# CONFIG_OPT3001 is not set\n")
    said: list[str] = []
    with pytest.raises(RoadtestError) as err:
        check_config(final, [frag], tmp_path / "repo", absent=said.append, source_dir=tree)
    assert "CONFIG_OPT3001=m" in str(err.value) and "TI_ADS1119" not in str(err.value)
    assert len(said) == 1 and "CONFIG_TI_ADS1119" in said[0]


def test_without_a_tree_every_dropped_option_fails(tmp_path: Path) -> None:
    frag = write(tmp_path / "repo/x.config", "CONFIG_TI_ADS1119=m\n")
    final = write(tmp_path / "build/.config", "")
    with pytest.raises(RoadtestError, match="CONFIG_TI_ADS1119=m"):
        check_config(final, [frag], tmp_path / "repo")
