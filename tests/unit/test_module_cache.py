"""Modules built out of tree are kept beside the cached kernel they were built against
(roadtest/kernel/module_cache.py): the same tree against the same build is not built
again; anything the build reads that changed is. Against a fake kernel build in a fake
cache entry, whose `make modules` counts its calls."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from helpers import fake_kernel, make_ko

from roadtest.kernel import Kernel, module_cache
from roadtest.kernel.external import build_external_module, vermagic

DRIVER = "drivers/misc/widget.c"


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    src = tmp_path / "linux"
    (src / "drivers/misc").mkdir(parents=True)
    (src / DRIVER).write_text("static int widget_probe(void) { return 0; }\n")
    return src


def cached_kernel(tmp_path: Path, tree: Path) -> tuple[Kernel, Path]:
    """A kernel whose build is in a cache entry; the file counting its module builds."""
    entry = tmp_path / "cache/kernels/0123"
    prebuilt = make_ko(tmp_path / "prebuilt/widget.ko", "name=widget", "vermagic=6.12.0-roadtest")
    calls = tmp_path / "calls"
    kernel = fake_kernel(entry / "build", tree, f"echo built >> {calls} && cp {prebuilt} $(M)/")
    (entry / "entry.json").write_text("{}")
    build = kernel.build_dir
    (build / "Module.symvers").write_text("0x1 printk vmlinux EXPORT_SYMBOL\n")
    (build / "include/generated").mkdir(parents=True)
    (build / "include/generated/autoconf.h").write_text('#define CONFIG_CC_VERSION_TEXT "gcc"\n')
    return kernel, calls


def builds(calls: Path) -> int:
    return len(calls.read_text().splitlines()) if calls.exists() else 0


def test_the_same_module_against_the_same_build_is_built_once(tree: Path, tmp_path: Path) -> None:
    kernel, calls = cached_kernel(tmp_path, tree)
    first = build_external_module(kernel, DRIVER, tmp_path / "a", progress=lambda _: None)
    second = build_external_module(kernel, DRIVER, tmp_path / "b", progress=lambda _: None)
    assert builds(calls) == 1
    assert second == tmp_path / "b/tree/drivers/misc/widget.ko"
    assert second.read_bytes() == first.read_bytes()
    assert vermagic(second) == "6.12.0-roadtest"
    assert "kept from an identical build" in (tmp_path / "b/build.log").read_text()


def test_a_changed_source_or_kernel_build_is_built_again(tree: Path, tmp_path: Path) -> None:
    kernel, calls = cached_kernel(tmp_path, tree)
    build_external_module(kernel, DRIVER, tmp_path / "a", progress=lambda _: None)
    (tree / DRIVER).write_text("static int widget_probe(void) { return 1; }\n")
    build_external_module(kernel, DRIVER, tmp_path / "b", progress=lambda _: None)
    assert builds(calls) == 2
    # The kernel built again with other exports (the CRCs a module's imports are checked by).
    (kernel.build_dir / "Module.symvers").write_text("0x2 printk vmlinux EXPORT_SYMBOL\n")
    build_external_module(kernel, DRIVER, tmp_path / "c", progress=lambda _: None)
    assert builds(calls) == 3
    (kernel.build_dir / "include/generated/autoconf.h").write_text("#define CONFIG_X 1\n")
    build_external_module(kernel, DRIVER, tmp_path / "d", progress=lambda _: None)
    assert builds(calls) == 4
    build_external_module(kernel, DRIVER, tmp_path / "e", progress=lambda _: None)
    assert builds(calls) == 4
    # The entry built again (a --tree entry, whose source changed): a new stamp.
    (kernel.build_dir.parent / "stamp.json").write_text('{"image": "another"}')
    build_external_module(kernel, DRIVER, tmp_path / "f", progress=lambda _: None)
    assert builds(calls) == 5


def test_a_build_outside_the_kernel_cache_keeps_nothing(tree: Path, tmp_path: Path) -> None:
    kernel, calls = cached_kernel(tmp_path, tree)
    (kernel.build_dir.parent / "entry.json").unlink()
    for work in "ab":
        build_external_module(kernel, DRIVER, tmp_path / work, progress=lambda _: None)
    assert builds(calls) == 2
    assert not (kernel.build_dir.parent / "external").exists()


def test_the_store_keeps_the_newest_and_drops_dead_staging(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(module_cache, "KEEP", 2)
    store = tmp_path / "external"
    ko = make_ko(tmp_path / "widget.ko", "name=widget")
    dead = store / ".abc-killed"
    dead.mkdir(parents=True)
    (dead / "widget.ko").write_bytes(b"half")
    old = 1_000_000_000
    os.utime(dead, (old, old))
    for n, digest in enumerate(["k1", "k2", "k3"]):
        module_cache.keep(store, digest, ko)
        os.utime(store / digest, (old + n, old + n))
    assert sorted(p.name for p in store.iterdir()) == ["k2", "k3"]
    out = tmp_path / "out/widget.ko"
    out.parent.mkdir()
    assert module_cache.fetch(store, "k3", out) and out.read_bytes() == ko.read_bytes()
    assert not module_cache.fetch(store, "k1", out)
