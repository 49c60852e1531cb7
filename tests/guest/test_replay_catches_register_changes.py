"""Replay catches what live tests miss: a driver change invisible to userspace and to the
model's assertions, but with a different register sequence.

The change (data/tps6286x-mirror-vout2.patch) makes tps6286x's set_voltage_sel also write
the selector to VOUT2. It is applied to a copy of the driver from the guest kernel's own
tree and built out of tree; then, each in a `roadtest` subprocess with its own guest:

(a) `roadtest run --roadtest-module=<patched ko>` of test_tps62864.py passes: the live
    model and the tests' write-log assertions do not notice;
(b) `roadtest replay --golden` of the same tests with the same module fails, and reports,
    for exactly the traces in which the driver set a voltage, the divergence at the new
    write: "got: write VOUT2(0x02) = <the selector just written to VOUT1>";
(c) the same replay with an out-of-tree build of the unpatched source passes, so that it is
    the patch, not the out-of-tree build, that (b) caught.

The golden traces are the repository's traces/tps62864/ when present, otherwise recorded
here first with the kernel's own module.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from scaffold import other_cpu

from roadtest.checkout import repo_root
from roadtest.kernel import Kernel, ensure_kernel
from roadtest.kernel.external import build_external_module, vermagic
from roadtest.trace.format import read_trace

FLAG_M_RD = 1 << 1  # virtio-i2c read (include/uapi/linux/virtio_i2c.h)
REPO = repo_root()
ROADTEST = Path(sys.executable).with_name("roadtest")
PATCH = Path(__file__).parent / "data" / "tps6286x-mirror-vout2.patch"
DRIVER = "drivers/regulator/tps6286x-regulator.c"
TESTS = "tests/drivers/regulator/test_tps62864.py"
REPO_GOLDEN = REPO / "traces" / "tps62864"
REG_VOUT1 = 0x01

TIMEOUT = 300  # per inner run; each takes seconds


@dataclass(frozen=True)
class Run:
    returncode: int
    output: str
    seconds: float


class Timings:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def add(self, what: str, seconds: float) -> None:
        line = f"{what}: {seconds:.1f} s"
        self.lines.append(line)
        print(line)


def roadtest(args: list[str], workdir: Path, module: Path | None = None) -> Run:
    """`roadtest ARGS` with a guest of its own; `module` in place of the kernel's."""
    addopts = ["-p", "no:cacheprovider", f"--roadtest-cpu={other_cpu()}"]
    addopts.append(f"--roadtest-workdir={workdir}")
    # On the command line: `roadtest replay` takes run's options (as --option=VALUE).
    options = [f"--roadtest-module={module}"] if module is not None else []
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    # Wide enough that pytest's short summary shows each failure's headline whole.
    env.update(ROADTEST_ROOT=str(REPO), PYTEST_ADDOPTS=" ".join(addopts), COLUMNS="400")
    start = time.monotonic()
    proc = subprocess.run(
        [str(ROADTEST), *args, *options],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    return Run(proc.returncode, proc.stdout, time.monotonic() - start)


def first_vout1_write(trace: Path) -> tuple[int, int] | None:
    """(index of the i2c event after the trace's first VOUT1 write, the value written), or
    None when the driver never wrote VOUT1: where, and with what, the patched driver's
    extra VOUT2 write must show up."""
    _, events = read_trace(trace)
    written: int | None = None
    for index, event in enumerate(events):
        if event["kind"] != "i2c":
            continue
        if written is not None:
            return index, written
        msgs = event["msgs"]
        if len(msgs) == 1 and not msgs[0]["flags"] & FLAG_M_RD:
            data = msgs[0]["data"]
            if len(data) == 2 and data[0] == REG_VOUT1:
                written = data[1]
    if written is not None:
        raise AssertionError(f"{trace}: its VOUT1 write is its last transfer")
    return None


@pytest.fixture(scope="module")
def kernel() -> Kernel:
    return ensure_kernel(REPO)


def golden_traces(tmp_path: Path, timings: Timings) -> Path:
    if sorted(REPO_GOLDEN.glob("*.rtrace")):
        return REPO_GOLDEN
    out = tmp_path / "golden"
    run = roadtest(["record", "--out", str(out), TESTS], tmp_path / "record")
    timings.add("record golden traces (stock module)", run.seconds)
    assert run.returncode == 0, run.output
    return out / "tps62864"


def test_replay_catches_a_register_change_that_live_tests_miss(
    kernel: Kernel, tmp_path: Path
) -> None:
    timings = Timings()
    golden = golden_traces(tmp_path, timings)
    traces = sorted(golden.glob("*.rtrace"))
    predicted = {t: first_vout1_write(t) for t in traces}
    changed = {t: p for t, p in predicted.items() if p is not None}
    unchanged = [t for t, p in predicted.items() if p is None]
    assert changed and unchanged, f"{golden}: want traces with and without a voltage change"

    start = time.monotonic()
    patched = build_external_module(kernel, DRIVER, tmp_path / "patched", patches=[PATCH])
    timings.add("build the patched module", time.monotonic() - start)
    start = time.monotonic()
    stock = build_external_module(kernel, DRIVER, tmp_path / "stock")
    timings.add("build the unpatched module out of tree", time.monotonic() - start)
    for ko in (patched, stock):
        assert vermagic(ko).split()[0] == kernel.release
    assert patched.read_bytes() != stock.read_bytes()

    # (a) The live models notice nothing.
    live = roadtest(["run", "-q", TESTS], tmp_path / "live", module=patched)
    timings.add("(a) live run, patched module", live.seconds)
    assert live.returncode == 0, live.output
    assert re.search(r"^\d+ passed in ", live.output, re.M), live.output
    # It was the out-of-tree module that the guest loaded (finit_module, through the agent).
    kernel_logs = list((tmp_path / "live").glob("*/guest-*/kernel.log"))
    assert any(
        "tps6286x_regulator: loading out-of-tree module taints kernel." in log.read_text()
        for log in kernel_logs
    ), kernel_logs

    # (b) Replay does: at the new write, in exactly the traces whose path it is on.
    replay = ["replay", "--golden", str(golden), TESTS]
    diverged = roadtest(replay, tmp_path / "replay-patched", module=patched)
    timings.add("(b) replay, patched module", diverged.seconds)
    assert diverged.returncode == 1, diverged.output
    summary = diverged.output[diverged.output.rindex(f"replay of {golden}:") :]
    print(summary)
    for trace, (index, value) in changed.items():
        assert re.search(
            rf"^  DIVERGED   {re.escape(str(trace))}: diverged at event {index} "
            rf"\(transfer \d+ of \d+\): got: write VOUT2\(0x02\) = {value:#04x}; "
            r"expected: \S",
            summary,
            re.M,
        ), f"{trace.name}: no divergence at event {index}:\n{summary}"
    for trace in unchanged:
        assert re.search(rf"^  ok         {re.escape(str(trace))}: ", summary, re.M), summary
    want = f"{len(unchanged)} of {len(traces)} traces replayed without divergence"
    assert want in summary, summary
    # Each failing test's headline (its short summary line, and its last E line) is the
    # divergence, not the driver's EIO; the register-level context follows it: the VOUT1
    # write before it.
    for trace, (_, value) in changed.items():
        test_id = read_trace(trace)[0].test
        headline = rf"\S*ReplayDivergence: got: write VOUT2\(0x02\) = {value:#04x}; expected: "
        assert re.search(rf"^FAILED {re.escape(test_id)} - {headline}", diverged.output, re.M), (
            f"{test_id}: the short summary does not name the divergence:\n{diverged.output}"
        )
    assert re.search(
        r"^E   \S*ReplayDivergence: got: write VOUT2\(0x02\) = (0x[0-9a-f]{2}); expected: .*\n"
        r" +replay of \S+: the driver diverged at event \d+ \(transfer \d+ of \d+\)\n"
        r" +events before it:\n( +#\d+ .*\n)* +#\d+ write VOUT1\(0x01\) = \1\n",
        diverged.output,
        re.M,
    ), diverged.output
    assert "OSError" not in "".join(re.findall(r"^FAILED .*", diverged.output, re.M))

    # (c) The same out-of-tree build without the patch replays cleanly.
    clean = roadtest(replay, tmp_path / "replay-stock", module=stock)
    timings.add("(c) replay, unpatched out-of-tree module", clean.seconds)
    assert clean.returncode == 0, clean.output
    assert f"{len(traces)} of {len(traces)} traces replayed without divergence" in clean.output
    print("\n".join(["timings:", *timings.lines]))
