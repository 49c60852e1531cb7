"""UML keeps each process's FPU/SSE/AVX state across context switches.

This is what kernel-patches/um/0001 is about: UML saves and restores the host's
XSTATE for every guest process. Two guest processes interleave float and
vector work with sched_yield(); the results must be the host's, and vector
registers live across the yield must come back unchanged.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from roadtest.testing import RoadtestSession

SOURCE = Path(__file__).with_name("fpstress.c")


def host_supports_avx2() -> bool:
    return "avx2" in Path("/proc/cpuinfo").read_text()


@pytest.fixture(scope="module")
def fpstress(roadtest_session: RoadtestSession) -> Path:
    if not host_supports_avx2():
        pytest.skip("the host CPU has no AVX2")
    # The guest's /tmp is its own tmpfs; the session's work dir is shared with the host.
    binary = roadtest_session.workdir / "fpstress"
    subprocess.run(["gcc", "-O2", "-mavx2", "-o", str(binary), str(SOURCE), "-lm"], check=True)
    return binary


def test_fp_and_vector_state_survive_context_switches(
    guest: RoadtestSession, fpstress: Path
) -> None:
    host = subprocess.run([str(fpstress)], capture_output=True, check=True)
    rc, out, err = guest.agent.run([str(fpstress)], timeout=120)
    assert rc == 0, err.decode()
    guest_lines = sorted(out.decode().splitlines())
    assert all("ymm_mismatches=0" in line for line in guest_lines), guest_lines
    assert guest_lines == sorted(host.stdout.decode().splitlines())
