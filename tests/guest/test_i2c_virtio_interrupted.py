"""The virtio-i2c transport (drivers/i2c/busses/i2c-virtio.c) when a signal reaches a process
whose transfer waits for the device: nothing the device still holds is freed, and the next
transfer works.

Since a663b3c47ab1 ("i2c: virtio: Avoid hang by using interruptible completion wait",
6.12.41 in 6.12.y) the driver stopped waiting at the signal and freed the requests; the
device's answer then completed a freed request (KASAN: slab-use-after-free in
complete_with_flags, from virtio_i2c_msg_done), found by `roadtest sweep` while adt7470
was bound. kernel-patches/i2c/0001 fixes it.

The transfer is a process's I2C_RDWR on /dev/i2c-N, to a device that holds its answer back
(data/i2c_virtio_interrupted.py, the test itself). It runs in a pytest run of its own on
the sanitizer kernel: KASAN sees the freed request at once (its quarantine keeps freed
memory from being reused meanwhile), where the main kernel's slab poisoning would catch it
only if nothing took the memory first.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from scaffold import run

GUEST_TEST = Path(__file__).parent / "data" / "i2c_virtio_interrupted.py"


def test_a_signal_during_a_transfer_frees_nothing_the_device_holds(
    pytester: pytest.Pytester,
) -> None:
    result = run(pytester, GUEST_TEST.read_text(), "--roadtest-sanitizers", header="")
    out = result.stdout.str()
    assert "KASAN" not in out, out
    result.assert_outcomes(passed=1)
