"""The kernel versions a test holds for: range strings and kernel releases."""

from __future__ import annotations

import pytest

from roadtest.kernel.version_range import KernelRange, RangeError, release_version


@pytest.mark.parametrize(
    ("spec", "inside", "outside"),
    [
        (">=6.9", [(6, 9, 0), (6, 12, 118), (7, 0, 0)], [(6, 8, 12), (6, 1, 192)]),
        ("<6.9", [(6, 8, 12), (6, 1, 192), (5, 15, 0)], [(6, 9, 0), (6, 12, 0)]),
        (">=6.1, <6.9", [(6, 1, 0), (6, 8, 99)], [(5, 19, 0), (6, 9, 0)]),
        (">6.1.100", [(6, 1, 101), (6, 2, 0)], [(6, 1, 100), (6, 1, 0)]),
        ("<=6.12", [(6, 12, 0)], [(6, 12, 1)]),
    ],
)
def test_a_range_holds_for_the_versions_it_names(
    spec: str, inside: list[tuple[int, int, int]], outside: list[tuple[int, int, int]]
) -> None:
    kernel_range = KernelRange.parse(spec)
    assert all(v in kernel_range for v in inside)
    assert not any(v in kernel_range for v in outside)


@pytest.mark.parametrize("spec", ["", "6.9", "=>6.9", ">=6", ">=6.9,", ">=v6.9", "~6.9", 6.9, None])
def test_a_range_that_is_not_one_says_why_in_one_line(spec: object) -> None:
    with pytest.raises(RangeError) as raised:
        KernelRange.parse(spec)
    message = str(raised.value)
    assert "\n" not in message and "is not a" in message and "'>=6.9'" in message


def test_a_release_names_its_version() -> None:
    assert release_version("6.1.192-roadtest") == (6, 1, 192)
    assert release_version("6.12.118-roadtest-fuzz") == (6, 12, 118)
    assert release_version("6.13-rc1") == (6, 13, 0)
    with pytest.raises(ValueError):
        release_version("roadtest")
