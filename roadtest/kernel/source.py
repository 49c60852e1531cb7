"""The kernel source: the distribution's tarball, unpacked into the cache with our patch series."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from roadtest.errors import RoadtestError
from roadtest.kernel.runner import Runner

DEFAULT_SOURCE = Path("/usr/src/linux-source-6.12.tar.xz")
DEBIAN_PACKAGE = "linux-source-6.12"
DEFAULT_LINE = DEBIAN_PACKAGE.removeprefix("linux-source-")  # "6.12": traces' plain names
SOURCE_ENV = "ROADTEST_KERNEL_SOURCE"
# Where Debian's linux-source-X.Y packages put their tarball; --tree takes such a name.
PACKAGES_DIR = Path("/usr/src")
PACKAGE_NAME = re.compile(r"linux-source-\d+\.\d+")
SERIES = Path("kernel-patches") / "series"

# Written inside an unpacked tree as its last step, before the rename that publishes it.
MARKER = ".roadtest-source.json"


@dataclass(frozen=True)
class SourceIdentity:
    """What the cache key knows about the tarball: cheap to compute, changes when it is replaced."""

    tarball: Path
    size: int
    mtime_ns: int
    package_version: str | None  # the Debian package's version, for the default tarball

    def describe(self) -> str:
        if self.package_version:
            return f"{_package_of(self.tarball)} {self.package_version}"
        return str(self.tarball)

    def key_data(self) -> dict[str, object]:
        return {
            "tarball": str(self.tarball),
            "size": self.size,
            "mtime_ns": self.mtime_ns,
            "package_version": self.package_version,
        }


def source_tarball() -> Path:
    override = os.environ.get(SOURCE_ENV)
    return Path(override).expanduser() if override else DEFAULT_SOURCE


def _package_of(tarball: Path) -> str:
    """The Debian package a /usr/src tarball comes from: linux-source-6.1.tar.xz's is
    linux-source-6.1."""
    return tarball.name.split(".tar", 1)[0]


def _package_version(package: str) -> str | None:
    try:
        out = subprocess.run(
            ["dpkg-query", "-W", "-f=${Version}", package],
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if out.returncode != 0:
        return None
    return out.stdout.strip() or None


def source_identity() -> SourceIdentity:
    tarball = source_tarball()
    if not tarball.is_file():
        if os.environ.get(SOURCE_ENV):
            raise RoadtestError(
                f"kernel source {tarball} (from {SOURCE_ENV}) not found: "
                f"point {SOURCE_ENV} at a kernel source tarball, or unset it"
            )
        raise RoadtestError(
            f"kernel source {tarball} not found: install it with "
            f"`apt-get install {DEBIAN_PACKAGE}` (or run `make setup`)"
        )
    st = tarball.stat()
    version = _package_version(DEBIAN_PACKAGE) if tarball == DEFAULT_SOURCE else None
    return SourceIdentity(tarball.resolve(), st.st_size, st.st_mtime_ns, version)


def tarball_identity(tarball: Path) -> SourceIdentity:
    """A kernel source tarball given to --tree (a file that exists): Debian's package
    version too when it is one of /usr/src's."""
    st = tarball.stat()
    version = _package_version(_package_of(tarball)) if tarball.parent == PACKAGES_DIR else None
    return SourceIdentity(tarball.resolve(), st.st_size, st.st_mtime_ns, version)


def packaged_tarball(name: str) -> Path | None:
    """The tarball of Debian's kernel source package `name` ("linux-source-6.1"), if that
    package is installed; None when `name` names no such package."""
    if not PACKAGE_NAME.fullmatch(name):
        return None
    for suffix in (".tar.xz", ".tar.bz2"):
        tarball = PACKAGES_DIR / f"{name}{suffix}"
        if tarball.is_file():
            return tarball
    return None


def read_series(repo_root: Path) -> list[Path]:
    """The patches kernel-patches/series names, in order (no series file: no patches).

    Its lines name the series, in the order they are applied: each a directory of
    kernel-patches/ (um/, iio/, ...) whose own `series` file lists its patches."""
    series = repo_root / SERIES
    if not series.exists():
        return []
    return read_series_file(series, SERIES)


def version_series(repo_root: Path, version: str) -> list[Path]:
    """The stable-branch series for a kernel tree of `version` ("6.1.192"), applied after
    kernel-patches/series: kernel-patches/<major>.<minor>.y/series ([] when there is none).

    Its patches are our fixes redone for that branch (um/0001 for 6.1.y), so they never
    touch the distribution's 6.12 source, whose build applies kernel-patches/series
    strictly."""
    branch = ".".join(version.split(".")[:2]) + ".y"
    series = SERIES.parent / branch / "series"
    if not (repo_root / series).is_file():
        return []
    return read_series_file(repo_root / series, series)


def read_series_file(series: Path, shown: Path | str | None = None) -> list[Path]:
    """The patches a quilt-style series file names (relative to its directory), in order.

    A line naming a directory stands for the patches of that directory's own `series`
    file (one level: a series directory holds patches, not more series)."""
    return _read_series_file(series, shown or series, nested=True)


def _read_series_file(series: Path, shown: Path | str, *, nested: bool) -> list[Path]:
    try:
        text = series.read_text()
    except OSError as err:
        raise RoadtestError(f"series {shown}: {err.strerror or err}") from None
    patches: list[Path] = []
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        if len(line.split()) != 1:
            # quilt allows "name -pN"; we apply everything with -p1, so say so rather than guess.
            raise RoadtestError(
                f"{shown}:{number}: expected one patch file name, got {line!r} "
                "(all patches are applied with -p1)"
            )
        patch = series.parent / line
        if patch.is_dir():
            inner = patch / "series"
            if not nested:
                raise RoadtestError(
                    f"{shown}:{number} names the directory {line}: a series directory "
                    "holds patches, not further series"
                )
            if not inner.is_file():
                raise RoadtestError(
                    f"{shown}:{number} names the directory {line}, which has no series file"
                )
            patches.extend(
                _read_series_file(inner, Path(shown).parent / line / "series", nested=False)
            )
            continue
        if not patch.is_file():
            raise RoadtestError(f"{shown}:{number} names {line}, which does not exist")
        patches.append(patch)
    return patches


def _display(path: Path, repo_root: Path) -> str:
    try:
        return str(path.relative_to(repo_root))
    except ValueError:
        return str(path)


def apply_patch(runner: Runner, patch: Path, cwd: Path, *options: str) -> str | None:
    """`patch -p1 --forward --batch [options]` of `patch` in `cwd`; None when it applied,
    else the line of patch's output that says what went wrong."""
    result = runner.run(
        ["patch", "-p1", "--forward", "--batch", *options, "-i", str(patch.resolve())], cwd=cwd
    )
    return None if result.returncode == 0 else _patch_failure(result.tail)


def _patch_failure(tail: list[str]) -> str:
    """The line of patch's output that says what went wrong."""
    keys = (
        "FAILED",
        "Reversed",
        "can't find file",
        "malformed",
        "Only garbage",
        "No file to patch",
    )
    for line in tail:
        if any(k in line for k in keys):
            return line.strip()
    lines = [line.strip() for line in tail if line.strip()]
    return lines[-1] if lines else "patch failed"


def unpacked_source(dest: Path) -> Path | None:
    """The tree under `dest` if it was completely unpacked and patched, else None."""
    try:
        marker = json.loads((dest / MARKER).read_text())
    except (OSError, ValueError):
        return None
    top = dest / str(marker.get("top", ""))
    return top if marker.get("top") and top.is_dir() else None


def prepare_source(
    identity: SourceIdentity,
    patches: list[Path],
    dest: Path,
    repo_root: Path,
    runner: Runner,
    progress: Callable[[str], None],
) -> Path:
    """Unpack and patch into `dest` (atomically: a temp dir renamed into place); return the tree."""
    existing = unpacked_source(dest)
    if existing is not None:
        return existing
    if dest.exists():
        # No marker: not ours, or damaged by hand. It cannot be trusted, and is rebuilt below.
        shutil.rmtree(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=dest.parent))
    try:
        progress(f"kernel: unpacking {identity.tarball}")
        runner.check(
            ["tar", "-xf", str(identity.tarball), "-C", str(tmp)],
            cwd=tmp,
            failure=f"could not unpack {identity.tarball}",
            nice=True,
        )
        tops = [p for p in tmp.iterdir() if p.is_dir()]
        if len(tops) != 1:
            raise RoadtestError(
                f"{identity.tarball} does not hold one top-level directory: "
                "is it a kernel source tarball?"
            )
        top = tops[0]
        if patches:
            progress(f"kernel: applying {len(patches)} patch{'es' if len(patches) > 1 else ''}")
        for patch in patches:
            failure = apply_patch(runner, patch, top)
            if failure is not None:
                raise RoadtestError(
                    f"kernel patch {_display(patch, repo_root)} does not apply to "
                    f"{identity.describe()} ({failure}): refresh it against "
                    f"that tree; full log: {runner.log_path}"
                )
        (tmp / MARKER).write_text(
            json.dumps(
                {
                    "top": top.name,
                    "source": identity.key_data(),
                    "patches": [p.name for p in patches],
                }
            )
        )
        tmp.rename(dest)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return dest / top.name
