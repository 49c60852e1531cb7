"""How fast the fuzz strategies draw: milliseconds per example, Hypothesis's own cost
included, with a test body that does nothing (no guest).

A property's examples per second can be no higher than this allows. The floor is
Hypothesis's own integers strategy; then draws from the OPT3001 map: whole RESULT
values, CONFIGURATION composed from its fields, and device-event scripts. Prints
the median of 5 runs of 300 examples each.
"""

from __future__ import annotations

import statistics
import time
from typing import Any

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from roadtest.fuzz import device_events, field_values, register_values
from roadtest.models.opt3001 import OPT3001

EXAMPLES = 300
RUNS = 5


def ms_per_example(strategy: st.SearchStrategy[Any]) -> float:
    @settings(
        max_examples=EXAMPLES,
        database=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(strategy)
    def body(value: object) -> None:
        pass

    start = time.perf_counter()
    body()
    return (time.perf_counter() - start) * 1000 / EXAMPLES


def main() -> None:
    regmap = OPT3001.register_map
    for name, strategy in [
        ("st.integers(0, 0xFFFF), the floor", st.integers(0, 0xFFFF)),
        ("register_values(RESULT)", register_values(regmap["RESULT"])),
        ("field_values(CONFIGURATION)", field_values(regmap["CONFIGURATION"])),
        ("device_events(OPT3001, lines=('irq',))", device_events(OPT3001, lines=("irq",))),
    ]:
        median = statistics.median(ms_per_example(strategy) for _ in range(RUNS))
        print(f"{name}: {median:.2f} ms per example (median of {RUNS} x {EXAMPLES})")


if __name__ == "__main__":
    main()
