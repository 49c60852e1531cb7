"""A device's I2C address and GPIO lines depend on its own test module, not on what else a
run collected: a trace recorded from one test file has the header (address) and GPIO line
numbers of one recorded with the whole suite, so golden traces do not churn."""

from __future__ import annotations

from collections.abc import Sequence

from roadtest.models.base import SimpleSMBusModel
from roadtest.testing.devices import Device, I2CDevice, Layout, Placement
from roadtest.testing.session import pack

# The I2C specification reserves 0x00-0x07 and 0x78-0x7f.
FIRST_FREE, LAST_FREE = 0x08, 0x77


def sensor(origin: str, gpios: tuple[str, ...] = ()) -> I2CDevice[SimpleSMBusModel]:
    name = origin.rpartition(".")[2].lower()
    return I2CDevice(
        compatible="acme,sensor",
        model=lambda: SimpleSMBusModel(regs={0: 0}),
        dts=f'{name}@$addr$ {{ compatible = "acme,sensor"; reg = <0x$addr$>; }};',
        gpios=gpios,
        origin=origin,
    )


def placement(groups: Sequence[Sequence[Device]], device: Device) -> Placement:
    tree = next(t for t in pack(groups) if id(device) in t.layout.placements)
    return tree.layout.placements[id(device)]


def test_a_device_keeps_its_address_and_lines_whatever_else_is_collected() -> None:
    mine = [sensor("test_mine.SENSOR", ("irq",)), sensor("test_mine.OTHER")]
    alone = [placement([mine], d) for d in mine]
    unrelated = [[sensor(f"test_other{i}.DEV{j}", ("irq",)) for j in range(3)] for i in range(8)]
    for before in (unrelated[:1], unrelated[:4], unrelated):
        for groups in ([*before, mine], [mine, *before]):
            assert [placement(groups, d) for d in mine] == alone, len(groups)
    for place in alone:
        assert place.addr is not None and FIRST_FREE <= place.addr <= LAST_FREE


def test_devices_of_one_module_never_share_an_address() -> None:
    many = [sensor(f"test_many.DEV{i}") for i in range(LAST_FREE - FIRST_FREE + 1)]
    layout = Layout(many)
    assert sorted(layout.placement(d).addr or 0 for d in many) == list(
        range(FIRST_FREE, LAST_FREE + 1)
    )


def test_modules_whose_devices_clash_get_separate_trees() -> None:
    # Both modules' only device is named SENSOR in a module that derives the same slot...
    a = sensor("test_a.SENSOR")
    clash = next(
        b
        for i in range(10_000)
        for b in [sensor(f"test_b{i}.SENSOR")]
        if Layout([b]).placement(b).addr == Layout([a]).placement(a).addr
    )
    trees = pack([[a], [clash]])
    # ...so they cannot share a tree, and each keeps the address it has alone.
    assert len(trees) == 2
    assert trees[1].layout.placement(clash).addr == trees[0].layout.placement(a).addr
