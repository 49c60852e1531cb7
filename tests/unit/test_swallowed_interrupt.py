"""A Ctrl-C whose KeyboardInterrupt Python swallowed stops `roadtest run` before the next test.

Raised while a gc callback runs (Hypothesis has one), the KeyboardInterrupt is reported
as "ignored" and the test goes on; pytest used to run every remaining test before
roadtest said `roadtest: interrupted`. Here a test's own gc callback takes the signal,
as Hypothesis's did, in a `roadtest run` of its own (no guest: the tests need none).
"""

from __future__ import annotations

import signal
from pathlib import Path

import pytest
from helpers import run_script_with_a_kernel

TESTS = """
import gc
import signal
from pathlib import Path


def test_one():
    def interrupted(phase, info):
        gc.callbacks.remove(interrupted)
        signal.raise_signal(signal.SIGINT)  # its handler's KeyboardInterrupt is lost here

    gc.callbacks.append(interrupted)
    gc.collect()
    Path("one-ran").touch()  # the test went on: the interrupt was swallowed


def test_two():
    Path("two-ran").touch()
"""

SCRIPT = """
import sys

from roadtest import cli

sys.exit(cli.main(["run", "--roadtest-kernel=kernel", "-p", "no:cacheprovider", "test_user.py"]))
"""


def test_a_swallowed_ctrl_c_stops_the_run_before_the_next_test(tmp_path: Path) -> None:
    (tmp_path / "test_user.py").write_text(TESTS)
    result = run_script_with_a_kernel(tmp_path, SCRIPT)
    output = result.stdout + result.stderr
    assert (tmp_path / "one-ran").exists(), output  # the interrupt was indeed swallowed
    assert not (tmp_path / "two-ran").exists(), output
    assert result.returncode == 130, output
    assert result.stderr.strip().splitlines()[-1] == "roadtest: interrupted", output
    # Not pytest's warning about an exception "ignored", with its traceback.
    assert "Traceback" not in output and "Unraisable" not in output, output


def test_a_swallowed_ctrl_c_ends_a_property_before_its_next_example() -> None:
    """Hypothesis runs a @given test's examples in one pytest test: the next one stops it."""
    from typing import Any, cast

    from roadtest import signals
    from roadtest.pytest_plugin.examples import ExampleRunner, ExampleStats

    ran: list[int] = []
    runner = ExampleRunner(cast(Any, None), "test_p", cast(Any, None), ExampleStats())
    previous = signals.install()
    try:
        signals._received = signal.SIGINT  # remembered, not raised (it was swallowed)
        with pytest.raises(KeyboardInterrupt):
            runner.run(lambda: ran.append(1), (), {})
    finally:
        signals.restore(previous)
    assert ran == []
