"""Models of hardware: base classes here, chip models in their own modules."""

from roadtest.models.base import I2CModel, Input, ModelError, SimpleSMBusModel, SMBusModel
from roadtest.models.interrupt import Drive, InterruptOutput, InterruptPin, Polarity, Wire

__all__ = [
    "Drive",
    "I2CModel",
    "Input",
    "InterruptOutput",
    "InterruptPin",
    "ModelError",
    "Polarity",
    "SMBusModel",
    "SimpleSMBusModel",
    "Wire",
]
