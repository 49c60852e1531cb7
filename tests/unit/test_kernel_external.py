"""Out-of-tree module builds: the copied and patched tree, the Kbuild file, the make call and
its errors, against a fake kernel tree and a fake build directory (no kernel build)."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import fake_kernel, make_ko

from roadtest.errors import RoadtestError
from roadtest.kernel.external import (
    Composite,
    build_external_module,
    build_own_module,
    composite_of,
    kbuild_text,
    prepare_module_tree,
    vermagic,
)
from roadtest.kernel.runner import Runner

DRIVER = "drivers/misc/widget.c"
ORIGINAL = """\
#include "widget.h"

static int widget_probe(void)
{
\treturn widget_init(1);
}
"""

PATCH = "\n".join(
    [
        "Make the widget start at 2.",
        "",
        "--- a/drivers/misc/widget.c",
        "+++ b/drivers/misc/widget.c",
        "@@ -2,5 +2,5 @@",
        " ",
        " static int widget_probe(void)",
        " {",
        "-\treturn widget_init(1);",
        "+\treturn widget_init(2);",
        " }",
        "",
    ]
)


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    src = tmp_path / "linux"
    (src / "drivers/misc").mkdir(parents=True)
    (src / DRIVER).write_text(ORIGINAL)
    (src / "drivers/misc/widget.h").write_text("int widget_init(int);\n")
    (src / "drivers/misc/other.c").write_text("int other;\n")
    return src


@pytest.fixture
def runner(tmp_path: Path) -> Runner:
    return Runner(tmp_path / "build.log", lambda message: None)


def write_patch(tmp_path: Path, text: str = PATCH) -> Path:
    path = tmp_path / "change.patch"
    path.write_text(text)
    return path


def test_the_source_is_copied_at_its_tree_path_and_patched(
    tree: Path, tmp_path: Path, runner: Runner
) -> None:
    dest = tmp_path / "out"
    module = prepare_module_tree(
        tree,
        DRIVER,
        dest,
        runner,
        patches=[write_patch(tmp_path)],
        extra=["drivers/misc/widget.h"],
    )
    assert module.module_dir == dest / "drivers/misc"
    assert module.name == "widget"
    assert module.ko == dest / "drivers/misc/widget.ko"
    assert "widget_init(2)" in (dest / DRIVER).read_text()
    assert (dest / "drivers/misc/widget.h").read_text() == "int widget_init(int);\n"
    assert not (dest / "drivers/misc/other.c").exists()  # only what was asked for
    assert (module.module_dir / "Kbuild").read_text() == "obj-m := widget.o\n"
    assert (tree / DRIVER).read_text() == ORIGINAL  # the kernel tree is left alone
    assert sorted(p.name for p in (dest / "drivers/misc").iterdir()) == [
        "Kbuild",
        "widget.c",
        "widget.h",
    ]  # no .orig or .rej files


def test_kbuild_names_the_object_of_a_dashed_module() -> None:
    assert kbuild_text("tps6286x-regulator") == "obj-m := tps6286x-regulator.o\n"


def test_kbuild_of_a_module_of_several_objects() -> None:
    assert kbuild_text("bmp280", ["bmp280-core.o", "bmp280-regmap.o"]) == (
        "obj-m := bmp280.o\nbmp280-y := bmp280-core.o bmp280-regmap.o\n"
    )


def test_the_module_of_several_objects_a_source_is_one_of(tmp_path: Path) -> None:
    build = tmp_path / "build"
    (build / "drivers/misc/sub").mkdir(parents=True)
    # kbuild's .mod files: each module's objects (bmp280.mod: bmp280-core.o bmp280-regmap.o).
    (build / "drivers/misc/widgets.mod").write_text("drivers/misc/widget.o\ndrivers/misc/other.o\n")
    (build / "drivers/misc/alone.mod").write_text("drivers/misc/alone.o\n")
    (build / "drivers/gadgets.mod").write_text("drivers/misc/sub/gadget.o drivers/gadget-core.o\n")
    assert composite_of(build, DRIVER) == Composite(
        "widgets", "drivers/misc", ("drivers/misc/widget.c", "drivers/misc/other.c")
    )
    # A module of its own, code built into the kernel: none.
    assert composite_of(build, "drivers/misc/alone.c") is None
    assert composite_of(build, "drivers/misc/builtin.c") is None
    # An object in a subdirectory of the module's: found from the directories above.
    found = composite_of(build, "drivers/misc/sub/gadget.c")
    assert found is not None and (found.name, found.folder) == ("gadgets", "drivers")


def test_a_module_of_several_objects_is_copied_whole(
    tree: Path, tmp_path: Path, runner: Runner
) -> None:
    dest = tmp_path / "out"
    widgets = Composite("widgets", "drivers/misc", (DRIVER, "drivers/misc/other.c"))
    module = prepare_module_tree(
        tree,
        DRIVER,
        dest,
        runner,
        patches=[write_patch(tmp_path)],
        extra=["drivers/misc/widget.h"],
        composite=widgets,
    )
    assert module.name == "widgets"
    assert module.ko == dest / "drivers/misc/widgets.ko"
    assert "widget_init(2)" in (dest / DRIVER).read_text()
    assert (dest / "drivers/misc/other.c").read_text() == "int other;\n"
    assert (module.module_dir / "Kbuild").read_text() == (
        "obj-m := widgets.o\nwidgets-y := widget.o other.o\n"
    )


def test_an_earlier_tree_is_replaced(tree: Path, tmp_path: Path, runner: Runner) -> None:
    dest = tmp_path / "out"
    prepare_module_tree(tree, DRIVER, dest, runner, patches=[write_patch(tmp_path)])
    (dest / "stale.o").write_text("x")
    prepare_module_tree(tree, DRIVER, dest, runner)
    assert not (dest / "stale.o").exists()
    assert (dest / DRIVER).read_text() == ORIGINAL


def test_a_patch_that_does_not_apply_is_one_line_naming_it_and_the_log(
    tree: Path, tmp_path: Path, runner: Runner
) -> None:
    (tree / DRIVER).write_text(ORIGINAL.replace("widget_init(1)", "widget_init(3)"))
    patch = write_patch(tmp_path)
    with pytest.raises(RoadtestError) as info:
        prepare_module_tree(tree, DRIVER, tmp_path / "out", runner, patches=[patch])
    message = str(info.value)
    assert "\n" not in message
    assert f"patch {patch} does not apply to {DRIVER}" in message
    assert "FAILED" in message
    assert f"full log: {tmp_path / 'build.log'}" in message


def test_a_patch_of_a_file_not_copied_says_so(tree: Path, tmp_path: Path, runner: Runner) -> None:
    patch = write_patch(tmp_path, PATCH.replace("widget.c", "other.c"))
    with pytest.raises(RoadtestError, match="does not apply.*(can't find file|No file to patch)"):
        prepare_module_tree(tree, DRIVER, tmp_path / "out", runner, patches=[patch])


def test_a_patch_already_applied_is_an_error_not_a_reversal(
    tree: Path, tmp_path: Path, runner: Runner
) -> None:
    (tree / DRIVER).write_text(ORIGINAL.replace("widget_init(1)", "widget_init(2)"))
    with pytest.raises(RoadtestError, match="does not apply"):
        prepare_module_tree(tree, DRIVER, tmp_path / "out", runner, patches=[write_patch(tmp_path)])


def test_a_missing_patch_file(tree: Path, tmp_path: Path, runner: Runner) -> None:
    with pytest.raises(RoadtestError, match="nope.patch not found"):
        prepare_module_tree(
            tree, DRIVER, tmp_path / "out", runner, patches=[tmp_path / "nope.patch"]
        )


@pytest.mark.parametrize(
    ("source", "error"),
    [
        ("/etc/passwd.c", "a path inside the kernel tree"),
        ("drivers/../../x.c", "a path inside the kernel tree"),
        ("drivers/misc/widget.h", "built from its .c file"),
        ("drivers/misc/gone.c", "drivers/misc/gone.c is not in the kernel tree"),
    ],
)
def test_bad_source_paths(
    tree: Path, tmp_path: Path, runner: Runner, source: str, error: str
) -> None:
    with pytest.raises(RoadtestError, match=error):
        prepare_module_tree(tree, source, tmp_path / "out", runner)


def test_the_build_runs_kbuild_on_the_module_directory(tree: Path, tmp_path: Path) -> None:
    prebuilt = make_ko(tmp_path / "prebuilt/widget.ko", "name=widget", "vermagic=6.12.0-roadtest")
    kernel = fake_kernel(
        tmp_path / "build",
        tree,
        f'echo "$(ARCH) $(M) $(MAKECMDGOALS)" > {tmp_path}/called && '
        f"cat $(M)/Kbuild >> {tmp_path}/called && cp {prebuilt} $(M)/widget.ko",
    )
    work = tmp_path / "work"
    ko = build_external_module(
        kernel, DRIVER, work, patches=[write_patch(tmp_path)], progress=lambda m: None
    )
    assert ko == work / "tree/drivers/misc/widget.ko"
    called = (tmp_path / "called").read_text().splitlines()
    assert called == [f"um {work}/tree/drivers/misc modules", "obj-m := widget.o"]
    assert vermagic(ko) == "6.12.0-roadtest"
    assert "widget_init(2)" in (work / "tree" / DRIVER).read_text()
    assert (work / "build.log").is_file()


def test_a_source_of_a_module_of_several_objects_builds_that_module(
    tree: Path, tmp_path: Path
) -> None:
    prebuilt = make_ko(tmp_path / "prebuilt/widgets.ko", "name=widgets", "vermagic=6.12.0-roadtest")
    kernel = fake_kernel(
        tmp_path / "build",
        tree,
        f"cat $(M)/Kbuild > {tmp_path}/called && cp {prebuilt} $(M)/widgets.ko",
    )
    (kernel.build_dir / "drivers/misc").mkdir(parents=True)
    (kernel.build_dir / "drivers/misc/widgets.mod").write_text(
        "drivers/misc/widget.o drivers/misc/other.o\n"
    )
    work = tmp_path / "work"
    ko = build_external_module(kernel, DRIVER, work, progress=lambda m: None)
    assert ko == work / "tree/drivers/misc/widgets.ko"
    assert (tmp_path / "called").read_text().splitlines() == [
        "obj-m := widgets.o",
        "widgets-y := widget.o other.o",
    ]


def test_a_failing_build_is_one_line_with_the_log(tree: Path, tmp_path: Path) -> None:
    kernel = fake_kernel(tmp_path / "build", tree, "@echo 'widget.c:5: error: boom'; exit 2")
    shown: list[str] = []
    with pytest.raises(RoadtestError) as info:
        build_external_module(kernel, DRIVER, tmp_path / "work", progress=shown.append)
    message = str(info.value)
    assert "\n" not in message
    assert message == (  # the first compiler error, then where the whole log is
        "building widget.ko out of tree failed: widget.c:5: error: boom; "
        f"full log: {tmp_path / 'work/build.log'}"
    )
    assert any("error: boom" in line for line in shown)  # the log's tail is shown


def test_a_build_that_makes_no_module(tree: Path, tmp_path: Path) -> None:
    kernel = fake_kernel(tmp_path / "build", tree, "@true")
    with pytest.raises(RoadtestError, match=r"made no .*widget\.ko; full log"):
        build_external_module(kernel, DRIVER, tmp_path / "work", progress=lambda m: None)


def test_a_module_for_another_kernel_is_refused(tree: Path, tmp_path: Path) -> None:
    prebuilt = make_ko(tmp_path / "prebuilt/widget.ko", "name=widget", "vermagic=6.1.0 SMP")
    kernel = fake_kernel(tmp_path / "build", tree, f"cp {prebuilt} $(M)/widget.ko")
    with pytest.raises(RoadtestError, match="vermagic '6.1.0 SMP' is not the guest kernel's"):
        build_external_module(kernel, DRIVER, tmp_path / "work", progress=lambda m: None)


def test_a_kernel_build_without_module_symvers(tree: Path, tmp_path: Path) -> None:
    kernel = fake_kernel(tmp_path / "build", tree, "@true")
    (kernel.build_dir / "Module.symvers").unlink()
    with pytest.raises(RoadtestError, match="no Module.symvers: run `roadtest build`"):
        build_external_module(kernel, DRIVER, tmp_path / "work", progress=lambda m: None)


def test_a_module_of_ones_own_source_is_built_from_a_copy(tree: Path, tmp_path: Path) -> None:
    prebuilt = make_ko(tmp_path / "prebuilt/proof.ko", "name=proof", "vermagic=6.12.0-roadtest")
    kernel = fake_kernel(
        tmp_path / "build",
        tree,
        f'echo "$(M)" > {tmp_path}/called && cat $(M)/Kbuild >> {tmp_path}/called && '
        f"cp {prebuilt} $(M)/proof.ko",
    )
    source = tmp_path / "mine" / "proof.c"
    source.parent.mkdir()
    source.write_text("int proof;\n")
    work = tmp_path / "work"
    ko = build_own_module(kernel, source, work, progress=lambda m: None)
    assert ko == work / "tree/proof.ko"
    called = (tmp_path / "called").read_text().splitlines()
    assert called == [f"{work}/tree", "obj-m := proof.o"]
    assert (work / "tree/proof.c").read_text() == "int proof;\n"
    assert sorted(p.name for p in source.parent.iterdir()) == ["proof.c"]  # built elsewhere


@pytest.mark.parametrize("name", ["gone.c", "proof.h"])
def test_ones_own_module_needs_a_c_file(tree: Path, tmp_path: Path, name: str) -> None:
    kernel = fake_kernel(tmp_path / "build", tree, "@true")
    (tmp_path / "proof.h").write_text("")
    with pytest.raises(RoadtestError, match=f"{name}: not a C source file"):
        build_own_module(kernel, tmp_path / name, tmp_path / "work", progress=lambda m: None)
