"""A full disk while recording: one line naming the file and its file system (ENOSPC), the
run stopped at the first test it failed, the golden traces unchanged.

It used to fail every test with `OSError: [Errno 28]`, the backend's thread left the
driver's request unanswered (a guest hang), and `roadtest record` ended with "the
tests did not pass", as if the driver had failed. /dev/full is a file system that is
always full: every write to it fails with ENOSPC.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from fake_frontend import FakeFrontend
from helpers import run_script_with_a_kernel

from roadtest.backend.server import Backend
from roadtest.models.base import SimpleSMBusModel
from roadtest.pytest_plugin.verdicts import model_outcome
from roadtest.recorder.recording import RecordingHooks
from roadtest.trace.format import Header, TraceWriteError, TraceWriter, write_failures
from roadtest.trace.names import TracedDevice

FULL = Path("/dev/full")
HEADER = Header(kernel="k", test="tests/t.py::test_a", address=0x20, compatible="acme,chip")
ENOSPC_LINE = "cannot write the trace /dev/full: the file system at /dev is full (ENOSPC)"

pytestmark = pytest.mark.skipif(not FULL.exists(), reason="needs /dev/full")


def test_a_writer_on_a_full_file_system_says_so_in_one_line() -> None:
    before = len(write_failures())
    with pytest.raises(TraceWriteError) as raised:
        TraceWriter(FULL, HEADER)  # the header is flushed at once
    assert str(raised.value) == f"{ENOSPC_LINE}: free some space there"
    assert "\n" not in str(raised.value)
    assert write_failures()[before:] == [raised.value]


def test_a_writer_that_failed_raises_the_same_error_and_closes_quietly(tmp_path: Path) -> None:
    writer = TraceWriter(tmp_path / "t.rtrace", HEADER, flush_every=1)
    writer._file = FULL.open("wb", buffering=0)  # the file system fills up now
    with pytest.raises(TraceWriteError) as first:
        writer.event("marker", what="note", detail="x")
    with pytest.raises(TraceWriteError) as again:
        writer.event("marker", what="note", detail="y")
    assert again.value is first.value
    assert writer.closed
    writer.close()  # nothing more to say: the failure was raised


class Chip(SimpleSMBusModel):
    def __init__(self) -> None:
        super().__init__({0x00: 0x12})


ADDR = 0x20
DEVICE = TracedDevice("acme,chip", ADDR, "test_full.CHIP")


@pytest.fixture
def backend() -> Iterator[tuple[Backend, FakeFrontend, RecordingHooks]]:
    with tempfile.TemporaryDirectory(prefix="rt-full-") as d:
        with Backend(Path(d)) as backend:
            with FakeFrontend.connect(backend.i2c_socket) as fe:
                fe.setup(1)
                hooks = RecordingHooks(Path(d) / "traces", "k")
                handler, observer = hooks.attached("tests/t.py::test_full", DEVICE, Chip(), {})
                backend.i2c.attach(ADDR, handler, observer)
                yield backend, fe, hooks


def test_a_full_disk_in_the_backends_thread_answers_the_driver_and_names_the_disk(
    backend: tuple[Backend, FakeFrontend, RecordingHooks],
) -> None:
    server, fe, hooks = backend
    writer = hooks.traces[DEVICE].writer
    writer._file = FULL.open("wb", buffering=0)
    writer.flush_every = 1
    # The driver gets its answer (before, the request stayed unanswered: the guest hung).
    assert fe.i2c_transfer([(ADDR, b"\x00"), (ADDR, 1)]) == [(0, b""), (0, b"\x12")]
    assert fe.i2c_transfer([(ADDR, b"\x00"), (ADDR, 1)]) == [(0, b""), (0, b"\x12")]
    (error,) = server.errors  # once, not once per transfer
    assert isinstance(error.exception, TraceWriteError)
    assert error.where == f"i2c {ADDR:#04x} recording"
    # The test's failure is the disk, not a model's fault nor the backend's.
    assert model_outcome(server.errors) is error.exception
    hooks.detached(DEVICE)  # closes quietly


RECORD_TESTS = """
from pathlib import Path

from roadtest.trace.format import Header, TraceWriter


def test_one():
    TraceWriter(Path("/dev/full"), Header(kernel="k", test="t", address=0x20, compatible="a,b"))


def test_two():
    Path("two-ran").touch()
"""

RECORD_SCRIPT = """
import sys

from roadtest import cli

sys.exit(cli.main(["record", "--out", "traces", "--roadtest-kernel=kernel", "-p",
                   "no:cacheprovider", "test_user.py"]))
"""


def test_record_stops_at_a_full_disk_with_one_line_and_keeps_the_traces(tmp_path: Path) -> None:
    (tmp_path / "test_user.py").write_text(RECORD_TESTS)
    golden = tmp_path / "traces" / "chip" / "test_a.rtrace"
    golden.parent.mkdir(parents=True)
    golden.write_bytes(b"the golden trace")
    result = run_script_with_a_kernel(tmp_path, RECORD_SCRIPT)
    output = result.stdout + result.stderr
    assert not (tmp_path / "two-ran").exists(), output  # the run stopped
    assert f"Interrupted: roadtest: {ENOSPC_LINE}" in output  # pytest's stop
    assert "1 failed" in result.stdout, output
    assert result.returncode == 2, output
    assert result.stderr.strip().splitlines()[-1] == (
        f"roadtest: {ENOSPC_LINE}: free some space there; the traces in "
        f"{tmp_path / 'traces'} are unchanged"
    )
    assert "did not pass" not in output
    assert golden.read_bytes() == b"the golden trace"
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "kernel",
        "test_user.py",
        "traces",
    ]
