"""What the tests in tests/guest share, and bench/ with them: the OPT3001 as a test declares
it, the CPUs a run's guests use, the inner pytest run a harness test starts, and the
processes a run leaves behind. The fixtures are in conftest.py beside it.

Not a test file (pytest collects test_*.py only). A test file imports it by name, as
tests/unit's tests import helpers.py: pytest puts this directory on sys.path. A benchmark
run by hand (`.venv/bin/python bench/x.py`) gets it through bench/common.py.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from roadtest.kernel import default_cache_dir
from roadtest.models.opt3001 import OPT3001
from roadtest.testing import I2CDevice

if TYPE_CHECKING:
    import pytest

# The kernel cache, found before anything moves HOME (pytester gives its runs a HOME of
# their own; conftest.py's pytester fixture keeps them on this cache).
CACHE = default_cache_dir()

OPT3001_DTS = """
        light-sensor@$addr$ {
            compatible = "ti,opt3001";
            reg = <0x$addr$>;
        };
    """


def opt3001_sensor() -> I2CDevice[OPT3001]:
    """The OPT3001 light sensor as a test module declares it: `SENSOR = opt3001_sensor()`.

    A new declaration each call: a declaration takes the name of the module that declares
    it (its origin, from which the session derives its address), so modules must not share
    one.
    """
    return I2CDevice(compatible="ti,opt3001", model=OPT3001, dts=OPT3001_DTS)


# The same declaration in the source of a test file that an inner pytest run collects
# (a file written at run time, which imports roadtest only), with what its tests use.
OPT3001_SOURCE = f'''
from roadtest.models.base import ModelError
from roadtest.models.opt3001 import OPT3001, REG_RESULT
from roadtest.testing import I2CDevice, read_float

SENSOR = I2CDevice(
    compatible="ti,opt3001",
    model=OPT3001,
    dts="""{OPT3001_DTS}""",
)
'''

# After a test that crashed or hung its guest, in the same inner run: a test that works in
# the guest that replaced it.
AFTER_A_LOST_GUEST = """
def test_after(guest):
    with guest.bound(SENSOR) as dev:
        dev.model.result = 0x0001
        assert read_float(dev.path.only("iio:device*") / "in_illuminance_input") == 0.01
    assert guest.boots == 2
"""


def own_cpu() -> int:
    """A CPU this process may run on: the one it runs on once a guest of its run pinned it
    there (make test runs its second lane's tests pinned to a CPU of their own)."""
    return max(os.sched_getaffinity(0))


def other_cpu() -> int:
    """A CPU off this process's, for a run it starts: an outer guest may be idling on this
    one (in time-travel mode an idle guest spins on its CPU)."""
    return (own_cpu() + 1) % (os.cpu_count() or 1)


def run_pytest(
    pytester: pytest.Pytester, *args: str, timeout: float, cpu: int | None = None
) -> pytest.RunResult:
    """pytest in a subprocess on pytester's directory (a guest of its own), on `cpu`, by
    default other_cpu()."""
    cpu = other_cpu() if cpu is None else cpu
    return pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", f"--roadtest-cpu={cpu}", *args, timeout=timeout
    )


def run(
    pytester: pytest.Pytester,
    body: str,
    *args: str,
    header: str = OPT3001_SOURCE,
    timeout: float = 300,
) -> pytest.RunResult:
    """`header` and `body` as the test file test_user.py of a pytest run (run_pytest)."""
    pytester.makepyfile(test_user=header + body)
    return run_pytest(pytester, *args, timeout=timeout)


def processes() -> dict[int, tuple[str, int, int]]:
    """pid -> (command line, parent pid, session id) of every process."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if stat[0] != "Z":
            found[int(entry.name)] = (cmdline, int(stat[1]), int(stat[3]))
    return found


def leftovers(workdir: Path, sessions: set[int]) -> list[str]:
    """The run's processes still there: by work directory in their arguments, or session."""
    return [
        f"{pid}: {cmd}"
        for pid, (cmd, _, sid) in processes().items()
        if str(workdir) in cmd or sid in sessions
    ]
