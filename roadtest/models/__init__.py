"""Models of hardware: base classes here, chip models in their own modules."""

from roadtest.models.base import I2CModel, Input, ModelError, SimpleSMBusModel, SMBusModel

__all__ = ["I2CModel", "Input", "ModelError", "SMBusModel", "SimpleSMBusModel"]
