"""`roadtest replay` and `roadtest record` on bad input: one line, non-zero, nothing changed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers import Result, Roadtest, cli_runner, deep_marker, raw_trace
from test_record_replay import DEV, TEST, attach, driver, transfer

from roadtest.backend.gpio import VirtioGpio
from roadtest.backend.i2c_transfer import I2CMessage, Transfer
from roadtest.errors import RoadtestError
from roadtest.models.base import ModelError
from roadtest.models.tps6286x import REG_VOUT1, TPS6286x
from roadtest.recorder.recording import RecordingHooks
from roadtest.replayer.player import ReplayHooks
from roadtest.replayer.replay_command import replay as replay_command
from roadtest.replayer.replay_command import results_directory
from roadtest.replayer.results import add_failed_test, add_skipped_test
from roadtest.trace.format import Header, load_trace, write_trace_atomic

ROADTEST = Path(sys.executable).with_name("roadtest")
REPO = Path(__file__).resolve().parents[2]


def replay(golden: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(ROADTEST), "replay", "--golden", str(golden)],
        capture_output=True,
        text=True,
        check=False,
        cwd=REPO,
        env={**os.environ, "ROADTEST_ROOT": str(REPO)},
    )


def one_error_line(result: subprocess.CompletedProcess[str] | Result, status: int = 2) -> str:
    """The one line of an error, whose exit status is `status` (4: a usage error)."""
    assert result.returncode == status, result
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    return lines[0]


def trace(path: Path, test: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    header = Header(kernel="k", test=test, address=0x48, compatible="ti,tps62864")
    write_trace_atomic(path, header, [])
    return path


def test_a_missing_golden_directory(tmp_path: Path) -> None:
    assert "no such directory" in one_error_line(replay(tmp_path / "nope"))


def test_a_golden_directory_without_traces(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("x")
    assert "no traces" in one_error_line(replay(tmp_path))


def test_a_trace_whose_test_is_gone(tmp_path: Path) -> None:
    trace(tmp_path / "tps62864" / "x.rtrace", "tests/drivers/regulator/test_tps62864.py::test_gone")
    line = one_error_line(replay(tmp_path))
    assert "x.rtrace: its test tests/drivers/regulator/test_tps62864.py::test_gone" in line
    assert line.endswith(
        "no longer exists: delete the trace, or record the test under its new name"
    )


def test_a_trace_whose_test_is_not_under_tests(tmp_path: Path) -> None:
    # A trace recorded by pytester (its test file at the root) says what form is wanted.
    trace(tmp_path / "opt3001" / "x.rtrace", "test_user.py::test_reads")
    line = one_error_line(replay(tmp_path))
    assert "x.rtrace: its test test_user.py::test_reads is not a node id of these " in line
    assert line.endswith(f"(tests/<file>.py::<name>, under {REPO})")


@pytest.mark.parametrize(
    "damage",
    [lambda b: b[: len(b) // 2], lambda b: b"", lambda b: b"not a trace at all"],
    ids=["truncated", "empty", "foreign"],
)
def test_a_damaged_trace(tmp_path: Path, damage: Callable[[bytes], bytes]) -> None:
    path = trace(
        tmp_path / "tps62864" / "x.rtrace", "tests/drivers/regulator/test_tps62864.py::test_modes"
    )
    path.write_bytes(damage(path.read_bytes()))
    # Its own line in the summary, why in one line; nothing else to play (no guest started).
    result = replay(tmp_path)
    assert result.returncode == 1 and result.stderr == "", result
    assert "Traceback" not in result.stdout
    (line,) = [line for line in result.stdout.splitlines() if str(path) in line]
    assert line.startswith(f"  DAMAGED    {path}: byte ")
    assert result.stdout.splitlines()[-1] == "0 of 1 trace replayed without divergence"


@pytest.fixture
def roadtest(capsys: pytest.CaptureFixture[str]) -> Roadtest:
    return cli_runner(capsys)


# A checkout of its own (root/tests/...), golden traces recorded into it without a guest,
# and a stand-in for the pytest run that does what the replay plugin does: the hooks,
# one device per test, the recorded driver, the results file.

TEST_B = TEST.replace("test_a[p]", "test_b")


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("ROADTEST_CACHE", str(tmp_path / "cache"))  # results under replay/
    test_file = tmp_path / "root" / TEST.split("::")[0]
    test_file.parent.mkdir(parents=True)
    test_file.write_text("def test_a(p):\n    pass\n\n\ndef test_b():\n    pass\n")
    return tmp_path / "root"


def record_golden(golden: Path, *tests: str, kernel: str = "6.12.0-test") -> Path:
    line = VirtioGpio(ngpio=2).line(1)
    hooks = RecordingHooks(golden, kernel)
    for test in tests:
        bus = attach(hooks, TPS6286x(), line, test)
        hooks.marker(DEV, "bind", None)
        driver(bus)
        assert hooks.detached(DEV) == []
    return golden


class FakePytest:
    """`run_pytest` for `replay`: what the plugin does with --roadtest-replay, minus the guest."""

    def __init__(
        self,
        root: Path,
        failing: dict[str, str] | None = None,
        stop_early: bool = False,
        skipping: dict[str, str] | None = None,
        kernel: str = "6.12.0-test",
    ) -> None:
        self.root = root
        self.kernel = kernel  # the release of the kernel the run "boots"
        self.runs: list[list[str]] = []
        self.failing = failing or {}  # test id -> how it fails
        self.skipping = skipping or {}  # test id -> why it is skipped (before any device)
        self.stop_early = stop_early  # a failing test fails before its driver's last transfers

    def __call__(self, args: list[str]) -> int:
        self.runs.append(args)
        options = dict(a.split("=", 1) for a in args if a.startswith("--") and "=" in a)
        node_ids = [a for a in args if not a.startswith("-")]
        try:
            hooks = ReplayHooks(
                Path(options["--roadtest-replay"]),
                Path(options["--roadtest-replay-results"]),
                kernel_release=self.kernel,
            )
        except RoadtestError:
            return 3  # the plugin's pytest.exit(): the whole session ends
        failed = 0
        for node_id in node_ids:
            test_id = str(Path(node_id.split("::")[0]).relative_to(self.root))
            test_id += "::" + node_id.split("::", 1)[1]
            if test_id in self.skipping:  # as the plugin reports a skipped test
                add_skipped_test(
                    Path(options["--roadtest-replay-results"]), test_id, self.skipping[test_id]
                )
                continue
            try:
                player = attach(hooks, TPS6286x(), VirtioGpio(ngpio=2).line(1), test_id)
                hooks.marker(DEV, "bind", None)
                if test_id in self.failing and self.stop_early:
                    transfer(player, bytes([REG_VOUT1]), 1)  # the test fails before the rest
                else:
                    driver(player)
            except (ModelError, AssertionError):
                failed += 1
            failed += bool(hooks.detached(DEV))
            if test_id in self.failing:  # as the plugin reports a failed test
                add_failed_test(
                    Path(options["--roadtest-replay-results"]), test_id, self.failing[test_id]
                )
                failed += 1
        return 1 if failed else 0


def summary(capsys: pytest.CaptureFixture[str]) -> dict[str, str]:
    """The replay summary's lines, by trace file name (relative to the golden directory)."""
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("replay of ") and "Traceback" not in "".join(lines)
    return {line.split()[-1]: line for line in lines[1:-1] for line in [_key(line)]}


def _key(line: str) -> str:
    # "  VERDICT    PATH: why" -> "PATH VERDICT: why": the path last word of the key part.
    verdict, rest = line[:13].strip(), line[13:]
    path, _, why = rest.partition(": ")
    return f"{verdict}|{why} {Path(path).parent.name}/{Path(path).name}"


def test_one_damaged_trace_fails_alone_and_the_rest_are_played(
    tmp_path: Path, root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    golden = record_golden(tmp_path / "golden", TEST, TEST_B)
    damaged = golden / "tps62864" / "test_b.rtrace"
    data = bytearray(damaged.read_bytes())
    data[-13] ^= 0x40  # in the last lz4 block (before its checksum, the end mark, the frame's)
    damaged.write_bytes(bytes(data))
    fake = FakePytest(root)
    assert replay_command(golden, [], root, fake) == 1
    lines = summary(capsys)
    ok, bad = lines["tps62864/test_a-p.rtrace"], lines["tps62864/test_b.rtrace"]
    assert ok.startswith("ok|")
    assert bad.startswith("DAMAGED|the trace is damaged: byte ") and "checksum" in bad.lower(), bad


def test_a_test_that_fails_is_not_summarised_as_replayed_without_divergence(
    tmp_path: Path, root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    golden = record_golden(tmp_path / "golden", TEST, TEST_B)
    # test_b's I/O matches its trace, but the test fails for a reason of its own.
    fake = FakePytest(root, failing={TEST_B: "AssertionError: assert 88.8 == 88.0"})
    assert replay_command(golden, [], root, fake) == 1
    out = capsys.readouterr().out
    assert out.splitlines()[-1] == "1 of 2 traces replayed without divergence"
    lines = {_key(line).split()[-1]: _key(line) for line in out.splitlines()[1:-1]}
    assert lines["tps62864/test_a-p.rtrace"].startswith("ok|")
    assert lines["tps62864/test_b.rtrace"].startswith(
        "FAILED|its I/O matched the trace, but its test failed: AssertionError: assert 88.8 == 88.0"
    )


def test_a_trace_whose_test_this_machine_skips_is_skipped_not_failed(
    tmp_path: Path, root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    golden = record_golden(tmp_path / "golden", TEST, TEST_B)
    # test_b does not run here (an SPI device on x86_64): its trace is not a divergence.
    why = "unsupported on x86_64: test_b.SENSOR is an SPI device"
    fake = FakePytest(root, skipping={TEST_B: why})
    assert replay_command(golden, [], root, fake) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[-1] == (
        "1 of 2 traces replayed without divergence (1 skipped with their tests)"
    )
    lines = {_key(line).split()[-1]: _key(line) for line in out.splitlines()[1:-1]}
    assert lines["tps62864/test_a-p.rtrace"].startswith("ok|")
    assert lines["tps62864/test_b.rtrace"].startswith(f"SKIPPED|its test was skipped: {why}")


def test_a_test_that_fails_on_its_own_says_so_next_to_the_divergence_it_caused(
    tmp_path: Path, root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    golden = record_golden(tmp_path / "golden", TEST)
    fake = FakePytest(root, failing={TEST: "AssertionError: assert 88.8 == 88.0"}, stop_early=True)
    assert replay_command(golden, [], root, fake) == 1
    line = summary(capsys)["tps62864/test_a-p.rtrace"]
    assert line.startswith("DIVERGED|the driver stopped after transfer 1 of 3")
    assert line.endswith(
        "(its test failed: AssertionError: assert 88.8 == 88.0) tps62864/test_a-p.rtrace"
    )


def test_a_shadowed_copy_says_which_trace_was_played(
    tmp_path: Path, root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    golden = record_golden(tmp_path / "golden", TEST)
    (golden / "copy").mkdir()
    (golden / "copy" / "test_a-p.rtrace").write_bytes(
        (golden / "tps62864" / "test_a-p.rtrace").read_bytes()
    )
    assert replay_command(golden, [], root, FakePytest(root)) == 1
    lines = summary(capsys)
    played = golden / "copy" / "test_a-p.rtrace"  # the first in path order
    assert lines["copy/test_a-p.rtrace"].startswith("ok|")
    shadowed = lines["tps62864/test_a-p.rtrace"]
    assert shadowed.startswith(f"NOT PLAYED|{played} is a trace of the same test")
    assert "did not attach" not in shadowed


@pytest.mark.parametrize(
    ("kernel", "played", "other"),
    [
        ("6.1.192-roadtest", "test_a-p@6.1.rtrace", "test_a-p.rtrace"),
        ("6.12.118-roadtest", "test_a-p.rtrace", "test_a-p@6.1.rtrace"),
        # No trace of 6.6: 6.1 is five lines away, 6.12 six.
        ("6.6.30-roadtest", "test_a-p@6.1.rtrace", "test_a-p.rtrace"),
        ("6.7.0-roadtest", "test_a-p.rtrace", "test_a-p@6.1.rtrace"),
    ],
)
def test_traces_of_two_kernels_the_nearest_is_played_and_said(
    tmp_path: Path,
    root: Path,
    capsys: pytest.CaptureFixture[str],
    kernel: str,
    played: str,
    other: str,
) -> None:
    golden = record_golden(tmp_path / "golden", TEST, kernel="6.12.118-roadtest")
    record_golden(golden, TEST, kernel="6.1.192-roadtest")  # lies beside it: test_a-p@6.1
    assert sorted(p.name for p in (golden / "tps62864").iterdir()) == [
        "test_a-p.rtrace",
        "test_a-p@6.1.rtrace",
    ]
    assert replay_command(golden, [], root, FakePytest(root, kernel=kernel)) == 0
    lines = summary(capsys)
    recorded_on = "6.1.192-roadtest" if "@6.1" in played else "6.12.118-roadtest"
    ok = lines[f"tps62864/{played}"]
    assert ok.startswith("ok|")
    assert f"(recorded on {recorded_on}: of 2 kernels' traces, the nearest {kernel})" in ok
    assert lines[f"tps62864/{other}"].startswith("-|recorded on ")
    assert f"tps62864/{played} is of the kernel nearest {kernel}" in lines[f"tps62864/{other}"]


def test_a_detail_nested_1000_deep_fails_its_trace_in_one_line(
    tmp_path: Path, root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    golden = record_golden(tmp_path / "golden", TEST)
    path = golden / "tps62864" / "test_a-p.rtrace"
    header, events = load_trace(path)
    raw_trace(
        path,
        header,
        *[{k: v for k, v in e.items() if k not in ("seq", "t")} for e in events[:2]],
        deep_marker(1000, seq=2),
    )
    assert replay_command(golden, [], root, FakePytest(root)) == 1
    (line,) = summary(capsys).values()
    assert line.startswith("DAMAGED|the trace is damaged: ") and "nests more than" in line


def test_a_huge_transfer_makes_a_short_summary(tmp_path: Path, root: Path) -> None:
    header = Header(kernel="k", test=TEST, address=0x48, compatible="ti,tps62864", regbytes=1)
    header.extra["device"] = "test_x.DEV"
    msgs = [{"flags": 0, "len": 2, "data": b"\x01\x50", "status": 0}] * 65536
    raw_trace(tmp_path / "a.rtrace", header, {"kind": "i2c", "msgs": msgs})
    hooks = ReplayHooks(tmp_path)
    player = attach(hooks, TPS6286x(), VirtioGpio(ngpio=2).line(1))
    with pytest.raises(ModelError):
        driver(player)
    hooks.detached(DEV)
    (outcome,) = hooks.outcomes
    assert "characters left out" in outcome.failure and len(outcome.failure) < 2000


EVIL = (  # a test file that leaves a mark when imported
    "import pathlib\npathlib.Path(__file__).with_name('ran').write_text('x')\n\n"
    "def test_x():\n    pass\n"
)


@pytest.mark.parametrize(
    "test_id",
    [
        "../evil/test_evil.py::test_x",
        "tests/../../evil/test_evil.py::test_x",
        "{tmp}/evil/test_evil.py::test_x",
        "tests/link/test_evil.py::test_x",  # a symlink out of tests/
        "/usr/bin/ls::x",
        "tests/" + "a" * 5000 + ".py::test_x",
        "tests/x.py",
        "tests/bad\x00.py::test_x",
    ],
    ids=["dotdot", "tests-dotdot", "absolute", "symlink", "binary", "long", "no-name", "nul"],
)
def test_a_trace_cannot_make_replay_run_a_file_outside_tests(
    tmp_path: Path, root: Path, test_id: str
) -> None:
    evil = tmp_path / "evil" / "test_evil.py"
    evil.parent.mkdir()
    evil.write_text(EVIL)
    (root / "tests" / "link").symlink_to(evil.parent)
    test_id = test_id.replace("{tmp}", str(tmp_path))
    golden = tmp_path / "golden"
    trace(golden / "x" / "x.rtrace", test_id)
    fake = FakePytest(root)
    with pytest.raises(RoadtestError) as info:
        replay_command(golden, [], root, fake)
    assert fake.runs == [] and not (evil.parent / "ran").exists()
    message = str(info.value)
    assert "\n" not in message and len(message) < 1000
    assert message.startswith(f"{golden / 'x' / 'x.rtrace'}: its test ")


@pytest.mark.parametrize("selection", ["/tmp", "..", "/etc/passwd", "/etc/passwd::x"])
def test_a_selection_outside_the_checkout_is_one_line(tmp_path: Path, selection: str) -> None:
    trace(
        tmp_path / "tps62864" / "x.rtrace", "tests/drivers/regulator/test_tps62864.py::test_modes"
    )
    result = subprocess.run(
        [str(ROADTEST), "replay", "--golden", str(tmp_path), selection],
        capture_output=True,
        text=True,
        check=False,
        cwd=REPO,
        env={**os.environ, "ROADTEST_ROOT": str(REPO)},
    )
    assert "not among these tests" in one_error_line(result)


def test_an_empty_golden_is_not_the_current_directory(
    tmp_path: Path, roadtest: Roadtest, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert "--golden needs a directory" in one_error_line(roadtest("replay", "--golden="), 4)


@pytest.mark.parametrize(
    "out",
    [None, "", "/proc/roadtest-x", "{file}", "/dev/null/x", "{file}/x"],
    ids=["no-value", "empty", "proc", "a-file", "under-dev-null", "under-a-file"],
)
def test_record_out_is_checked_before_anything_runs(
    tmp_path: Path, roadtest: Roadtest, out: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("roadtest.cli.run_pytest", lambda args: pytest.fail("ran pytest"))
    file = tmp_path / "file"
    file.write_text("mine")
    args = ["--out"] if out is None else [f"--out={out.replace('{file}', str(file))}"]
    line = one_error_line(roadtest("record", "-k", "x", *args), 4)
    if out is None:  # nor does it take the next option as its value
        assert "needs a" in one_error_line(roadtest("record", "--out", "-k", "x"), 4)
    assert line.startswith("roadtest: --out")
    assert file.read_text() == "mine"


def test_the_player_holds_a_window_of_the_trace_not_all_of_it(tmp_path: Path) -> None:
    # An 18 MB trace took 810 MB when replay loaded it whole (bench/bench_replay_memory.py).
    header = Header(kernel="k", test=TEST, address=0x48, compatible="ti,tps62864", regbytes=1)
    header.extra["device"] = "test_x.DEV"
    read = [
        {"flags": 1, "len": 1, "data": b"\x01", "status": 0},
        {"flags": 2, "len": 1, "data": b"\x64", "status": 0},
    ]
    count = 20_000
    write_trace_atomic(tmp_path / "big.rtrace", header, [{"kind": "i2c", "msgs": read}] * count)
    hooks = ReplayHooks(tmp_path)
    bus = attach(hooks, TPS6286x(), VirtioGpio(ngpio=2).line(1))
    (player,) = hooks.players.values()
    held = 0
    for _ in range(count):
        transfer = Transfer(DEV.address, [I2CMessage(1, 1, b"\x01"), I2CMessage(2, 1, b"")])
        assert bus.serve(transfer)
        held = max(held, len(player.events._buf))
    assert hooks.detached(DEV) == []
    assert hooks.outcomes[0].transfers == count
    assert held < count // 4


def test_replay_takes_the_options_of_roadtest_run(
    tmp_path: Path, root: Path, monkeypatch: pytest.MonkeyPatch, roadtest: Roadtest
) -> None:
    golden = record_golden(tmp_path / "golden", TEST)
    fake = FakePytest(root)
    monkeypatch.setenv("ROADTEST_ROOT", str(root))
    monkeypatch.setattr("roadtest.cli.run_pytest", fake)
    module = tmp_path / "my-driver.ko"
    module.write_bytes(b"\x7fELF" + bytes(60))  # an ELF file: what a module is, for the check
    result = roadtest("replay", f"--roadtest-module={module}", "--golden", golden, "-x")
    assert result.returncode == 0, result
    (args,) = fake.runs
    assert f"--roadtest-module={module}" in args and "-x" in args
    assert any(a.startswith("--roadtest-replay=") for a in args)


# The results directory: under the cache, and never left behind, even by a SIGKILL.

_HOLD_RESULTS = """
import sys, time
from pathlib import Path
from roadtest.replayer.replay_command import results_directory
with results_directory(Path(sys.argv[1])) as directory:
    (directory / "results.json").write_text("{}")
    print(directory, flush=True)
    time.sleep(600)
"""


def _holding_results(parent: Path) -> tuple[subprocess.Popen[str], Path]:
    """A process inside results_directory(parent), and its directory."""
    proc = subprocess.Popen(
        [sys.executable, "-c", _HOLD_RESULTS, str(parent)], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    return proc, Path(proc.stdout.readline().strip())


def test_a_sigkilled_replays_results_are_removed_by_the_next_and_a_live_ones_kept(
    tmp_path: Path,
) -> None:
    parent = tmp_path / "cache" / "replay"
    killed, killed_dir = _holding_results(parent)
    live, live_dir = _holding_results(parent)
    try:
        killed.send_signal(signal.SIGKILL)  # no finally, no atexit: the directory stays
        killed.wait()
        assert (killed_dir / "results.json").is_file()
        with results_directory(parent) as directory:
            assert directory.parent == parent and list(directory.iterdir()) == []
            assert not killed_dir.exists()
            assert (live_dir / "results.json").is_file()  # its replay still runs
        assert not directory.exists()
    finally:
        live.kill()
        live.wait()
    with results_directory(parent):
        pass
    assert sorted(p.name for p in parent.iterdir()) == [".lock"]


def test_replay_keeps_its_results_in_the_cache_and_removes_them(
    tmp_path: Path, root: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    golden = record_golden(tmp_path / "golden", TEST)
    fake = FakePytest(root)
    assert replay_command(golden, [], root, fake) == 0
    (args,) = fake.runs
    (option,) = [a for a in args if a.startswith("--roadtest-replay-results=")]
    results = Path(option.split("=", 1)[1])
    assert results.parent == tmp_path / "cache" / "replay"  # not /tmp
    assert not results.exists()
    assert capsys.readouterr().out.splitlines()[-1] == "1 of 1 trace replayed without divergence"


def test_a_results_directory_that_cannot_be_made_is_one_line(tmp_path: Path) -> None:
    blocker = tmp_path / "cache"
    blocker.write_text("a file, not a directory")
    with pytest.raises(RoadtestError, match="^cannot make the replay's results directory in "):
        with results_directory(blocker / "replay"):
            pass


def test_a_run_option_with_its_value_apart_is_not_a_selection(
    tmp_path: Path, root: Path, monkeypatch: pytest.MonkeyPatch, roadtest: Roadtest
) -> None:
    # The README's spelling, `--machine x86_64`, is the machine, not a test named x86_64.
    golden = record_golden(tmp_path / "golden", TEST)
    fake = FakePytest(root)
    monkeypatch.setenv("ROADTEST_ROOT", str(root))
    monkeypatch.setattr("roadtest.cli.run_pytest", fake)
    result = roadtest("replay", "--machine", "x86_64", "--golden", golden)
    assert result.returncode == 0, result
    (args,) = fake.runs
    assert "--roadtest-machine=x86_64" in args and "x86_64" not in args
