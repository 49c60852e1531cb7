"""One driver of the kernel tree, built out of tree (patched, say) against the cached build;
or a module of your own source file (build_own_module).

    ko = build_external_module(kernel, "drivers/regulator/tps6286x-regulator.c", workdir,
                               patches=[Path("my-change.patch")])
    # then: roadtest run --roadtest-module=<ko> ...   (the guest loads it; never the host)

The source (and any `extra` files of the tree it needs, its local headers) is copied
from `kernel.source_dir` into `workdir/tree/` at the same relative paths, so that
patches against the kernel tree apply there with `patch -p1`. A Kbuild file
`obj-m := <name>.o` goes next to the source, and kbuild builds it with the kernel's
own configuration: `make -C <kernel.build_dir> ARCH=<its target's> M=<that directory> modules`.
A source that the kernel's build links into a module with other objects (bmp280-core.c,
one of bmp280.ko's two, as kbuild's `bmp280.mod` lists them) builds that module: its
other sources are copied too, and the Kbuild file names them all
(`bmp280-y := bmp280-core.o bmp280-regmap.o`).
Everything the tools print goes to `workdir/build.log`.
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from elftools.common.exceptions import ELFError

from roadtest.errors import RoadtestError
from roadtest.kernel import module_cache
from roadtest.kernel.build import Kernel
from roadtest.kernel.modinfo import read_modinfo
from roadtest.kernel.runner import Runner, parallel_jobs
from roadtest.kernel.source import apply_patch


@dataclass(frozen=True)
class ModuleTree:
    """A copy of one driver's source, ready for kbuild's M=."""

    module_dir: Path  # the M= directory: the Kbuild file and the driver's source
    name: str  # the module's file name without .ko, e.g. "tps6286x-regulator"

    @property
    def ko(self) -> Path:
        return self.module_dir / f"{self.name}.ko"


def _tree_path(path: str) -> PurePosixPath:
    """`path` as a relative path inside the kernel tree, or a RoadtestError."""
    rel = PurePosixPath(path)
    if rel.is_absolute() or ".." in rel.parts or not rel.parts:
        raise RoadtestError(f"{path!r}: give a path inside the kernel tree, like drivers/x/y.c")
    return rel


@dataclass(frozen=True)
class Composite:
    """A module that kbuild links from several objects, as its `.mod` file lists them."""

    name: str  # the module's file name without .ko, e.g. "bmp280"
    folder: str  # its directory in the tree, e.g. "drivers/iio/pressure"
    sources: tuple[str, ...]  # the .c files of its objects, as paths in the tree


def composite_of(build_dir: Path, source: str) -> Composite | None:
    """The module of several objects that `source` (a .c file of the tree) is linked into
    by the kernel's build at `build_dir`, from the `<module>.mod` files kbuild writes
    beside the modules in the source's directory and those above it; None for a module
    of its own, or code built into the kernel."""
    rel = _tree_path(source)
    obj = rel.with_suffix(".o").as_posix()
    for folder in [rel.parent, *rel.parent.parents]:
        if folder == PurePosixPath("."):
            break
        for mod in sorted((build_dir / folder).glob("*.mod")):
            objects = mod.read_text().split()
            if obj in objects and len(objects) > 1:
                sources = tuple(o.removesuffix(".o") + ".c" for o in objects)
                return Composite(mod.stem, folder.as_posix(), sources)
    return None


def kbuild_text(name: str, objects: Sequence[str] = ()) -> str:
    """The Kbuild file of module `name`: of its one object, or of `objects` (paths
    relative to the module's directory)."""
    text = f"obj-m := {name}.o\n"
    return text + f"{name}-y := {' '.join(objects)}\n" if objects else text


def _stderr(message: str) -> None:
    print(message, file=sys.stderr)


def prepare_module_tree(
    source_dir: Path,
    source: str,
    dest: Path,
    runner: Runner,
    *,
    patches: Sequence[Path] = (),
    extra: Sequence[str] = (),
    reverse: Sequence[Path] = (),
    composite: Composite | None = None,
) -> ModuleTree:
    """Copy `source` (a .c file of the tree at `source_dir`) and `extra` into `dest`,
    take `reverse` back out (each undone with `patch -R`, in the order given: newest
    first), apply `patches` with -p1 at `dest`, and write the Kbuild file. `dest` is
    replaced. With `composite` (the module `source` is one object of), its other
    sources are copied too and the Kbuild file builds that module."""
    src = _tree_path(source)
    if src.suffix != ".c":
        raise RoadtestError(f"{source}: a module is built from its .c file")
    files = [src, *(_tree_path(e) for e in extra)]
    if composite is not None:
        files += [_tree_path(s) for s in composite.sources]
    files = list(dict.fromkeys(files))
    for rel in files:
        if not (source_dir / rel).is_file():
            raise RoadtestError(f"{rel} is not in the kernel tree {source_dir}")
    shutil.rmtree(dest, ignore_errors=True)
    for rel in files:
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source_dir / rel, dest / rel)
    if (patches or reverse) and shutil.which("patch") is None:
        raise RoadtestError("patch not found: install it with `apt-get install patch`")
    steps = [(patch, True) for patch in reverse] + [(patch, False) for patch in patches]
    for patch, undo in steps:
        if not patch.is_file():
            raise RoadtestError(f"patch {patch} not found")
        options = ("-R",) if undo else ()
        failure = apply_patch(
            runner,
            patch,
            dest,
            *options,
            "--fuzz=0",
            "--no-backup-if-mismatch",
            "--reject-file=-",
        )
        if failure is not None:
            what = "cannot be taken back out of" if undo else "does not apply to"
            raise RoadtestError(
                f"patch {patch} {what} {src} of {source_dir} "
                f"({failure}); full log: {runner.log_path}"
            )
    if composite is None:
        tree = ModuleTree(dest / src.parent, src.stem)
        (tree.module_dir / "Kbuild").write_text(kbuild_text(tree.name))
        return tree
    folder = PurePosixPath(composite.folder)
    objects = [
        PurePosixPath(s).relative_to(folder).with_suffix(".o").as_posix() for s in composite.sources
    ]
    tree = ModuleTree(dest / folder, composite.name)
    (tree.module_dir / "Kbuild").write_text(kbuild_text(tree.name, objects))
    return tree


def vermagic(ko: Path) -> str:
    """The module's vermagic string ("" if it has none)."""
    try:
        info = read_modinfo(ko)
    except (OSError, ELFError) as err:
        raise RoadtestError(f"{ko}: not a kernel module ({err})") from None
    return info.get("vermagic", [""])[0]


def build_external_module(
    kernel: Kernel,
    source: str,
    workdir: Path,
    *,
    patches: Sequence[Path] = (),
    extra: Sequence[str] = (),
    reverse: Sequence[Path] = (),
    progress: Callable[[str], None] = _stderr,
) -> Path:
    """Build the module of `source` (a path in the kernel tree, e.g.
    "drivers/regulator/tps6286x-regulator.c"), with `reverse` taken back out (patches of
    the kernel's own series: newest first) and then `patches` applied, against `kernel`'s
    build; return the .ko, whose vermagic is checked to be the guest kernel's. A source
    the kernel's build links into a module of several objects builds that module."""
    runner = _runner(kernel, workdir, progress)
    tree = prepare_module_tree(
        kernel.source_dir,
        source,
        workdir / "tree",
        runner,
        patches=patches,
        extra=extra,
        reverse=reverse,
        composite=composite_of(kernel.build_dir, source),
    )
    return _kbuild(kernel, tree, workdir / "tree", workdir, runner)


def build_own_module(
    kernel: Kernel, source: Path, workdir: Path, *, progress: Callable[[str], None] = _stderr
) -> Path:
    """Build a module of one source file of your own (not of the kernel tree: a test's
    module, say) against `kernel`'s build; return the .ko, as build_external_module."""
    if source.suffix != ".c" or not source.is_file():
        raise RoadtestError(f"{source}: not a C source file")
    runner = _runner(kernel, workdir, progress)
    tree = ModuleTree(workdir / "tree", source.stem)
    shutil.rmtree(tree.module_dir, ignore_errors=True)
    tree.module_dir.mkdir(parents=True)
    shutil.copyfile(source, tree.module_dir / source.name)
    (tree.module_dir / "Kbuild").write_text(kbuild_text(tree.name))
    return _kbuild(kernel, tree, tree.module_dir, workdir, runner)


def _runner(kernel: Kernel, workdir: Path, progress: Callable[[str], None]) -> Runner:
    """A runner logging to workdir/build.log (started afresh), once the build is known usable."""
    if not (kernel.build_dir / "Module.symvers").is_file():
        raise RoadtestError(
            f"the kernel build {kernel.build_dir} has no Module.symvers: run `roadtest build`"
        )
    workdir.mkdir(parents=True, exist_ok=True)
    log = workdir / "build.log"
    log.unlink(missing_ok=True)
    return Runner(log, progress)


def _kbuild(kernel: Kernel, tree: ModuleTree, root: Path, workdir: Path, runner: Runner) -> Path:
    """kbuild's M= build of `tree` (whose files are all under `root`), or the same module
    kept from an earlier build (module_cache); the .ko, checked to be for `kernel`."""
    make_args = kernel.target.make_args()
    store = module_cache.cache_dir(kernel)
    digest = module_cache.key(kernel, make_args, root) if store else ""
    if store is not None and module_cache.fetch(store, digest, tree.ko):
        runner.note(f"{tree.name}.ko: kept from an identical build ({store / digest})")
    else:
        runner.check(
            [
                "make",
                "-C",
                str(kernel.build_dir),
                *make_args,
                f"M={tree.module_dir}",
                f"-j{parallel_jobs()}",
                "modules",
            ],
            cwd=workdir,
            failure=f"building {tree.name}.ko out of tree failed",
        )
        if not tree.ko.is_file():
            raise RoadtestError(f"the module build made no {tree.ko}; full log: {runner.log_path}")
        if store is not None:
            module_cache.keep(store, digest, tree.ko)
    magic = vermagic(tree.ko)
    if magic.split(" ", 1)[0] != kernel.release:
        raise RoadtestError(
            f"{tree.ko}: vermagic {magic!r} is not the guest kernel's {kernel.release}; "
            f"full log: {runner.log_path}"
        )
    return tree.ko
