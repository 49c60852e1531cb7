"""What `--roadtest-coverage` copies out of a guest, without a guest."""

from __future__ import annotations

from pathlib import Path

from roadtest.arch.um import UM
from roadtest.kernel import Kernel
from roadtest.testing.coverage import Snapshots, objects_of, report, start
from roadtest.testing.modules import ModuleInfo


def kernel(tmp_path: Path) -> Kernel:
    build = tmp_path / "build"
    modules = tmp_path / "lib/modules/6.12.0-roadtest"
    return Kernel(
        "6.12.0-roadtest",
        tmp_path / "src",
        build,
        UM,
        build / "vmlinux",
        modules,
        build / ".config",
    )


def module(k: Kernel, rel: str) -> ModuleInfo:
    return ModuleInfo(Path(rel).stem, k.modules_dir / "kernel" / rel, (), (), {})


def test_a_modules_objects_come_from_kbuilds_mod_file(tmp_path: Path) -> None:
    k = kernel(tmp_path)
    mod = k.build_dir / "drivers/iio/light/vcnl4000.mod"
    mod.parent.mkdir(parents=True)
    # scripts/Makefile.build writes one object per line
    mod.write_text("drivers/iio/light/vcnl4000.o\ndrivers/iio/light/vcnl4000-extra.o\n")
    assert objects_of(k, module(k, "drivers/iio/light/vcnl4000.ko")) == [
        Path("drivers/iio/light/vcnl4000.o"),
        Path("drivers/iio/light/vcnl4000-extra.o"),
    ]
    assert objects_of(k, module(k, "drivers/rtc/rtc-pcf8563.ko")) == []  # not built here


class FakeAgent:
    """The guest's debugfs, as the agent would read it."""

    def __init__(self, files: dict[str, bytes]) -> None:
        self.files = files

    def read_file(self, path: str) -> bytes:
        try:
            return self.files[path]
        except KeyError:
            raise FileNotFoundError(2, "No such file or directory", path) from None

    def run(self, argv: list[str], timeout: float = 60.0) -> tuple[int, bytes, bytes]:
        assert argv[:2] == ["find", "/sys/kernel/debug/gcov"]
        return 0, "".join(f"{p}\n" for p in self.files).encode(), b""


def test_a_snapshot_puts_each_count_file_beside_its_notes(tmp_path: Path) -> None:
    k = kernel(tmp_path)
    obj = k.build_dir / "drivers/iio/light/opt3001"
    obj.parent.mkdir(parents=True)
    obj.with_suffix(".mod").write_text("drivers/iio/light/opt3001.o\n")
    obj.with_suffix(".gcno").write_bytes(b"notes")
    # Documentation/dev-tools/gcov.rst: /sys/kernel/debug/gcov/<build dir>/<path>.gcda
    debugfs = f"/sys/kernel/debug/gcov{k.build_dir}/drivers/iio/light/opt3001.gcda"
    snapshots = Snapshots(tmp_path / "out", k, "gw0")
    agent = FakeAgent({debugfs: b"counts"})
    assert snapshots.take(agent, [module(k, "drivers/iio/light/opt3001.ko")]) == 1
    copied = tmp_path / "out/data/gw0-1/drivers/iio/light/opt3001"
    assert copied.with_suffix(".gcda").read_bytes() == b"counts"
    assert copied.with_suffix(".gcno").read_bytes() == b"notes"


def test_counts_compiled_in_another_build_directory_are_found(tmp_path: Path) -> None:
    # The cache seeds a variant's build from a copy of another build: objects kbuild kept
    # were compiled there, and debugfs names their .gcda by that directory.
    k = kernel(tmp_path)
    obj = k.build_dir / "drivers/hwmon/tmp102"
    obj.parent.mkdir(parents=True)
    obj.with_suffix(".mod").write_text("drivers/hwmon/tmp102.o\n")
    obj.with_suffix(".gcno").write_bytes(b"notes")
    elsewhere = "/sys/kernel/debug/gcov/root/.cache/roadtest/kernels/0123/build"
    agent = FakeAgent({f"{elsewhere}/drivers/hwmon/tmp102.gcda": b"counts"})
    snapshots = Snapshots(tmp_path / "out", k, "gw0")
    assert snapshots.take(agent, [module(k, "drivers/hwmon/tmp102.ko")]) == 1
    copied = tmp_path / "out/data/gw0-1/drivers/hwmon/tmp102.gcda"
    assert copied.read_bytes() == b"counts"


def test_a_run_that_loaded_no_driver_says_so(tmp_path: Path) -> None:
    assert report(tmp_path / "out", kernel(tmp_path)).startswith("no coverage data")


def test_a_run_reports_only_its_own_counts(tmp_path: Path) -> None:
    out = tmp_path / "out"
    old = out / "data/gw0-1/drivers/hwmon/tmp102.gcda"
    old.parent.mkdir(parents=True)
    old.write_bytes(b"an earlier run's counts")
    start(out)
    assert report(out, kernel(tmp_path)).startswith("no coverage data")
