"""Cache keys, the patch series and the kernel source: what decides whether a build is reused."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from roadtest.arch.um import UM
from roadtest.errors import RoadtestError
from roadtest.kernel import cache, source
from roadtest.kernel.cache import build_key, source_key
from roadtest.kernel.source import SourceIdentity, read_series, source_identity

IDENTITY = SourceIdentity(Path("/usr/src/linux-source-6.12.tar.xz"), 151970188, 1, "6.12.118-1")


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    out = {}
    for name, text in {
        "p1": "patch one\n",
        "p2": "patch two\n",
        "base": "CONFIG_A=y\n",
        "frag": "CONFIG_B=m\n",
    }.items():
        out[name] = tmp_path / name
        out[name].write_text(text)
    return out


def key(identity: SourceIdentity, patches: list[Path], fragments: list[Path]) -> str:
    return build_key(source_key(identity, patches), fragments, UM.key_data())


def test_key_is_stable_for_the_same_inputs(files: dict[str, Path]) -> None:
    p, f = [files["p1"], files["p2"]], [files["base"], files["frag"]]
    assert key(IDENTITY, p, f) == key(IDENTITY, list(p), list(f))
    assert len(key(IDENTITY, p, f)) == 64


def test_key_changes_with_a_patch(files: dict[str, Path]) -> None:
    p, f = [files["p1"], files["p2"]], [files["base"]]
    before = key(IDENTITY, p, f)
    files["p2"].write_text("patch two, refreshed\n")
    assert key(IDENTITY, p, f) != before
    assert key(IDENTITY, [files["p1"]], f) != before  # a patch dropped from the series


def test_key_changes_with_series_order(files: dict[str, Path]) -> None:
    f = [files["base"]]
    assert key(IDENTITY, [files["p1"], files["p2"]], f) != key(
        IDENTITY, [files["p2"], files["p1"]], f
    )


def test_key_changes_with_a_fragment_or_their_order(files: dict[str, Path]) -> None:
    p = [files["p1"]]
    before = key(IDENTITY, p, [files["base"], files["frag"]])
    assert key(IDENTITY, p, [files["frag"], files["base"]]) != before
    files["frag"].write_text("CONFIG_B=y\n")
    assert key(IDENTITY, p, [files["base"], files["frag"]]) != before


def test_source_key_ignores_fragments_so_configs_share_the_tree(files: dict[str, Path]) -> None:
    src = source_key(IDENTITY, [files["p1"]])
    um = UM.key_data()
    assert build_key(src, [files["base"]], um) != build_key(src, [files["frag"]], um)
    files["frag"].write_text("CONFIG_C=y\n")
    assert source_key(IDENTITY, [files["p1"]]) == src


@pytest.mark.parametrize(
    "other",
    [
        SourceIdentity(IDENTITY.tarball, IDENTITY.size + 1, IDENTITY.mtime_ns, "6.12.118-1"),
        SourceIdentity(IDENTITY.tarball, IDENTITY.size, 2, "6.12.118-1"),
        SourceIdentity(IDENTITY.tarball, IDENTITY.size, 1, "6.12.119-1"),
        SourceIdentity(Path("/elsewhere.tar.xz"), IDENTITY.size, 1, "6.12.118-1"),
    ],
)
def test_key_changes_with_source_identity(files: dict[str, Path], other: SourceIdentity) -> None:
    assert key(other, [files["p1"]], [files["base"]]) != key(
        IDENTITY, [files["p1"]], [files["base"]]
    )


def test_key_version_is_part_of_the_key(
    files: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    before = key(IDENTITY, [files["p1"]], [files["base"]])
    monkeypatch.setattr(cache, "KEY_VERSION", "999")
    assert key(IDENTITY, [files["p1"]], [files["base"]]) != before


def test_replacing_the_tarball_changes_its_identity(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tarball = tmp_path / "linux.tar.xz"
    tarball.write_bytes(b"one")
    monkeypatch.setenv(source.SOURCE_ENV, str(tarball))
    first = source_identity()
    assert first.package_version is None  # only asked of dpkg for the Debian tarball
    tarball.write_bytes(b"three")
    os.utime(tarball, ns=(first.mtime_ns + 10**9, first.mtime_ns + 10**9))
    assert source_identity() != first


def test_series_order_comments_and_blanks(tmp_path: Path) -> None:
    patches = tmp_path / "kernel-patches"
    patches.mkdir()
    for name in ("0001-a.patch", "0002-b.patch"):
        (patches / name).write_text("")
    (patches / "series").write_text(
        "# the series\n\n0002-b.patch   # applied first\n  0001-a.patch\n#0003-c.patch\n"
    )
    assert [p.name for p in read_series(tmp_path)] == ["0002-b.patch", "0001-a.patch"]


def test_no_series_means_no_patches(tmp_path: Path) -> None:
    assert read_series(tmp_path) == []


def test_series_naming_a_missing_patch(tmp_path: Path) -> None:
    (tmp_path / "kernel-patches").mkdir()
    (tmp_path / "kernel-patches/series").write_text("0001-gone.patch\n")
    with pytest.raises(
        RoadtestError, match=r"series:1 names 0001-gone.patch, which does not exist"
    ):
        read_series(tmp_path)


def test_series_with_quilt_options_is_refused(tmp_path: Path) -> None:
    (tmp_path / "kernel-patches").mkdir()
    (tmp_path / "kernel-patches/a.patch").write_text("")
    (tmp_path / "kernel-patches/series").write_text("a.patch -p0\n")
    with pytest.raises(RoadtestError, match="-p1"):
        read_series(tmp_path)


def test_missing_debian_source_says_how_to_install_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    missing = tmp_path / "linux-source-6.12.tar.xz"
    monkeypatch.delenv(source.SOURCE_ENV, raising=False)
    monkeypatch.setattr(source, "DEFAULT_SOURCE", missing)
    with pytest.raises(RoadtestError) as err:
        source_identity()
    assert str(err.value) == (
        f"kernel source {missing} not found: install it with "
        "`apt-get install linux-source-6.12` (or run `make setup`)"
    )


def test_missing_override_source_names_the_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(source.SOURCE_ENV, str(tmp_path / "nope.tar.xz"))
    with pytest.raises(RoadtestError, match="ROADTEST_KERNEL_SOURCE") as err:
        source_identity()
    assert "\n" not in str(err.value)


def test_default_cache_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("ROADTEST_CACHE", str(tmp_path / "c"))
    assert cache.default_cache_dir() == tmp_path / "c"
    monkeypatch.delenv("ROADTEST_CACHE")
    assert cache.default_cache_dir() == Path.home() / ".cache" / "roadtest"


def test_series_of_series_directories(tmp_path: Path) -> None:
    patches = tmp_path / "kernel-patches"
    for name in ("um/0001-a.patch", "iio/0001-b.patch", "iio/0002-c.patch", "0001-d.patch"):
        (patches / name).parent.mkdir(parents=True, exist_ok=True)
        (patches / name).write_text("")
    (patches / "um/series").write_text("0001-a.patch\n")
    # The cover letter is in the directory but not in its series: it is not applied.
    (patches / "iio/0000-cover-letter.patch").write_text("")
    (patches / "iio/series").write_text("# iio\n0001-b.patch\n0002-c.patch\n")
    (patches / "series").write_text("iio\num   # after iio\n0001-d.patch\n")
    assert [p.relative_to(patches).as_posix() for p in read_series(tmp_path)] == [
        "iio/0001-b.patch",
        "iio/0002-c.patch",
        "um/0001-a.patch",
        "0001-d.patch",
    ]


def test_series_directory_without_series_file(tmp_path: Path) -> None:
    (tmp_path / "kernel-patches/rtc").mkdir(parents=True)
    (tmp_path / "kernel-patches/series").write_text("rtc\n")
    with pytest.raises(RoadtestError, match=r"series:1 names the directory rtc, which has no"):
        read_series(tmp_path)


def test_series_directories_do_not_nest(tmp_path: Path) -> None:
    inner = tmp_path / "kernel-patches/iio/light"
    inner.mkdir(parents=True)
    (inner / "series").write_text("")
    (tmp_path / "kernel-patches/iio/series").write_text("light\n")
    (tmp_path / "kernel-patches/series").write_text("iio\n")
    with pytest.raises(RoadtestError, match=r"iio/series:1 names the directory light"):
        read_series(tmp_path)


def test_the_repository_series_apply_in_their_documented_order() -> None:
    """kernel-patches/series names um, i2c, spi, iio, hwmon, rtc, power, regulator, input,
    leds, gpio, misc (as kernel-patches/README.md says); each directory's patches follow their
    numbers, a series of more than one patch has a cover letter, and none is applied."""
    repo = Path(__file__).resolve().parents[2]
    patches = read_series(repo)
    dirs = [p.parent.name for p in patches]
    assert list(dict.fromkeys(dirs)) == [
        "um",
        "i2c",
        "spi",
        "iio",
        "hwmon",
        "rtc",
        "power",
        "regulator",
        "input",
        "leds",
        "gpio",
        "misc",
    ]
    for name in dict.fromkeys(dirs):
        ours = [p.name for p in patches if p.parent.name == name]
        assert ours == sorted(ours) and ours[0].startswith("0001-")
        cover = repo / "kernel-patches" / name / "0000-cover-letter.patch"
        assert cover.is_file() or len(ours) == 1
    assert not any(p.name.startswith("0000-") for p in patches)
