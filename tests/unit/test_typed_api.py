"""The test API carries a device's model class to `dev.model`.

The assert_type calls are checked by mypy (`make lint` runs it over tests/), and are
no-ops at run time: these tests pin the types a driver test relies on.
"""

from __future__ import annotations

from typing import assert_type

from roadtest.models.base import I2CModel
from roadtest.models.opt3001 import OPT3001
from roadtest.testing import BoundDevice, I2CDevice, RoadtestSession

SENSOR = I2CDevice(compatible="ti,opt3001", model=OPT3001, dts="")


class Dim(OPT3001):
    """A test's own variant of a model."""


def test_a_declaration_has_its_models_class() -> None:
    assert_type(SENSOR, I2CDevice[OPT3001])
    assert isinstance(SENSOR.model(), OPT3001)
    # A declaration of a model class is one of its base class too (it only makes models).
    declared: I2CDevice[I2CModel] = SENSOR
    assert declared is SENSOR


def typed_uses(guest: RoadtestSession) -> None:
    """Type-checked, never run: what a driver test writes."""
    with guest.bound(SENSOR) as dev:
        assert_type(dev, BoundDevice[OPT3001])
        dev.model.result = 0x3456  # an OPT3001 attribute: no cast, no isinstance
    with guest.bound(SENSOR, model=Dim()) as dim:
        assert_type(dim.model, OPT3001)
    attached = guest.attach(SENSOR)
    assert_type(attached.model, OPT3001)


def test_the_typed_uses_are_only_type_checked() -> None:
    assert callable(typed_uses)
