"""`roadtest run --roadtest-gdb` in real terminals, as a developer uses it: roadtest prints a
gdb command and waits; the command, run in a second terminal, attaches gdb to the guest's
kernel with its lx- commands and the drivers' symbols; a breakpoint in the driver stops
the kernel while the test reads from the device; after `detach` the test passes."""

from __future__ import annotations

import os
import re
import sys

import pexpect
from scaffold import other_cpu

from roadtest.checkout import repo_root
from roadtest.kernel import default_cache_dir

ROOT = repo_root()
TEST = "tests/drivers/iio/light/test_opt3001.py::test_illuminance"  # reads in_illuminance_input
TIMEOUT = 300  # generous: only there so that nothing hangs
PROMPT = r"\(gdb\) "


class Gdb:
    def __init__(self, command: str, env: dict[str, str]) -> None:
        self.term = pexpect.spawn(
            "/bin/sh", ["-c", command], env=env, encoding="utf-8", timeout=TIMEOUT
        )
        self.term.expect(PROMPT)

    def __call__(self, command: str) -> str:
        """`command`'s output, once gdb prompts again."""
        self.term.sendline(command)
        self.term.expect(PROMPT)
        return str(self.term.before)


def test_gdb_stops_the_driver_while_the_test_reads_from_it() -> None:
    # TERM=dumb: gdb's output without colours or bracketed paste.
    env = {**os.environ, "ROADTEST_CACHE": str(default_cache_dir()), "TERM": "dumb"}
    run = pexpect.spawn(
        sys.executable,
        ["-m", "roadtest.cli", "run", f"--roadtest-cpu={other_cpu()}", "--roadtest-gdb", TEST],
        cwd=ROOT,
        env=env,
        encoding="utf-8",
        timeout=TIMEOUT,
        dimensions=(24, 1000),  # the command on one line
    )
    gdb: Gdb | None = None
    try:
        run.expect(r"run:\r\n\r\n(gdb [^\r\n]+)\r\n")
        assert isinstance(run.match, re.Match)
        gdb = Gdb(run.match.group(1), env)
        gdb("set pagination off")
        # The kernel's log, read from its memory: its banner (init/version.c).
        assert re.search(r"Linux version 6\.12\.\S+-roadtest", gdb("lx-dmesg"))
        # roadtest loaded the driver before the tests, and bound nothing.
        assert re.search(r"\bopt3001 ", gdb("lx-lsmod"))
        assert "Breakpoint 1 at" in gdb("break opt3001_get_lux")
        gdb.term.sendline("continue")
        gdb.term.expect(r"Breakpoint 1, opt3001_get_lux")
        gdb.term.expect(PROMPT)
        # Stopped inside the sysfs read of the test's lux value.
        assert "iio_read_channel_info" in gdb("bt")
        assert "passed" not in str(run.before)
        gdb("delete 1")
        assert "Detaching from program" in gdb("detach")
        gdb.term.sendline("quit")
        gdb.term.expect(pexpect.EOF)
        run.expect(pexpect.EOF)
        run.close()
        assert run.exitstatus == 0, run.before
        assert "1 passed" in str(run.before)
    finally:
        for term in (gdb.term if gdb else None, run):
            if term is not None and term.isalive():
                term.terminate(force=True)
