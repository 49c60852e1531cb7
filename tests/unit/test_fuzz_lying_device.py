"""The hostile device: lies, failed transfers and interrupts by plan; the honest plan is
the model itself; the model's refusals are NACKs, never reported faults."""

from __future__ import annotations

from helpers import RecordingLine, serve
from hypothesis import given, settings

from roadtest.backend.i2c import I2CBus
from roadtest.fuzz.lying_device import HostileHandler, HostilePlan, plans
from roadtest.models.base import SimpleSMBusModel
from roadtest.models.opt3001 import OPT3001
from roadtest.trace.i2c import VIRTIO_I2C_MSG_ERR, VIRTIO_I2C_MSG_OK

ADDR = 0x40
OK, ERR = VIRTIO_I2C_MSG_OK, VIRTIO_I2C_MSG_ERR


def bus_with(
    plan: HostilePlan, irq: RecordingLine | None = None
) -> tuple[I2CBus, SimpleSMBusModel]:
    model = SimpleSMBusModel({0x00: 0x1234, 0x01: 0xABCD}, regbytes=2, byteorder="big")
    bus = I2CBus()
    bus.attach(ADDR, HostileHandler(model, plan, irq))
    return bus, model


def test_the_honest_plan_answers_as_the_model() -> None:
    bus, _ = bus_with(HostilePlan())
    assert serve(bus, ADDR, b"\x00", 2) == ([(OK, b"\x00"), (OK, b"\x12\x34")], [])


def test_a_lie_replaces_one_read_with_a_value_of_the_register_width_in_its_byte_order() -> None:
    bus, _ = bus_with(HostilePlan(lies=((1, 0x1_8001),)))  # wider than 16 bits: cut
    assert serve(bus, ADDR, b"\x00", 2)[0][1] == (OK, b"\x12\x34")  # read #0: honest
    assert serve(bus, ADDR, b"\x00", 2)[0][1] == (OK, b"\x80\x01")  # read #1: the lie
    assert serve(bus, ADDR, b"\x00", 4)[0][1] == (OK, b"\x12\x34\xab\xcd")  # read #2


def test_a_lie_covers_every_register_of_a_longer_read() -> None:
    bus, _ = bus_with(HostilePlan(lies=((0, 0xBEEF),)))
    assert serve(bus, ADDR, b"\x00", 3)[0][1] == (OK, b"\xbe\xef\xbe")


def test_a_failed_transfer_fails_from_its_message_on_and_the_model_sees_the_ones_before() -> None:
    bus, model = bus_with(HostilePlan(faults=((0, 1),)))
    statuses, faults = serve(bus, ADDR, b"\x01\x00\x07", 2)
    assert [s for s, _ in statuses] == [OK, ERR]
    assert faults == []  # a planned failure is not the model's fault
    assert model.all_reg_writes() == [(0x01, 0x0007)]
    assert serve(bus, ADDR, b"\x00", 2)[0] == [(OK, b"\x00"), (OK, b"\x12\x34")]  # #1: fine


def test_a_failure_at_the_first_message_keeps_the_whole_transfer_from_the_model() -> None:
    bus, model = bus_with(HostilePlan(faults=((0, 0),)))
    statuses, _ = serve(bus, ADDR, b"\x01\x00\x07")
    assert statuses == [(ERR, b"\x01\x00\x07")]
    assert model.all_reg_writes() == []


def test_what_the_model_refuses_is_a_nack_not_a_reported_fault() -> None:
    bus, _ = bus_with(HostilePlan())
    statuses, faults = serve(bus, ADDR, b"\x05", 2)  # register 0x05 does not exist
    assert [s for s, _ in statuses] == [OK, ERR]
    assert faults == []


def test_an_interrupt_toggles_the_line_after_its_transfer() -> None:
    line = RecordingLine()
    line.set(False)
    bus, _ = bus_with(HostilePlan(interrupts=(1,)), line)
    serve(bus, ADDR, b"\x00", 2)
    assert line.levels == [False]
    serve(bus, ADDR, b"\x00", 2)
    assert line.levels == [False, True]


@settings(max_examples=200, database=None)
@given(plan=plans())
def test_plans_name_distinct_reads_and_transfers_and_shrink_to_honesty(plan: HostilePlan) -> None:
    assert len({n for n, _ in plan.lies}) == len(plan.lies)
    assert len({n for n, _ in plan.faults}) == len(plan.faults)
    assert all(0 <= value < 1 << 32 for _, value in plan.lies)


def test_the_simplest_plan_is_the_honest_device() -> None:
    from hypothesis import find

    assert find(plans(), lambda plan: True) == HostilePlan()


def opt3001_bus(plan: HostilePlan) -> I2CBus:
    bus = I2CBus()
    bus.attach(ADDR, HostileHandler(OPT3001(), plan))
    return bus


def test_a_register_lie_answers_for_that_register_and_that_read_of_it() -> None:
    # OPT3001 (SBOS681B): 16-bit big-endian registers; DEVICE_ID 0x7f reads 0x3001.
    bus = opt3001_bus(HostilePlan(register_lies=((0x7F, 1, 0xBEEF),)))
    assert serve(bus, ADDR, b"\x7f", 2)[0][1] == (OK, b"\x30\x01")  # its read #0
    assert serve(bus, ADDR, b"\x7e", 2)[0][1] == (OK, b"\x54\x49")  # another register
    assert serve(bus, ADDR, b"\x7f", 2)[0][1] == (OK, b"\xbe\xef")  # its read #1: the lie
    assert serve(bus, ADDR, b"\x7f", 2)[0][1] == (OK, b"\x30\x01")


@settings(max_examples=200, database=None)
@given(plan=plans(OPT3001.register_map))
def test_a_mapped_models_lies_name_its_readable_registers_with_values_that_fit(
    plan: HostilePlan,
) -> None:
    assert plan.lies == ()
    for address, _, value in plan.register_lies:
        register = OPT3001.register_map[address]
        assert register.readable
        assert 0 <= value < 1 << 16
