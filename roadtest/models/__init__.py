"""Models of hardware: base classes here, chip models in their own modules."""

from roadtest.models.base import (
    ChipModel,
    I2CModel,
    Input,
    ModelError,
    SimpleSMBusModel,
    SMBusModel,
    SPIModel,
)
from roadtest.models.interrupt import Drive, InterruptOutput, InterruptPin, Polarity, Wire

__all__ = [
    "ChipModel",
    "Drive",
    "I2CModel",
    "Input",
    "InterruptOutput",
    "InterruptPin",
    "ModelError",
    "Polarity",
    "SMBusModel",
    "SPIModel",
    "SimpleSMBusModel",
    "Wire",
]
