"""What a test's headline says when the backend recorded errors while serving the driver."""

from __future__ import annotations

from roadtest.backend.device import BackendError
from roadtest.models.base import ModelError
from roadtest.pytest_plugin.verdicts import ModelFault, model_outcome


def test_a_model_error_blames_the_model() -> None:
    error = BackendError("model", "i2c 0x48 TMP102.read(2)", ModelError("TMP102: no"))
    outcome = model_outcome([error])
    assert isinstance(outcome, ModelFault)
    headline, blame, detail = str(outcome).splitlines()
    assert headline == "i2c 0x48 TMP102.read(2): TMP102: no"
    assert blame == "a model raised while serving the driver:"


def test_a_virtio_protocol_error_does_not_blame_a_model() -> None:
    # A malformed virtio request is the guest's virtio driver's (or roadtest's) doing: a
    # user told "a model raised" looks for a bug in a model that never ran.
    error = BackendError("device", "i2c request", ValueError("malformed request: 0 readable"))
    outcome = model_outcome([error, error])
    assert outcome is not None
    lines = str(outcome).splitlines()
    assert (
        lines[0]
        == "i2c request: ValueError: malformed request: 0 readable (and 1 more error, below)"
    )
    assert "a model raised" not in str(outcome)
    assert lines[1].startswith("the virtio backend could not serve what the guest sent")
