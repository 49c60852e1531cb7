"""Recording a device's I/O and replaying it, on a bus driven directly (no guest, no virtio)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import virtio_spec as spec
from helpers import serve

from roadtest.backend.gpio import GpioLine, VirtioGpio
from roadtest.backend.i2c import I2CBus
from roadtest.fuzz.events import DeviceEvent, Pass, TransferFails
from roadtest.models.base import I2CModel, Input, ModelError, SimpleSMBusModel
from roadtest.models.tps6286x import REG_CONTROL, REG_VOUT1, TPS6286x
from roadtest.recorder.record_command import record
from roadtest.recorder.recording import RecordingHooks
from roadtest.replayer.failures import ReplayFailure
from roadtest.replayer.player import ReplayError, ReplayHooks, unmask_differences
from roadtest.testing.hooks import DeviceHooks, EventScriptHooks
from roadtest.trace.format import Header, load_trace, write_trace_atomic
from roadtest.trace.names import TracedDevice

TEST = "tests/drivers/regulator/test_x.py::test_a[p]"
DEV = TracedDevice("ti,tps62864", 0x48, "test_x.DEV", ("irq",))


def attach(hooks: DeviceHooks, model: I2CModel, line: GpioLine, test: str = TEST) -> I2CBus:
    """A bus with `hooks`' handler (and observer) for DEV, as the session attaches it."""
    bus = I2CBus()
    handler, observer = hooks.attached(test, DEV, model, {"irq": line})
    bus.attach(DEV.address, handler, observer)
    return bus


def transfer(bus: I2CBus, *msgs: bytes | int) -> list[bytes]:
    """One transfer: bytes are writes, ints are read lengths; returns what was read.
    Raises what was reported, as the test would see it."""
    answers, faults = serve(bus, DEV.address, *msgs)
    if faults:
        raise faults[0][1]
    return [data for (_, data), msg in zip(answers, msgs, strict=True) if isinstance(msg, int)]


def driver(bus: I2CBus, vout: int = 0x50) -> None:
    """What a driver does: read VOUT1, set it, enable."""
    assert transfer(bus, bytes([REG_VOUT1]), 1) == [b"\x64"]
    transfer(bus, bytes([REG_VOUT1, vout]))
    transfer(bus, bytes([REG_CONTROL, 0x6B]))


@pytest.fixture
def line() -> GpioLine:
    return VirtioGpio(ngpio=2).line(1)


@pytest.fixture
def golden(tmp_path: Path, line: GpioLine) -> Path:
    hooks = RecordingHooks(tmp_path / "traces", "6.12.0-test")
    bus = attach(hooks, TPS6286x(), line)
    hooks.marker(DEV, "bind", None)
    driver(bus)
    line.set(True)  # the model raises (and here releases) its interrupt
    assert hooks.detached(DEV) == []
    return tmp_path / "traces"


def test_record_writes_one_trace_per_test_and_device(golden: Path) -> None:
    (path,) = golden.rglob("*.rtrace")
    assert path == golden / "tps62864" / "test_a-p.rtrace"
    header, events = load_trace(path)
    assert header.test == TEST and header.model == "roadtest.models.tps6286x:TPS6286x"
    assert header.regbytes == 1 and header.extra["device"] == "test_x.DEV"
    kinds = [e["kind"] for e in events]
    assert kinds == ["marker", "i2c", "i2c", "i2c", "irq"]
    first = events[1]["msgs"]
    assert [(m["flags"], m["data"], m["status"]) for m in first] == [
        (1, bytes([REG_VOUT1]), 0),  # FAIL_NEXT: joined with the read
        (2, b"\x64", 0),
    ]
    assert events[4]["level"] == 1


def test_other_gpio_requests_are_reported_by_irq_type_name(tmp_path: Path, line: GpioLine) -> None:
    recording = RecordingHooks(tmp_path, "k")
    attach(recording, TPS6286x(), line)
    line.observe("irq_type", spec.VIRTIO_GPIO_IRQ_TYPE_LEVEL_LOW, spec.VIRTIO_GPIO_STATUS_OK)
    recording.detached(DEV)
    replaying = ReplayHooks(tmp_path)
    attach(replaying, TPS6286x(), line)
    line.observe("irq_type", spec.VIRTIO_GPIO_IRQ_TYPE_EDGE_FALLING, spec.VIRTIO_GPIO_STATUS_OK)
    (failure,) = map(str, replaying.detached(DEV))
    assert failure.splitlines()[0] == (
        "the driver's GPIO requests differ from the trace: at #0 expected "
        "irq irq_type LEVEL_LOW, got irq irq_type EDGE_FALLING (1 expected, 1 made)"
    )


class Sensor(SimpleSMBusModel):
    level = Input[int]()  # what the chip senses: the test sets it

    def __init__(self) -> None:
        super().__init__({0x00: 0})
        self.level = 0

    def reg_write(self, addr: int, val: int) -> None:
        super().reg_write(addr, val)
        self.level = val  # the model's own set, on the backend's thread

    def power_on_reset(self) -> None:
        """A model method a test calls: its sets are the model's, not the test's."""
        self.level = 0


def test_the_inputs_the_test_sets_are_markers(tmp_path: Path, line: GpioLine) -> None:
    hooks = RecordingHooks(tmp_path, "k")
    model = Sensor()
    bus = attach(hooks, model, line)
    model.level = 7
    transfer(bus, b"\x00\x05")
    model.power_on_reset()  # called by the test, but the set is the model's own
    hooks.detached(DEV)
    model.level = 9  # no longer recorded
    assert type(model) is Sensor  # the model is observed, not changed
    (path,) = tmp_path.rglob("*.rtrace")
    _, events = load_trace(path)
    assert [(e["kind"], e.get("detail")) for e in events] == [
        ("marker", {"attr": "level", "value": 7}),
        ("i2c", None),
    ]


def test_replay_of_the_same_driver_matches(golden: Path, line: GpioLine) -> None:
    hooks = ReplayHooks(golden)
    model = TPS6286x()
    player = attach(hooks, model, line)
    hooks.marker(DEV, "bind", None)
    driver(player)
    line.set(True)  # the test does what it did when recording
    assert hooks.detached(DEV) == []
    # The test's model saw the writes, so its write log and state still hold.
    model.assert_reg_write_once(REG_VOUT1, 0x50)


def test_an_interrupt_the_test_no_longer_raises_fails_the_replay(
    golden: Path, line: GpioLine
) -> None:
    hooks = ReplayHooks(golden)
    driver(attach(hooks, TPS6286x(), line))
    (failure,) = map(str, hooks.detached(DEV))
    assert "interrupt line levels differ" in failure


def test_without_a_model_the_player_raises_the_recorded_interrupts(
    golden: Path, tmp_path: Path, line: GpioLine
) -> None:
    (path,) = golden.rglob("*.rtrace")
    header, events = load_trace(path)
    header.model = ""  # as a trace imported from hardware
    write_trace_atomic(path, header, events)
    hooks = ReplayHooks(golden)
    model = TPS6286x()
    line.set(False)
    player = attach(hooks, model, line)
    driver(player)
    assert line.input is True  # raised again right after transfer 3
    assert hooks.detached(DEV) == []
    assert model.reg_writes(REG_VOUT1) == []  # no model took part


def test_a_changed_write_is_reported_at_register_level(golden: Path, line: GpioLine) -> None:
    hooks = ReplayHooks(golden)
    player = attach(hooks, TPS6286x(), line)
    with pytest.raises(ModelError, match=r"write VOUT1\(0x01\) = 0x51, expected 0x50"):
        driver(player, vout=0x51)
    (failure,) = map(str, hooks.detached(DEV))
    # The headline is the divergence itself; where it was, and what came before, follow.
    assert failure.splitlines()[0] == "write VOUT1(0x01) = 0x51, expected 0x50"
    assert "diverged at event 2 (transfer 2 of 3)" in failure.splitlines()[1]
    assert "read VOUT1(0x01) -> 0x64" in failure  # the events before it
    assert hooks.outcomes[0].consumed == 1


def test_a_divergence_while_unbinding_says_so(golden: Path, line: GpioLine) -> None:
    # A test that fails on its own unbinds early; what the driver's remove() does then is
    # not what the trace has next. The plugin keeps the test's failure as the headline.
    for unbind_first in (False, True):
        hooks = ReplayHooks(golden)
        player = attach(hooks, TPS6286x(), line)
        hooks.marker(DEV, "bind", None)
        transfer(player, bytes([REG_VOUT1]), 1)
        if unbind_first:
            hooks.marker(DEV, "unbind", None)
        with pytest.raises(ReplayFailure) as info:
            transfer(player, bytes([REG_CONTROL, 0x00]))  # not the recorded VOUT1 write
        assert info.value.in_unbind is unbind_first
        hooks.detached(DEV)


def test_a_driver_that_stops_early_fails(golden: Path, line: GpioLine) -> None:
    hooks = ReplayHooks(golden)
    player = attach(hooks, TPS6286x(), line)
    transfer(player, bytes([REG_VOUT1]), 1)
    (failure,) = map(str, hooks.detached(DEV))
    assert "stopped after transfer 1 of 3" in failure
    assert "write VOUT1(0x01) = 0x50" in failure


def test_a_recorded_nack_is_replayed(tmp_path: Path, line: GpioLine) -> None:
    class Refusing(TPS6286x):
        def reg_read(self, addr: int) -> int:
            raise ModelError("no")

    hooks = RecordingHooks(tmp_path, "k")
    bus = attach(hooks, Refusing(), line)
    with pytest.raises(ModelError):
        transfer(bus, bytes([REG_CONTROL]), 1)
    hooks.detached(DEV)
    (path,) = tmp_path.rglob("*.rtrace")
    header, events = load_trace(path)
    header.model = ""  # as from hardware: no model to raise again, the trace answers
    write_trace_atomic(path, header, events)
    replay = ReplayHooks(tmp_path)
    player = attach(replay, TPS6286x(), line)
    assert serve(player, DEV.address, bytes([REG_CONTROL]), 1) == ([(0, b"\x03"), (1, b"")], [])
    assert replay.detached(DEV) == []


def test_a_device_without_a_golden_trace_is_one_clear_error(golden: Path, line: GpioLine) -> None:
    hooks = ReplayHooks(golden)
    with pytest.raises(ReplayError, match=r"no golden trace for .*test_b .*roadtest record"):
        attach(hooks, TPS6286x(), line, test="tests/drivers/regulator/test_x.py::test_b")


def fake_run(staging_trace: bytes | None, status: int) -> Any:
    def run(args: list[str]) -> int:
        (option,) = [a for a in args if a.startswith("--roadtest-record=")]
        staging = Path(option.split("=", 1)[1])
        if staging_trace is not None:
            (staging / "tps62864").mkdir(parents=True)
            (staging / "tps62864" / "test_a.rtrace").write_bytes(staging_trace)
        return status

    return run


def test_record_replaces_golden_traces_only_after_a_passing_run(tmp_path: Path) -> None:
    out = tmp_path / "traces"
    (out / "tps62864").mkdir(parents=True)
    old = out / "tps62864" / "test_a.rtrace"
    header = Header(kernel="k", test=TEST, address=0x48, compatible="ti,tps62864")
    write_trace_atomic(old, header, [])
    before = old.read_bytes()

    assert record([], out, fake_run(b"new", status=1)) == 1
    assert old.read_bytes() == before
    with pytest.raises(KeyboardInterrupt):
        record([], out, lambda args: (_ for _ in ()).throw(KeyboardInterrupt()))
    assert old.read_bytes() == before
    assert [p.name for p in out.iterdir()] == ["tps62864"]  # no staging left behind

    assert record([], out, fake_run(b"new", status=0)) == 0
    assert old.read_bytes() == b"new"


def replay_reads(golden: Path, line: GpioLine, reads: int, tolerate: bool = True) -> ReplayHooks:
    hooks = ReplayHooks(golden, tolerate_repeats=tolerate)
    player = attach(hooks, TPS6286x(), line)
    for _ in range(reads):
        assert transfer(player, bytes([REG_VOUT1]), 1) == [b"\x64"]
    transfer(player, bytes([REG_VOUT1, 0x50]))
    transfer(player, bytes([REG_CONTROL, 0x6B]))
    line.set(True)
    assert hooks.detached(DEV) == [], reads
    return hooks


def test_a_read_repeated_more_often_than_recorded_is_tolerated(
    golden: Path, line: GpioLine
) -> None:
    for reads in (1, 2, 3):  # recorded: one read before the write
        assert replay_reads(golden, line, reads).outcomes[0].tolerated == reads - 1


@pytest.mark.parametrize("reads", [0, 2])
def test_without_the_tolerance_a_repeat_more_or_less_diverges(
    golden: Path, line: GpioLine, reads: int
) -> None:
    # Exact replay (the default, and what simulated time makes possible): the recorded
    # read once, no more, no less.
    hooks = ReplayHooks(golden)
    player = attach(hooks, TPS6286x(), line)
    with pytest.raises(ModelError, match="expected"):
        for _ in range(reads):
            transfer(player, bytes([REG_VOUT1]), 1)
        transfer(player, bytes([REG_VOUT1, 0x50]))


def test_a_recorded_repeat_the_driver_does_not_make_is_tolerated(
    tmp_path: Path, line: GpioLine
) -> None:
    hooks = RecordingHooks(tmp_path, "k")
    bus = attach(hooks, TPS6286x(), line)
    transfer(bus, bytes([REG_VOUT1]), 1)
    driver(bus)  # a second, identical read
    line.set(True)
    hooks.detached(DEV)
    assert replay_reads(tmp_path, line, 1).outcomes[0].tolerated == 1


def test_a_repeated_write_is_not_tolerated(golden: Path, line: GpioLine) -> None:
    hooks = ReplayHooks(golden)
    player = attach(hooks, TPS6286x(), line)
    transfer(player, bytes([REG_VOUT1]), 1)
    transfer(player, bytes([REG_VOUT1, 0x50]))
    with pytest.raises(ModelError, match="expected"):
        transfer(player, bytes([REG_VOUT1, 0x50]))


def test_an_old_trace_of_a_failed_transfer_still_replays(tmp_path: Path, line: GpioLine) -> None:
    # Recorded before the recorder observed the wire: a refused write, its flags 0,
    # without the read that the bus skipped after it.
    header = Header(kernel="k", test=TEST, address=0x48, compatible="ti,tps62864", regbytes=1)
    header.extra["device"] = DEV.origin
    old = [{"flags": 0, "len": 2, "data": b"\x10\x01", "status": 1}]
    ok = [{"flags": 0, "len": 2, "data": bytes([REG_VOUT1, 0x50]), "status": 0}]
    (tmp_path / "tps62864").mkdir()
    write_trace_atomic(
        tmp_path / "tps62864" / "test_a-p.rtrace",
        header,
        [{"kind": "i2c", "msgs": old}, {"kind": "i2c", "msgs": ok}],
    )
    hooks = ReplayHooks(tmp_path)
    bus = attach(hooks, TPS6286x(), line)
    assert serve(bus, DEV.address, b"\x10\x01", 1) == ([(1, b"\x10\x01"), (1, b"")], [])
    assert transfer(bus, bytes([REG_VOUT1, 0x50])) == []
    assert hooks.detached(DEV) == []


# A chip of 16-bit commands (as the SHT3x): the command in a write of its own, the result
# read in the next transfer, after the conversion time.
MEASURE, RESULT = b"\x24\x00", b"\x66\x66\x93\x80\x00\xa2"


class Silent(I2CModel):
    """A shadow model that takes any transfer: the trace alone answers."""

    def write(self, data: bytes) -> None:
        pass

    def read(self, length: int) -> bytes:
        return bytes(length)


def command_trace(tmp_path: Path, measurements: int, then: bytes | None = None) -> Path:
    """A golden trace of `measurements` command reads, then a write of `then`."""
    header = Header(kernel="k", test=TEST, address=0x48, compatible="ti,tps62864")
    header.extra["device"] = DEV.origin
    command = [{"flags": 0, "len": 2, "data": MEASURE, "status": 0}]
    result = [{"flags": 2, "len": 6, "data": RESULT, "status": 0}]
    events: list[dict[str, Any]] = []
    for _ in range(measurements):
        events.append({"kind": "i2c", "msgs": command})
        events.append({"kind": "marker", "what": "inject", "value": 1})
        events.append({"kind": "i2c", "msgs": result})
    if then is not None:
        events.append({"kind": "i2c", "msgs": [{"flags": 0, "len": len(then), "data": then}]})
        events[-1]["msgs"][0]["status"] = 0
    (tmp_path / "tps62864").mkdir(exist_ok=True)
    write_trace_atomic(tmp_path / "tps62864" / "test_a-p.rtrace", header, events)
    return tmp_path


def measure(bus: I2CBus, times: int) -> None:
    for _ in range(times):
        assert transfer(bus, MEASURE) == []
        assert transfer(bus, 6) == [RESULT]


@pytest.mark.parametrize(("recorded", "made"), [(1, 2), (1, 3), (2, 1), (3, 1), (2, 2)])
@pytest.mark.parametrize("then", [b"\x30\x41", None])
def test_a_command_read_made_more_or_less_often_than_recorded_is_tolerated(
    tmp_path: Path, line: GpioLine, recorded: int, made: int, then: bytes | None
) -> None:
    # Under a real clock a driver that caches a measurement for a while measures again
    # when more time went by: the command and the read of its result, once more.
    hooks = ReplayHooks(command_trace(tmp_path, recorded, then), tolerate_repeats=True)
    bus = attach(hooks, Silent(), line)
    measure(bus, made)
    if then is not None:
        assert transfer(bus, then) == []
    assert hooks.detached(DEV) == []
    assert hooks.outcomes[0].tolerated == abs(recorded - made)


def test_without_the_tolerance_a_second_command_read_diverges(
    tmp_path: Path, line: GpioLine
) -> None:
    hooks = ReplayHooks(command_trace(tmp_path, 1), tolerate_repeats=False)
    bus = attach(hooks, Silent(), line)
    measure(bus, 1)
    with pytest.raises(ModelError, match="no more transfers"):
        transfer(bus, MEASURE)


def test_a_repeat_of_a_command_read_that_reads_otherwise_diverges(
    tmp_path: Path, line: GpioLine
) -> None:
    hooks = ReplayHooks(command_trace(tmp_path, 1), tolerate_repeats=True)
    bus = attach(hooks, Silent(), line)
    measure(bus, 1)
    assert transfer(bus, MEASURE) == []  # could be a repeat
    with pytest.raises(ModelError, match="in a repeat of the last read"):
        transfer(bus, 3)


def test_a_repeat_cut_off_after_its_command_fails_the_replay(
    tmp_path: Path, line: GpioLine
) -> None:
    hooks = ReplayHooks(command_trace(tmp_path, 1), tolerate_repeats=True)
    bus = attach(hooks, Silent(), line)
    measure(bus, 1)
    transfer(bus, MEASURE)
    (failure,) = hooks.detached(DEV)
    assert "in the middle of a repeat of its last read" in str(failure)


def test_a_longer_write_before_a_read_is_no_command_read(tmp_path: Path, line: GpioLine) -> None:
    # Three bytes written is a register write, not a command or an address: repeating it
    # is the driver's doing, and diverges even with the tolerance.
    header = Header(kernel="k", test=TEST, address=0x48, compatible="ti,tps62864")
    header.extra["device"] = DEV.origin
    write = [{"flags": 0, "len": 3, "data": b"\x01\x02\x03", "status": 0}]
    read = [{"flags": 2, "len": 1, "data": b"\x07", "status": 0}]
    (tmp_path / "tps62864").mkdir()
    write_trace_atomic(
        tmp_path / "tps62864" / "test_a-p.rtrace",
        header,
        [{"kind": "i2c", "msgs": write}, {"kind": "i2c", "msgs": read}],
    )
    hooks = ReplayHooks(tmp_path, tolerate_repeats=True)
    bus = attach(hooks, Silent(), line)
    transfer(bus, b"\x01\x02\x03")
    assert transfer(bus, 1) == [b"\x07"]
    assert transfer(bus, 1) == [b"\x07"]  # the read alone, once more: tolerated
    with pytest.raises(ModelError, match="no more transfers"):
        transfer(bus, b"\x01\x02\x03")


def test_a_scripted_failure_replays_from_its_trace(tmp_path: Path, line: GpioLine) -> None:
    # guest.device_events([Pass(1), TransferFails(1)]): recorded, the second transfer's
    # read fails after its pointer write; replayed, the script lets the transfer reach the
    # trace whole, which answers it as it failed.
    script: list[DeviceEvent] = [Pass(1), TransferFails(1)]
    recording = RecordingHooks(tmp_path, "k")
    bus = attach(EventScriptHooks(recording, script), TPS6286x(), line)
    assert transfer(bus, bytes([REG_VOUT1]), 1) == [b"\x64"]
    failed, _ = serve(bus, DEV.address, bytes([REG_VOUT1]), 1)
    assert [status for status, _ in failed] == [0, 1]
    assert recording.detached(DEV) == []

    hooks = ReplayHooks(tmp_path)
    player = attach(EventScriptHooks(hooks, script), TPS6286x(), line)
    assert transfer(player, bytes([REG_VOUT1]), 1) == [b"\x64"]
    again, _ = serve(player, DEV.address, bytes([REG_VOUT1]), 1)
    assert [status for status, _ in again] == [0, 1]
    assert hooks.detached(DEV) == []


def test_a_replayed_model_sees_only_what_reached_it_when_recording(
    tmp_path: Path, line: GpioLine
) -> None:
    # A write the script NACKed at the address never reached the chip: replayed, the
    # test's model must not take it either (a test asserts what the model saw).
    script: list[DeviceEvent] = [TransferFails(0)]
    recording = RecordingHooks(tmp_path, "k")
    recorded_model = TPS6286x()
    bus = attach(EventScriptHooks(recording, script), recorded_model, line)
    failed, _ = serve(bus, DEV.address, bytes([REG_VOUT1, 0x50]))
    assert [status for status, _ in failed] == [1]
    assert recording.detached(DEV) == []

    hooks = ReplayHooks(tmp_path)
    shadow = TPS6286x()
    player = attach(EventScriptHooks(hooks, script), shadow, line)
    again, _ = serve(player, DEV.address, bytes([REG_VOUT1, 0x50]))
    assert [status for status, _ in again] == [1]
    assert hooks.detached(DEV) == []
    assert shadow.regs[REG_VOUT1] == recorded_model.regs[REG_VOUT1] == 0x64


LEVEL_LOW = spec.VIRTIO_GPIO_IRQ_TYPE_LEVEL_LOW
NONE = spec.VIRTIO_GPIO_IRQ_TYPE_NONE


def gpio_requests(unmasks: list[int]) -> list[tuple[str, str, int]]:
    """A driver that sets its line's trigger, unmasks it `unmasks[0]` times, ..., then
    turns the trigger off at unbind and unmasks `unmasks[1]` times more."""
    first, last = unmasks
    return [
        ("irq", "irq_type", LEVEL_LOW),
        *[("irq", "unmask", 0)] * first,
        ("irq", "irq_type", NONE),
        *[("irq", "unmask", 0)] * last,
    ]


@pytest.mark.parametrize(
    ("recorded", "made", "differences"),
    [
        ([3, 0], [3, 0], 0),
        ([3, 0], [4, 0], 1),  # the interrupt thread ran once more before unbind
        ([3, 1], [2, 0], 2),  # once less, in each stretch
        ([3, 0], [5, 0], None),  # twice more is the driver's doing
        ([3, 0], [3, 0, 0], None),  # another request
    ],
)
def test_unmasks_may_differ_by_one_between_the_same_requests(
    recorded: list[int], made: list[int], differences: int | None
) -> None:
    actual = gpio_requests(made[:2])
    if len(made) > 2:
        actual.append(("irq", "irq_type", LEVEL_LOW))
    assert unmask_differences(gpio_requests(recorded), actual) == differences


def test_unmasks_of_another_line_or_other_values_are_not_unmasks() -> None:
    recorded = gpio_requests([1, 0])
    assert unmask_differences(recorded, [("reset", "unmask", 0), *recorded]) is None
    changed = [(n, op, LEVEL_LOW if op == "irq_type" else v) for n, op, v in recorded]
    assert unmask_differences(recorded, changed) is None


def test_an_extra_unmask_is_tolerated_only_when_asked(tmp_path: Path, line: GpioLine) -> None:
    ok = spec.VIRTIO_GPIO_STATUS_OK
    recording = RecordingHooks(tmp_path, "k")
    attach(recording, TPS6286x(), line)
    line.observe("irq_type", LEVEL_LOW, ok)
    line.observe("unmask", 0, ok)
    recording.detached(DEV)
    for tolerate in (False, True):
        replaying = ReplayHooks(tmp_path, tolerate_repeats=tolerate)
        attach(replaying, TPS6286x(), line)
        line.observe("irq_type", LEVEL_LOW, ok)
        line.observe("unmask", 0, ok)
        line.observe("unmask", 0, ok)  # once more: the real clock's doing
        failures = replaying.detached(DEV)
        if tolerate:
            assert failures == []
            assert replaying.outcomes[0].tolerated_unmasks == 1
        else:
            (failure,) = map(str, failures)
            assert "GPIO requests differ" in failure
