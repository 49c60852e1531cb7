"""ensure_kernel end to end against a tiny fake kernel tarball and a fake `make`.

The fake make understands the targets roadtest uses (defconfig, olddefconfig, vmlinux modules
modules_install), writes what kbuild would, and logs every call, so the tests can tell whether
a build ran at all. Environment knobs: FAKE_MAKE_DROP (options olddefconfig drops),
FAKE_MAKE_FAIL (the build fails), FAKE_MAKE_SLEEP (the build takes that long),
FAKE_MAKE_WAIT_FOR (the build waits, at most 30 s, until that file exists).
"""

from __future__ import annotations

import dataclasses
import fcntl
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import threading
import time
from pathlib import Path

import pytest

from roadtest.arch.um import UM
from roadtest.errors import RoadtestError
from roadtest.kernel import (
    Kernel,
    Variant,
    build_main,
    cache,
    cached_kernel,
    ensure_kernel,
    prune,
    transplant,
    tree,
    verify,
)
from roadtest.kernel.build import _StderrProgress, tree_kernel
from roadtest.kernel.cache import Layout
from roadtest.kernel.config import config_fragments
from roadtest.testing.waiting import wait_until

FAKE_MAKE = r"""#!{python}
import os, sys, time
from pathlib import Path

args = sys.argv[1:]
with open(os.environ["FAKE_MAKE_LOG"], "a") as log:
    log.write(" ".join(a for a in args if "=" not in a and not a.startswith("-j")) + "\n")
vars = dict(a.split("=", 1) for a in args if "=" in a)
targets = [a for a in args if "=" not in a and not a.startswith("-")]
out = Path(vars["O"])

def read_config():
    opts = {{}}
    for line in (out / ".config").read_text().splitlines():
        if line.startswith("CONFIG_"):
            k, v = line.split("=", 1)
            opts[k] = v
        elif line.startswith("# CONFIG_") and line.endswith(" is not set"):
            opts[line[2:-11]] = None
    return opts

for target in targets:
    if target == "defconfig":
        out.mkdir(parents=True, exist_ok=True)
        (out / ".config").write_text("CONFIG_UML=y\n")
    elif target == "olddefconfig":
        opts = read_config()
        for name in filter(None, os.environ.get("FAKE_MAKE_DROP", "").split(",")):
            opts.pop(name, None)
        lines = [f"{{k}}={{v}}\n" if v else f"# {{k}} is not set\n" for k, v in opts.items()]
        (out / ".config").write_text("".join(lines))
    elif target == "vmlinux":
        time.sleep(float(os.environ.get("FAKE_MAKE_SLEEP", "0")))
        barrier = os.environ.get("FAKE_MAKE_WAIT_FOR")
        for _ in range(600):
            if not barrier or Path(barrier).exists():
                break
            time.sleep(0.05)
        for i in range(3):
            print(f"  CC      init/file{{i}}.o")
        print("  CC [M]  drivers/fake.o")
        if os.environ.get("FAKE_MAKE_FAIL"):
            print("drivers/fake.c:1:1: error: boom")
            sys.exit(2)
        local = (read_config().get("CONFIG_LOCALVERSION") or '""').strip('"')
        (out / "include/config").mkdir(parents=True, exist_ok=True)
        (out / "include/config/kernel.release").write_text(f"6.12.0{{local}}\n")
        (out / "vmlinux").write_text((out / ".config").read_text())
    elif target == "modules_install":
        release = (out / "include/config/kernel.release").read_text().strip()
        mods = Path(vars["INSTALL_MOD_PATH"]) / "lib/modules" / release
        (mods / "kernel/drivers").mkdir(parents=True, exist_ok=True)
        (mods / "kernel/drivers/fake.ko").write_text("ko")
        (mods / "modules.dep").write_text("kernel/drivers/fake.ko:\n")
"""

# merge_config.sh -m -O <dir> <base> <fragments...>: appending is enough, as the fake
# olddefconfig lets later lines win, like kconfig does for merge_config's output.
FAKE_MERGE = """#!/bin/sh
[ "$1" = -m ] && shift
[ "$1" = -O ] && shift 2
base=$1; shift
for f in "$@"; do cat "$f" >> "$base"; done
"""

ORIGINAL = "int a;\nint b;\nint c;\n"
GOOD_PATCH = """From: x <x@example.org>
Subject: [PATCH] fake: change b

---
--- a/arch/um/file.c
+++ b/arch/um/file.c
@@ -1,3 +1,3 @@
 int a;
-int b;
+int b = 1;
 int c;
"""
BAD_PATCH = """--- a/arch/um/file.c
+++ b/arch/um/file.c
@@ -1,3 +1,3 @@
 int x;
-int y;
+int y = 2;
 int z;
"""


def _tarball(path: Path) -> Path:
    with tarfile.open(path, "w:xz") as tar:
        for name, text, mode in [
            ("linux-fake/Makefile", "VERSION = 6\n", 0o644),
            ("linux-fake/arch/um/file.c", ORIGINAL, 0o644),
            ("linux-fake/scripts/kconfig/merge_config.sh", FAKE_MERGE, 0o755),
        ]:
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), mode
            tar.addfile(info, io.BytesIO(data))
    return path


class Fake:
    def __init__(self, root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.root = root
        self.repo = root / "repo"
        self.cache = root / "cache"
        self.make_log = root / "make.log"
        self.messages: list[str] = []
        self.env = monkeypatch
        bindir = root / "bin"
        bindir.mkdir()
        make = bindir / "make"
        make.write_text(FAKE_MAKE.format(python=sys.executable))
        make.chmod(0o755)
        depmod = bindir / "depmod"
        depmod.write_text("#!/bin/sh\nexit 0\n")
        depmod.chmod(0o755)
        monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
        monkeypatch.setenv("FAKE_MAKE_LOG", str(self.make_log))
        monkeypatch.setenv("ROADTEST_KERNEL_SOURCE", str(_tarball(root / "linux-fake.tar.xz")))
        for var in (
            "FAKE_MAKE_DROP",
            "FAKE_MAKE_FAIL",
            "FAKE_MAKE_SLEEP",
            "FAKE_MAKE_WAIT_FOR",
            "ROADTEST_CACHE",
        ):
            monkeypatch.delenv(var, raising=False)
        self.write("kernel-patches/base.config", 'CONFIG_LOCALVERSION="-roadtest"\n')
        self.write("kernel-patches/0001-fake-change-b.patch", GOOD_PATCH)
        self.write("kernel-patches/series", "0001-fake-change-b.patch\n")
        self.write("tests/drivers/fake/fake.config", "CONFIG_FAKE=m\n")

    def write(self, rel: str, text: str) -> Path:
        path = self.repo / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return path

    def ensure(self) -> Kernel:
        return ensure_kernel(self.repo, cache_dir=self.cache, progress=self.messages.append)

    def cached(self) -> Kernel | None:
        return cached_kernel(self.repo, cache_dir=self.cache)

    def make_calls(self) -> list[str]:
        return self.make_log.read_text().splitlines() if self.make_log.exists() else []

    def builds(self) -> int:
        return sum("vmlinux" in call for call in self.make_calls())

    def entries(self) -> list[Path]:
        root = self.cache / "kernels"
        return sorted(p for p in root.iterdir() if not p.name.startswith("."))

    def sources(self) -> list[Path]:
        root = self.cache / "src"
        return sorted(root.iterdir()) if root.exists() else []

    def in_subprocess(self, *extra: str, **env: str) -> subprocess.Popen[str]:
        """ensure_kernel in another process: its locks are its own and go away when it exits."""
        code = (
            "import sys; from pathlib import Path; from roadtest.kernel import ensure_kernel\n"
            "k = ensure_kernel(Path(sys.argv[1]), cache_dir=Path(sys.argv[2]), "
            "progress=lambda m: None)\n"
            "print(k.image, flush=True)\n"
            "if len(sys.argv) > 3: sys.stdin.read()\n"
        )
        return subprocess.Popen(
            [sys.executable, "-c", code, str(self.repo), str(self.cache), *extra],
            env={**os.environ, **env},
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )


@pytest.fixture
def fake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Fake:
    return Fake(tmp_path, monkeypatch)


def test_first_call_builds_everything(fake: Fake) -> None:
    kernel = fake.ensure()
    assert fake.make_calls() == [
        "defconfig",
        "olddefconfig",
        "vmlinux modules scripts_gdb",
        "modules_install",
    ]
    assert kernel.release == "6.12.0-roadtest"
    assert kernel.image == kernel.build_dir / "vmlinux" and kernel.image.is_file()
    assert kernel.modules_dir.name == "6.12.0-roadtest"
    assert (kernel.modules_dir / "modules.dep").is_file()
    assert "CONFIG_FAKE=m" in kernel.config.read_text()
    assert (kernel.source_dir / "arch/um/file.c").read_text() == "int a;\nint b = 1;\nint c;\n"
    assert kernel.source_dir.is_relative_to(fake.cache / "src")
    assert any(m == "building: 4 objects compiled" or "4 objects" in m for m in fake.messages)


def test_unchanged_inputs_are_recognised_without_make(fake: Fake) -> None:
    assert fake.cached() is None
    assert fake.make_calls() == []  # asking is not building
    built = fake.ensure()
    fake.make_log.unlink()
    fake.env.setenv("FAKE_MAKE_FAIL", "1")
    start = time.monotonic()
    again = fake.ensure()
    elapsed = time.monotonic() - start
    assert again == built
    assert fake.cached() == built
    assert fake.make_calls() == []
    assert elapsed < 2.0


def test_patch_that_does_not_apply_names_the_patch_and_leaves_no_tree(fake: Fake) -> None:
    fake.write("kernel-patches/0002-broken.patch", BAD_PATCH)
    fake.write("kernel-patches/series", "0001-fake-change-b.patch\n0002-broken.patch\n")
    with pytest.raises(RoadtestError) as err:
        fake.ensure()
    message = str(err.value)
    assert "kernel-patches/0002-broken.patch does not apply" in message
    assert "\n" not in message
    assert fake.sources() == []  # nothing half-patched in the cache
    assert fake.make_calls() == []
    # Once the series is fixed the build starts from a fresh tree.
    fake.write("kernel-patches/series", "0001-fake-change-b.patch\n")
    kernel = fake.ensure()
    assert "int b = 1;" in (kernel.source_dir / "arch/um/file.c").read_text()


def test_already_applied_patch_is_refused(fake: Fake) -> None:
    fake.write("kernel-patches/series", "0001-fake-change-b.patch\n0001-fake-change-b.patch\n")
    with pytest.raises(RoadtestError, match="0001-fake-change-b.patch does not apply.*Reversed"):
        fake.ensure()


def test_dropped_options_stop_the_build_before_compiling(fake: Fake) -> None:
    fake.env.setenv("FAKE_MAKE_DROP", "CONFIG_FAKE,CONFIG_LOCALVERSION")
    with pytest.raises(RoadtestError) as err:
        fake.ensure()
    message = str(err.value)
    assert "CONFIG_FAKE=m (tests/drivers/fake/fake.config, now not set)" in message
    assert 'CONFIG_LOCALVERSION="-roadtest" (kernel-patches/base.config' in message
    assert fake.builds() == 0
    assert fake.cached() is None
    fake.env.delenv("FAKE_MAKE_DROP")
    assert fake.ensure().release == "6.12.0-roadtest"


def test_build_failure_points_at_the_log(fake: Fake) -> None:
    fake.env.setenv("FAKE_MAKE_FAIL", "1")
    with pytest.raises(RoadtestError) as err:
        fake.ensure()
    message = str(err.value)
    # The first compiler error is in the line, then the log.
    assert message.startswith("kernel build failed: drivers/fake.c:1:1: error: boom; full log: ")
    log = Path(message.rsplit(": ", 1)[1])
    assert "error: boom" in log.read_text()
    assert any("error: boom" in m for m in fake.messages)  # the tail was shown
    assert fake.cached() is None
    fake.env.delenv("FAKE_MAKE_FAIL")
    fake.ensure()


def test_changed_fragment_rebuilds_on_the_same_source(fake: Fake) -> None:
    first = fake.ensure()
    fake.write("tests/drivers/fake/fake.config", "CONFIG_FAKE=y\n")
    second = fake.ensure()
    assert second.build_dir != first.build_dir
    assert "CONFIG_FAKE=y" in second.config.read_text()
    assert second.source_dir == first.source_dir and len(fake.sources()) == 1
    assert any("starting from the build in" in m for m in fake.messages)
    assert fake.builds() == 2
    # Going back to the first config finds its build still cached.
    fake.write("tests/drivers/fake/fake.config", "CONFIG_FAKE=m\n")
    assert fake.ensure() == first and fake.builds() == 2


def test_a_seeded_build_finds_its_host_tools_current_at_the_new_path(fake: Fake) -> None:
    # objtool's dependency files name the build's absolute path; naming the seed's, they
    # would make kbuild rebuild objtool and then every object.
    first = fake.ensure()
    cmd = first.build_dir / "tools/objtool/.check.o.cmd"
    cmd.parent.mkdir(parents=True)
    cmd.write_text(f"cmd_{first.build_dir}/tools/objtool/check.o := gcc -o {first.build_dir}/x\n")
    os.utime(cmd, ns=(1_000_000_000, 1_000_000_000))
    fake.write("tests/drivers/fake/fake.config", "CONFIG_FAKE=y\n")
    second = fake.ensure()
    copied = second.build_dir / "tools/objtool/.check.o.cmd"
    assert str(first.build_dir) not in copied.read_text()
    assert f"cmd_{second.build_dir}/tools/objtool/check.o" in copied.read_text()
    assert copied.stat().st_mtime_ns == 1_000_000_000
    assert str(first.build_dir) in cmd.read_text()  # the seed is left as it was


def test_a_variant_starts_from_a_build_made_with_its_own_kbuild_variables(fake: Fake) -> None:
    # Every object depends on kbuild variables such as CFLAGS_MODULE: a variant started from
    # the main build would recompile them all.
    fragments = (fake.repo / "kernel-patches/base.config", fake.repo / "extra.config")
    fake.write("extra.config", "CONFIG_EXTRA=y\n")
    variant = Variant(fragments, ("CFLAGS_MODULE=-DVARIANT",))
    first = ensure_kernel(fake.repo, variant=variant, cache_dir=fake.cache, progress=print)
    time.sleep(0.01)  # the main build's stamp is newer
    main = fake.ensure()  # newer, but built without the variable
    fake.write("extra.config", "CONFIG_EXTRA=m\n")
    fake.messages.clear()
    ensure_kernel(fake.repo, variant=variant, cache_dir=fake.cache, progress=fake.messages.append)
    started = [m for m in fake.messages if "starting from the build in" in m]
    assert started and str(first.build_dir.parent) in started[0], fake.messages
    assert str(main.build_dir.parent) not in started[0]


def test_a_variant_starts_from_a_build_of_its_own_fragments(fake: Fake) -> None:
    # A sanitizer variant sets no kbuild variable, as the main kernel, but its fragment
    # (KASAN) changes every object: started from the main build, it would recompile all.
    fake.write("sanitize.config", "CONFIG_SANITIZE=y\n")
    fake.write("drv.config", "CONFIG_DRV=y\n")
    base = fake.repo / "kernel-patches/base.config"
    variant = Variant((base, fake.repo / "drv.config", fake.repo / "sanitize.config"))
    first = ensure_kernel(fake.repo, variant=variant, cache_dir=fake.cache, progress=print)
    time.sleep(0.01)
    main = ensure_kernel(
        fake.repo,
        variant=Variant((base, fake.repo / "drv.config")),
        cache_dir=fake.cache,
        progress=print,
    )
    fake.write("drv.config", "CONFIG_DRV=m\n")
    fake.messages.clear()
    ensure_kernel(fake.repo, variant=variant, cache_dir=fake.cache, progress=fake.messages.append)
    started = [m for m in fake.messages if "starting from the build in" in m]
    assert started and str(first.build_dir.parent) in started[0], fake.messages
    assert str(main.build_dir.parent) not in started[0]


def _seeded_from(fake: Fake) -> str:
    started = [m for m in fake.messages if "starting from the build in" in m]
    assert len(started) == 1, fake.messages
    return started[0]


@pytest.mark.parametrize("recorded", [True, False], ids=["recorded", "older-entry"])
def test_a_variant_starts_from_its_own_build_after_fragments_are_added(
    fake: Fake, recorded: bool
) -> None:
    # The sanitizer kernel is the main kernel's fragments and its own: after a user adds
    # fragments for a new driver, the main build is closer by fragment names (it has just
    # been rebuilt with them), but the sanitizer build shares the objects (KASAN).
    sanitize = fake.write("kernel-patches/sanitizers.config", "CONFIG_SANITIZE=y\n")

    def sanitizer_kernel() -> Kernel:
        variant = Variant((*config_fragments(fake.repo), sanitize))
        return ensure_kernel(
            fake.repo, variant=variant, cache_dir=fake.cache, progress=fake.messages.append
        )

    fake.ensure()
    first = sanitizer_kernel()
    if not recorded:  # entry.json as written before the variant's own fragments were
        info = first.build_dir.parent / "entry.json"
        data = json.loads(info.read_text())
        del data["own_fragments"]
        info.write_text(json.dumps(data))
    fake.write("tests/drivers/new/new.config", "CONFIG_NEW=m\n")
    fake.write("tests/drivers/new/other.config", "CONFIG_OTHER=m\n")
    fake.messages.clear()
    main = fake.ensure()
    assert str(main.build_dir.parent) not in _seeded_from(fake)
    fake.messages.clear()
    again = sanitizer_kernel()
    assert "CONFIG_NEW=m" in again.config.read_text()
    assert str(first.build_dir.parent) in _seeded_from(fake)


def test_the_closest_build_of_the_same_variant_is_the_seed(fake: Fake) -> None:
    # Among builds of the same variant: the fewest differing fragments, then the newest.
    fake.write("tests/drivers/b/b.config", "CONFIG_B=m\n")
    with_b = fake.ensure()
    fake.write("tests/drivers/c/c.config", "CONFIG_C=m\n")
    fake.ensure()
    (fake.repo / "tests/drivers/c/c.config").unlink()
    fake.write("tests/drivers/b/b.config", "CONFIG_B=y\n")  # as with_b, but for one value
    fake.messages.clear()
    fake.ensure()
    assert str(with_b.build_dir.parent) in _seeded_from(fake)


def test_another_patch_series_starts_from_the_build_of_the_last(fake: Fake) -> None:
    # A patch added, changed or dropped makes a new source tree; kbuild recompiles what
    # is newer than its objects, so only the files whose content differs may be newer.
    first = fake.ensure()
    patched = first.source_dir / "arch/um/file.c"
    assert patched.read_text() != ORIGINAL  # the series changed it
    built = first.image.stat().st_mtime_ns
    cmd = first.build_dir / "init/.main.o.cmd"
    cmd.parent.mkdir(parents=True, exist_ok=True)
    cmd.write_text(f"cmd_init/main.o := gcc -I{first.source_dir}/include -c init/main.c\n")
    fake.write("kernel-patches/series", "")  # the patch dropped
    fake.messages.clear()
    second = fake.ensure()
    assert second.source_dir != first.source_dir
    assert "(another patch series: 1 source file differ)" in _seeded_from(fake)
    assert str(first.build_dir.parent) in _seeded_from(fake)
    # The dropped patch's file has the tarball's content again, and is newer than the
    # objects built from the patched one; the others keep the tarball's time.
    reverted = second.source_dir / "arch/um/file.c"
    assert reverted.read_text() == ORIGINAL and reverted.stat().st_mtime_ns > built
    assert (second.source_dir / "Makefile").stat().st_mtime_ns < built
    # The copy's command records name the new tree, not the old one.
    copied = (second.build_dir / "init/.main.o.cmd").read_text()
    assert str(second.source_dir) in copied and str(first.source_dir) not in copied
    # And back: the patch again is the first build's tree, cached.
    fake.write("kernel-patches/series", "0001-fake-change-b.patch\n")
    assert fake.ensure() == first


def test_retime_for_gives_the_old_time_to_the_same_content_and_now_to_the_rest(
    tmp_path: Path,
) -> None:
    old, new = tmp_path / "old", tmp_path / "new"
    for top, texts in ((old, ("a", "b1", "c", None)), (new, ("a", "b2", "c", "d"))):
        for name, text in zip(("same", "differs", "patched-alike", "added"), texts, strict=True):
            if text is not None:
                (top / name).parent.mkdir(parents=True, exist_ok=True)
                (top / name).write_text(text)
    tarball_time, old_patch_time, new_patch_time = 10**9, 2 * 10**9, 3 * 10**9
    for name, (t_old, t_new) in {
        "same": (tarball_time, tarball_time),
        "differs": (old_patch_time, tarball_time),  # only the old series patched it
        "patched-alike": (old_patch_time, new_patch_time),
    }.items():
        os.utime(old / name, ns=(t_old, t_old))
        os.utime(new / name, ns=(t_new, t_new))
    os.utime(new / "added", ns=(tarball_time, tarball_time))
    before = time.time_ns()
    assert transplant.retime_for(old, new) == (1, 2)
    assert (new / "same").stat().st_mtime_ns == tarball_time
    assert (new / "patched-alike").stat().st_mtime_ns == old_patch_time
    assert (new / "differs").stat().st_mtime_ns >= before
    assert (new / "added").stat().st_mtime_ns >= before


def test_another_architecture_never_starts_from_a_build_of_this_one(fake: Fake) -> None:
    # Every object of an x86_64 build differs from a UML build's: a copy would only cost.
    fake.ensure()
    other = dataclasses.replace(UM, name="x86_64", make_arch="x86_64")
    fake.messages.clear()
    kernel = ensure_kernel(
        fake.repo, cache_dir=fake.cache, progress=fake.messages.append, target=other
    )
    assert kernel.target == other
    assert not [m for m in fake.messages if "starting from the build in" in m], fake.messages


def test_changed_patch_rebuilds_with_a_new_source_tree(fake: Fake) -> None:
    first = fake.ensure()
    fake.write("kernel-patches/0001-fake-change-b.patch", GOOD_PATCH.replace("b = 1", "b = 3"))
    second = fake.ensure()
    assert second.source_dir != first.source_dir
    assert "int b = 3;" in (second.source_dir / "arch/um/file.c").read_text()
    assert fake.builds() == 2


def test_explicit_fragments(fake: Fake) -> None:
    only = fake.write("extra/only.config", "CONFIG_ONLY=y\n")
    kernel = ensure_kernel(
        fake.repo, variant=Variant((only,)), cache_dir=fake.cache, progress=fake.messages.append
    )
    assert "CONFIG_ONLY=y" in kernel.config.read_text()
    assert "CONFIG_FAKE" not in kernel.config.read_text()
    variant = Variant((Path("extra/only.config"),))
    assert cached_kernel(fake.repo, variant=variant, cache_dir=fake.cache)


def _age(entry: Path, days: float) -> None:
    """Make the build in `entry` look last used `days` ago."""
    then = time.time() - days * 86400
    os.utime(entry / "stamp.json", (then, then))


def test_the_least_recently_used_builds_go_when_the_cache_is_over_its_limit(fake: Fake) -> None:
    built = []
    for value in ("y", "m", "n"):  # each by a process that has ended: none is in use
        fake.write("tests/drivers/fake/fake.config", f"CONFIG_FAKE={value}\n")
        proc = fake.in_subprocess()
        built.append(Path(proc.communicate()[0].strip()).parent.parent)
    for days, entry in zip((3, 1, 2), built, strict=True):
        _age(entry, days)
    one = prune.disk_usage(built[0])
    fake.env.setenv("ROADTEST_CACHE_LIMIT", str(3 * one))  # room for three of four
    fake.write("tests/drivers/fake/fake.config", "CONFIG_FAKE=y\nCONFIG_OTHER=y\n")
    fake.messages.clear()
    newest = fake.ensure().build_dir.parent
    assert fake.entries() == sorted([built[1], built[2], newest])
    [line] = [m for m in fake.messages if m.startswith("cache: removed")]
    assert line.startswith(f"cache: removed kernels/{built[0].name} (")
    assert "freed); builds and bisections keep " in line and "ROADTEST_CACHE_LIMIT" in line
    assert len(fake.sources()) == 1


def test_builds_used_lately_or_in_use_are_kept_over_the_limit(fake: Fake) -> None:
    # make test builds the main, coverage, sanitizer and x86_64 kernels one after another,
    # and uses them for up to an hour: none of them evicts another.
    fake.write("tests/drivers/fake/fake.config", "CONFIG_FAKE=y\n")
    holder = fake.in_subprocess("hold")  # uses its kernel until we close its stdin
    assert holder.stdout is not None
    held = Path(holder.stdout.readline().strip()).parent.parent
    try:
        _age(held, 30)
        fake.env.setenv("ROADTEST_CACHE_LIMIT", "1")
        for value in ("m", "n"):
            fake.write("tests/drivers/fake/fake.config", f"CONFIG_FAKE={value}\n")
            fake.ensure()
        assert len(fake.entries()) == 3
        assert not [m for m in fake.messages if m.startswith("cache: removed")]
    finally:
        holder.communicate("")
    # Unused now, and a month old: it goes at the next build.
    fake.write("tests/drivers/fake/fake.config", "CONFIG_FAKE=y\nCONFIG_OTHER=y\n")
    fake.ensure()
    assert held not in fake.entries() and len(fake.entries()) == 3


def test_an_interrupted_build_is_removed(fake: Fake) -> None:
    fake.env.setenv("FAKE_MAKE_FAIL", "1")
    with pytest.raises(RoadtestError):
        fake.ensure()
    [failed] = fake.entries()
    fake.env.delenv("FAKE_MAKE_FAIL")
    fake.write("tests/drivers/fake/fake.config", "CONFIG_FAKE=y\n")
    fake.messages.clear()
    kept = fake.ensure().build_dir.parent
    assert fake.entries() == [kept]
    assert [m for m in fake.messages if m.startswith(f"cache: removed kernels/{failed.name} (")]


def _bisect_tree(cache: Path, name: str, days: float, borrows: Path | None = None) -> Path:
    """A bisection's directory as roadtest bisect leaves it, last used `days` ago."""
    tree = cache / "bisect" / name
    objects = tree / "src" / ".git" / "objects"
    (objects / "info").mkdir(parents=True)
    (objects / "pack").mkdir()
    (objects / "pack" / "big.pack").write_bytes(bytes(64 * 1024))
    if borrows is not None:
        (objects / "info" / "alternates").write_text(f"{borrows / 'objects'}\n")
    then = time.time() - days * 86400
    (tree / "lock").write_text("")
    os.utime(tree / "lock", (then, then))
    os.utime(tree, (then, then))
    return tree


def _history(cache: Path, name: str, days: float) -> Path:
    repo = cache / "history" / f"{name}.git"
    (repo / "objects").mkdir(parents=True)
    (repo / "objects" / "big.pack").write_bytes(bytes(64 * 1024))
    then = time.time() - days * 86400
    os.utime(repo, (then, then))
    return repo


def test_bisect_directories_and_histories_go_least_recently_used_first(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    history = _history(cache, "distribution", days=9)
    old = _bisect_tree(cache, "old", days=5)
    series = _bisect_tree(cache, "series", days=4, borrows=history)
    busy = _bisect_tree(cache, "busy", days=8)
    recent = _bisect_tree(cache, "recent", days=0.01)
    layout = Layout(cache)
    fd = os.open(busy / "lock", os.O_RDONLY)
    fcntl.flock(fd, fcntl.LOCK_EX)  # a bisection of that tree is running
    try:
        # Room for two of the five: the history is kept while the series' clone borrows
        # from it; the busy and recent ones stay whatever the limit.
        limit = 2 * prune.disk_usage(old) + 4096
        first = prune.prune(layout, limit=limit)
        assert first.removed == [old, series]
        assert sorted(_relative(cache)) == [
            "bisect/busy",
            "bisect/recent",
            "history/distribution.git",
        ]
        second = prune.prune(layout, limit=limit)
        assert second.removed == [history]
        line = second.line(cache)
        assert line is not None and line.startswith("cache: removed history/distribution.git (")
    finally:
        os.close(fd)
    assert busy.is_dir() and recent.is_dir()


def _relative(cache: Path) -> list[str]:
    return [
        p.relative_to(cache).as_posix()
        for parent in ("bisect", "history", "kernels")
        if (cache / parent).is_dir()
        for p in (cache / parent).iterdir()
    ]


def test_nothing_is_measured_when_nothing_could_go(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "cache"
    _bisect_tree(cache, "recent", days=0)
    monkeypatch.setattr(prune, "disk_usage", lambda path: pytest.fail(f"measured {path}"))
    assert prune.prune(Layout(cache), limit=0).removed == []


@pytest.mark.parametrize(
    ("value", "limit"),
    [
        ("", 10 * 1024**3),
        ("20G", 20 * 1024**3),
        ("500M", 500 * 1024**2),
        ("1.5GiB", 3 * 1024**3 // 2),
        ("4096", 4096),
    ],
)
def test_cache_limit_from_the_environment(
    monkeypatch: pytest.MonkeyPatch, value: str, limit: int
) -> None:
    monkeypatch.setenv("ROADTEST_CACHE_LIMIT", value)
    assert prune.limit_from_env() == limit


def test_a_bad_cache_limit_is_one_line_before_any_build(fake: Fake) -> None:
    fake.env.setenv("ROADTEST_CACHE_LIMIT", "lots")
    with pytest.raises(RoadtestError, match="ROADTEST_CACHE_LIMIT=lots: give a size, like 20G"):
        fake.ensure()
    assert fake.builds() == 0


def test_concurrent_callers_build_once(fake: Fake) -> None:
    procs = [fake.in_subprocess(FAKE_MAKE_SLEEP="1") for _ in range(2)]
    outputs = [p.communicate()[0].strip() for p in procs]
    assert [p.returncode for p in procs] == [0, 0]
    assert outputs[0] == outputs[1]
    assert fake.builds() == 1


def test_two_kernels_build_side_by_side(fake: Fake) -> None:
    """A build waits for nobody building another kernel (of the same source: it is unpacked
    once): a stress run's tree kernel no longer waited 38 minutes behind others' builds."""
    barrier = fake.root / "go-on"
    first = fake.in_subprocess(FAKE_MAKE_WAIT_FOR=str(barrier))
    try:
        wait_until(lambda: "vmlinux" in " ".join(fake.make_calls()), "the first build's make")
        fake.write("tests/drivers/fake/other.config", "CONFIG_OTHER=m\n")  # another kernel
        second = fake.in_subprocess()
        assert second.communicate(timeout=60)[0].strip()  # built while the first waits
        assert second.returncode == 0
        assert first.poll() is None
    finally:
        barrier.touch()
        first.communicate(timeout=60)
    assert first.returncode == 0
    assert fake.builds() == 2
    assert len(fake.entries()) == 2
    assert len(fake.sources()) == 1


def test_stamp_is_the_last_thing_written(fake: Fake) -> None:
    kernel = fake.ensure()
    entry = kernel.build_dir.parent
    stamp = json.loads((entry / "stamp.json").read_text())
    assert stamp["release"] == kernel.release
    # A missing piece makes the entry count as unbuilt again, and the next call repairs it.
    (kernel.modules_dir / "modules.dep").unlink()
    assert fake.cached() is None
    assert fake.ensure() == kernel
    assert fake.builds() == 2


def test_build_command_says_whether_it_built(
    fake: Fake, capsys: pytest.CaptureFixture[str]
) -> None:
    fake.env.setenv("ROADTEST_CACHE", str(fake.cache))
    assert build_main(fake.repo) == 0
    first = capsys.readouterr()
    assert "kernel: compiling" in first.err
    assert first.out.startswith("kernel 6.12.0-roadtest: built in ")
    assert build_main(fake.repo) == 0
    second = capsys.readouterr()
    assert second.out.startswith("kernel 6.12.0-roadtest: up to date (")
    assert second.out.strip().endswith("/build/vmlinux)")
    assert second.err == ""


def test_unusable_cache_dir_is_a_one_line_error(fake: Fake) -> None:
    blocker = fake.root / "not-a-dir"
    blocker.write_text("")
    with pytest.raises(RoadtestError, match="kernel cache: .*ROADTEST_CACHE") as err:
        ensure_kernel(fake.repo, cache_dir=blocker / "cache", progress=fake.messages.append)
    assert "\n" not in str(err.value)


def test_default_progress_updates_the_count_in_place_on_a_terminal(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    term = Terminal()
    monkeypatch.setattr(sys, "stderr", term)
    progress = _StderrProgress()
    for message in [
        "kernel: compiling",
        "building: 1 objects compiled",
        "building: 9 objects compiled",
        "kernel: installing modules",
    ]:
        progress(message)
    assert term.getvalue() == (
        "kernel: compiling\n"
        "\r\x1b[Kbuilding: 1 objects compiled\r\x1b[Kbuilding: 9 objects compiled\n"
        "kernel: installing modules\n"
    )


def _damaged_lines(fake: Fake) -> list[str]:
    return [m for m in fake.messages if "is damaged" in m]


@pytest.mark.parametrize("size", ["empty", "half"])
def test_a_truncated_image_is_found_on_every_use_and_built_again(fake: Fake, size: str) -> None:
    kernel = fake.ensure()
    whole = kernel.image.read_bytes()
    kernel.image.write_bytes(b"" if size == "empty" else whole[: len(whole) // 2])
    assert fake.cached() is None  # a run's check: sizes, no checksum
    fake.messages.clear()
    again = fake.ensure()
    assert again == kernel and again.image.read_bytes() == whole
    [line] = _damaged_lines(fake)
    assert line.startswith(f"kernel: the cached build {kernel.build_dir.parent} is damaged (")
    assert "build/vmlinux is " in line and "building it again" in line
    assert fake.builds() == 2
    assert fake.cached() == kernel


def test_a_truncated_module_is_found_and_installed_again(fake: Fake) -> None:
    kernel = fake.ensure()
    module = kernel.modules_dir / "kernel/drivers/fake.ko"
    module.write_bytes(b"")
    assert fake.cached() is None
    fake.messages.clear()
    fake.ensure()
    [line] = _damaged_lines(fake)
    assert "drivers/fake.ko is 0 bytes, it was built 2 bytes" in line
    assert module.read_text() == "ko"


def test_the_build_command_checks_the_checksum_a_run_does_not(
    fake: Fake, capsys: pytest.CaptureFixture[str]
) -> None:
    fake.env.setenv("ROADTEST_CACHE", str(fake.cache))
    kernel = fake.ensure()
    whole = kernel.image.read_bytes()
    st = kernel.image.stat()
    kernel.image.write_bytes(whole[:-1] + b"X")  # same size, same time: only a checksum sees it
    os.utime(kernel.image, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert fake.cached() == kernel
    assert build_main(fake.repo) == 0
    out = capsys.readouterr()
    assert "build/vmlinux is not what was built: its SHA-256 differs" in out.err
    assert out.out.startswith("kernel 6.12.0-roadtest: built in ")
    assert kernel.image.read_bytes() == whole


def test_a_touched_image_is_checksummed_once_and_trusted(fake: Fake) -> None:
    kernel = fake.ensure()
    os.utime(kernel.image, (1, 1))  # as a copy of the cache without -p leaves it
    assert fake.cached() == kernel
    stamp = json.loads((kernel.build_dir.parent / "stamp.json").read_text())
    assert stamp["verify"]["image_mtime_ns"] == 1_000_000_000
    assert fake.builds() == 1


def _elf(size: int, headers_at: int) -> bytes:
    """A 64-bit little-endian ELF file of `size` bytes, its section headers at `headers_at`."""
    header = bytearray(64)
    header[:6] = b"\x7fELF\x02\x01"
    header[0x20:0x30] = (0).to_bytes(8, "little") + headers_at.to_bytes(8, "little")
    header[0x3A:0x3E] = (64).to_bytes(2, "little") + (4).to_bytes(2, "little")
    return bytes(header) + bytes(size - 64)


def test_an_entry_from_before_the_records_has_its_image_checked_then_recorded(
    fake: Fake,
) -> None:
    kernel = fake.ensure()
    stamp_path = kernel.build_dir.parent / "stamp.json"
    old = json.loads(stamp_path.read_text())
    del old["verify"]
    kernel.image.write_bytes(_elf(4096, 4096 - 256))
    stamp_path.write_text(json.dumps(old))
    fake.messages.clear()
    assert cached_kernel(fake.repo, cache_dir=fake.cache, progress=fake.messages.append) == kernel
    assert [m for m in fake.messages if "built by an older roadtest" in m]
    assert json.loads(stamp_path.read_text())["verify"]["image_size"] == 4096
    # Cut in half: its section headers are past its end.
    stamp_path.write_text(json.dumps(old))
    kernel.image.write_bytes(_elf(4096, 4096 - 256)[:2048])
    fake.messages.clear()
    assert fake.ensure() == kernel
    assert "vmlinux is 2048 bytes, its section headers end at 4096" in _damaged_lines(fake)[0]


def test_image_structure_knows_elf_and_bzimage(tmp_path: Path) -> None:
    image = tmp_path / "image"
    boot = bytearray(0x300)
    boot[0x1F1] = 1  # setup sectors: the image is (1 + 1) * 512 + 16 * syssize bytes long
    boot[0x1F4:0x1F8] = (100).to_bytes(4, "little")
    boot[0x202:0x206] = b"HdrS"
    whole = bytes(boot) + bytes(1024 + 1600 - len(boot))
    for data, problem in [
        (_elf(4096, 4096 - 256), None),
        (_elf(4096, 4096), "section headers end at 4352"),
        (whole, None),
        (whole[:-1], "its header says at least 2624"),
        (b"", "image is empty"),
        (b"#!/bin/sh\n", "neither an ELF file nor a bzImage"),
    ]:
        image.write_bytes(data)
        found = verify.image_structure(image)
        assert found is None if problem is None else problem in (found or ""), (found, problem)


def test_force_builds_again_from_scratch(fake: Fake, capsys: pytest.CaptureFixture[str]) -> None:
    fake.env.setenv("ROADTEST_CACHE", str(fake.cache))
    kernel = fake.ensure()
    leftover = kernel.build_dir / "stale.o"
    leftover.write_text("")
    assert build_main(fake.repo, force=True) == 0
    out = capsys.readouterr()
    assert "again from scratch (--force)" in out.err
    assert out.out.startswith("kernel 6.12.0-roadtest: built in ")
    assert not leftover.exists() and fake.builds() == 2
    assert fake.cached() == kernel


def test_force_waits_for_the_processes_that_use_the_build(fake: Fake) -> None:
    holder = fake.in_subprocess("hold")
    assert holder.stdout is not None
    holder.stdout.readline()
    try:
        with pytest.raises(RoadtestError, match="in use by another roadtest process") as err:
            ensure_kernel(fake.repo, cache_dir=fake.cache, progress=print, force=True)
        assert "\n" not in str(err.value)
    finally:
        holder.communicate("")
    assert fake.cached() is not None


def _fake_tree(root: Path) -> Path:
    """A tree of the user's (--tree) that the fake make builds: what open_tree() checks for,
    the file our fake patch changes, and merge_config.sh."""
    files = {
        "Makefile": "VERSION = 6\nPATCHLEVEL = 12\nSUBLEVEL = 0\n",
        "Kconfig": "mainmenu\n",
        "arch/um/file.c": ORIGINAL,
        **{n.path: "/* */\n" for n in (*tree.NEEDED, *tree.NEEDED_BY_ARCH["um"])},
    }
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    merge = root / "scripts/kconfig/merge_config.sh"
    merge.parent.mkdir(parents=True, exist_ok=True)
    merge.write_text(FAKE_MERGE)
    merge.chmod(0o755)
    return root


def test_checkouts_with_different_series_build_a_tree_into_entries_of_their_own(
    fake: Fake,
) -> None:
    """Two checkouts of roadtest (make test beside another's CI) build one --tree with two
    series: the second must not rebuild the first's kernel while the first's guests run
    from it (a stress run's tree-6.1 step found "no build of ..." that way)."""
    user_tree = tree.open_tree(_fake_tree(fake.root / "linux"), UM)
    other = fake.root / "other-checkout"
    shutil.copytree(fake.repo, other)
    (other / "kernel-patches/0001-fake-change-b.patch").write_text(
        GOOD_PATCH.replace("b = 1", "b = 3")
    )

    def kernel_of(repo: Path, build: bool = True) -> Kernel:
        return tree_kernel(
            repo, user_tree, build=build, cache_dir=fake.cache, progress=fake.messages.append
        )

    first = kernel_of(fake.repo)
    second = kernel_of(other)
    assert second.build_dir != first.build_dir
    assert kernel_of(fake.repo, build=False) == first  # still there, as it was built
    assert kernel_of(other, build=False) == second
    assert fake.builds() == 2
    # The second started from the first's objects: kbuild rebuilds what the series changes.
    assert any("starting from the build in" in m for m in fake.messages), fake.messages


def test_a_lock_held_elsewhere_is_waited_for_and_said_once(tmp_path: Path) -> None:
    """Two bisections of one tree, or two builds of one kernel: the second waits its turn
    (with a line saying why) instead of failing."""
    path = tmp_path / "lock"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import fcntl, sys; f = open(sys.argv[1], 'a'); fcntl.flock(f, fcntl.LOCK_EX); "
            "print('held', flush=True); sys.stdin.read()",
            str(path),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    said: list[str] = []
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        threading.Timer(0.3, holder.communicate, kwargs={"input": ""}).start()
        with cache.locked(path, waiting="waiting for the other one", progress=said.append):
            assert holder.wait(timeout=30) == 0  # it held the lock until it ended
    finally:
        holder.kill()
    assert said == ["waiting for the other one"]
