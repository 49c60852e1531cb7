"""Tests and models outside roadtest's checkout: their directories' config fragments go
into the kernel, their traces beside them, and an installed roadtest carries
kernel-patches/ as package data (no guest: the guest run is tests/guest/test_installed.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from roadtest import checkout, cli
from roadtest.arch.um import UM
from roadtest.errors import RoadtestError, UsageError
from roadtest.kernel.config import config_fragments
from roadtest.kernel.variants import MAIN, SANITIZERS
from roadtest.replayer.replay_command import tests_of as traces_tests
from roadtest.run_options import RunOptions
from roadtest.trace.names import test_file as trace_test_file

REPO = Path(__file__).resolve().parents[2]


def test_the_package_carries_kernel_patches_through_its_data_directory() -> None:
    data = REPO / "roadtest" / "data" / "kernel-patches"
    assert data.is_symlink() and data.resolve() == (REPO / "kernel-patches").resolve()
    assert (data / "base.config").is_file() and (data / "series").is_file()


def test_an_installed_roadtest_takes_its_package_data_as_root(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = tmp_path / "site-packages" / "roadtest"
    (package / "data" / "kernel-patches").mkdir(parents=True)
    monkeypatch.delenv("ROADTEST_ROOT", raising=False)
    monkeypatch.setattr(checkout, "_PACKAGE", package)
    assert checkout.repo_root() == package / "data"
    assert checkout.default_tests() is None
    with pytest.raises(UsageError, match="name the tests to run"):
        cli.driver_suite()


def test_a_checkout_is_its_own_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ROADTEST_ROOT", raising=False)
    assert checkout.repo_root() == REPO
    assert checkout.default_tests() == REPO / "tests" / "drivers"


def own_tests(tmp_path: Path) -> Path:
    mine = tmp_path / "mine"
    (mine / "sub").mkdir(parents=True)
    (mine / "test_chip.py").write_text("def test_x() -> None: ...\n")
    (mine / "chip.config").write_text("CONFIG_SENSORS_LM75=m\n")
    (mine / "sub" / "more.config").write_text("CONFIG_IIO=y\n")
    return mine


def test_the_directories_of_tests_outside_the_checkout_are_the_users(tmp_path: Path) -> None:
    mine = own_tests(tmp_path)
    ours = REPO / "tests" / "drivers"
    args = ["-k", "x", str(mine / "test_chip.py::test_x"), str(ours), str(mine), "nowhere"]
    assert cli.own_test_dirs(args) == [mine]
    assert cli.default_traces(cli.own_test_dirs([str(mine)])) == mine / "traces"
    assert cli.default_traces(cli.own_test_dirs([str(ours)])) == REPO / "traces"


def test_their_fragments_come_after_roadtests_own(tmp_path: Path) -> None:
    mine = own_tests(tmp_path)
    fragments = config_fragments(REPO, UM, [mine])
    assert fragments[0] == REPO / UM.base_config
    assert fragments[-2:] == [mine / "chip.config", mine / "sub" / "more.config"]
    assert config_fragments(REPO, UM) == fragments[:-2]


def test_their_fragments_are_not_another_projects_below_them(tmp_path: Path) -> None:
    mine = own_tests(tmp_path)
    (mine / ".config").write_text("CONFIG_UML=y\n")  # a kernel build's whole configuration
    for other in (".venv/lib/x.config", "clone/tests/y.config", "linux/arch/x86/configs/z.config"):
        (mine / other).parent.mkdir(parents=True, exist_ok=True)
        (mine / other).write_text("CONFIG_IIO=m\n")
    (mine / "clone" / ".git").mkdir()
    (mine / "linux" / "Kconfig").write_text('source "arch/Kconfig"\n')
    assert config_fragments(REPO, UM, [mine])[-2:] == [
        mine / "chip.config",
        mine / "sub" / "more.config",
    ]
    assert len(config_fragments(REPO, UM, [mine])) == len(config_fragments(REPO, UM)) + 2


def test_a_main_kernel_with_the_users_fragments_is_a_build_of_its_own(tmp_path: Path) -> None:
    mine = own_tests(tmp_path)
    assert MAIN.build_variant(REPO, UM) is None  # the cache's main kernel
    variant = MAIN.build_variant(REPO, UM, [mine])
    assert variant is not None and variant.fragments[-1] == mine / "sub" / "more.config"
    sanitizers = SANITIZERS.build_variant(REPO, UM, [mine])
    assert sanitizers is not None
    # The variant's own fragments come last, after the user's.
    own = [REPO / f for f in SANITIZERS.own_fragments(UM)]
    assert list(sanitizers.fragments[-len(own) :]) == own


def test_the_command_passes_the_users_directories_to_the_run(tmp_path: Path) -> None:
    mine = own_tests(tmp_path)
    options, args = cli.run_arguments([str(mine / "test_chip.py")])
    assert options.config_dirs == (mine,)
    assert f"--roadtest-config={mine}" in args


def test_a_config_directory_that_does_not_exist_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="no such directory"):
        RunOptions.parse({"roadtest_config": [str(tmp_path / "nowhere")]})


def test_traces_outside_the_checkout_belong_to_the_tests_beside_them(tmp_path: Path) -> None:
    mine = own_tests(tmp_path)
    (mine / "traces" / "tmp102").mkdir(parents=True)
    assert traces_tests(mine / "traces" / "tmp102", REPO) == (mine, "")
    assert traces_tests(mine / "traces", REPO) == (mine, "")
    assert traces_tests(REPO / "traces", REPO) == (REPO, "tests")
    # Elsewhere, not under a traces/: traces of roadtest's tests (record --out DIR).
    assert traces_tests(mine, REPO) == (REPO, "tests")


def test_a_users_trace_names_a_test_of_their_directory_and_no_other(tmp_path: Path) -> None:
    mine = own_tests(tmp_path)
    assert trace_test_file(mine, "test_chip.py::test_x", "") == mine / "test_chip.py"
    assert trace_test_file(mine, "test_chip.py::test_gone", "") is None
    for escape in ("../test_chip.py::test_x", "/etc/passwd.py::x", "tests/x.txt::x"):
        with pytest.raises(RoadtestError, match="not a node id"):
            trace_test_file(mine, escape, "")
    (tmp_path / "elsewhere.py").write_text("def test_x() -> None: ...\n")
    (mine / "link.py").symlink_to(tmp_path / "elsewhere.py")
    with pytest.raises(RoadtestError, match="leads out of"):
        trace_test_file(mine, "link.py::test_x", "")
