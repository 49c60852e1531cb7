"""Which drivers a `roadtest sweep DRIVER ...` command line names (campaign.select), and the
reproducer a finding keeps (runner.reproducer / plan_of)."""

from __future__ import annotations

import pytest

from roadtest.errors import UsageError
from roadtest.sweep.campaign import select
from roadtest.sweep.constants import Mined
from roadtest.sweep.device import RegisterPlan
from roadtest.sweep.devicetree import NewDevice
from roadtest.sweep.inventory import Driver
from roadtest.sweep.runner import Plan, plan_of, reproducer


def driver(source: str, module: str) -> Driver:
    subsystem = source.split("/")[1]
    return Driver(source, subsystem, f"drivers/{subsystem}/{module}.ko", "X", (), (), ())


DRIVERS = [
    driver("drivers/rtc/rtc-rx8025.c", "rtc-rx8025"),
    driver("drivers/iio/light/ltr501.c", "ltr501"),
    driver("drivers/iio/light/opt3001.c", "opt3001"),
    driver("drivers/iio/adc/ti-ads1119.c", "ti-ads1119"),
]


def sources(found: list[Driver]) -> list[str]:
    return [d.source for d in found]


def test_nothing_named_is_everything() -> None:
    assert select(DRIVERS, []) == DRIVERS


def test_a_subsystem_a_module_a_file_and_a_directory() -> None:
    assert sources(select(DRIVERS, ["rtc"])) == ["drivers/rtc/rtc-rx8025.c"]
    assert sources(select(DRIVERS, ["ti_ads1119"])) == ["drivers/iio/adc/ti-ads1119.c"]
    assert sources(select(DRIVERS, ["./drivers/iio/light/ltr501.c"])) == [
        "drivers/iio/light/ltr501.c"
    ]
    assert sources(select(DRIVERS, ["drivers/iio/light/"])) == [
        "drivers/iio/light/ltr501.c",
        "drivers/iio/light/opt3001.c",
    ]


def test_names_keep_the_inventorys_order_once_each() -> None:
    picked = select(DRIVERS, ["opt3001", "iio", "rtc-rx8025"])
    assert sources(picked) == sources(DRIVERS)


@pytest.mark.parametrize("name", ["drivers/iio/light/ltr50", "nosuch", "drivers/rtcx"])
def test_a_name_that_matches_nothing_is_a_usage_error(name: str) -> None:
    with pytest.raises(UsageError, match="sweep --list"):
        select(DRIVERS, [name])


def test_a_reproducer_gives_back_its_driver_and_plan() -> None:
    one = Plan(DRIVERS[0], NewDevice("rx8025"), Mined())
    plan = RegisterPlan(((0x0E, 0x20), (0x0F, 0x58)), default=0x11, block_length=4)
    assert plan_of(reproducer(one, plan)) == ("drivers/rtc/rtc-rx8025.c", plan)
