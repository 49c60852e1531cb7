"""Config fragments: discovery order, parsing, and the check that olddefconfig kept them."""

from __future__ import annotations

from pathlib import Path

import pytest

from roadtest.errors import RoadtestError
from roadtest.kernel import config_fragments
from roadtest.kernel.config import check_config, parse_config, parse_fragment, requested_options


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    write(tmp_path / "kernel-patches/base.config", "CONFIG_MODULES=y\n")
    return tmp_path


def test_base_fragment_first_then_tests_sorted_by_path(repo: Path) -> None:
    write(repo / "tests/drivers/rtc/x.config", "")
    write(repo / "tests/drivers/iio/light/opt3001.config", "")
    write(repo / "tests/drivers/iio/a.config", "")
    write(repo / "tests/guest/fp.config", "")
    write(repo / "tests/drivers/iio/light/not-a-fragment.txt", "")
    names = [p.relative_to(repo).as_posix() for p in config_fragments(repo)]
    assert names == [
        "kernel-patches/base.config",
        "tests/drivers/iio/a.config",
        "tests/drivers/iio/light/opt3001.config",
        "tests/drivers/rtc/x.config",
        "tests/guest/fp.config",
    ]


def test_missing_base_fragment_is_a_user_error(tmp_path: Path) -> None:
    with pytest.raises(RoadtestError, match="base.config not found"):
        config_fragments(tmp_path)


def test_fragment_values(tmp_path: Path) -> None:
    frag = write(
        tmp_path / "f.config",
        '# a comment\n\nCONFIG_A=y\nCONFIG_B=m\nCONFIG_C="str ing"\nCONFIG_D=0x10\n'
        "# CONFIG_E is not set\nCONFIG_F=n\n",
    )
    assert parse_fragment(frag) == {
        "CONFIG_A": "y",
        "CONFIG_B": "m",
        "CONFIG_C": '"str ing"',
        "CONFIG_D": "0x10",
        "CONFIG_E": None,
        "CONFIG_F": None,
    }


def test_malformed_fragment_line_names_file_and_line(repo: Path) -> None:
    frag = write(repo / "tests/x/bad.config", "CONFIG_A=y\nOPT3001=m\n")
    with pytest.raises(RoadtestError) as err:
        parse_fragment(frag, repo)
    message = str(err.value)
    assert "line 2" in message and "tests/x/bad.config" in message and "OPT3001=m" in message
    assert "\n" not in message


def test_later_fragment_wins(tmp_path: Path) -> None:
    a = write(tmp_path / "a.config", "CONFIG_X=y\nCONFIG_Y=y\n")
    b = write(tmp_path / "b.config", "CONFIG_X=m\n")
    requests = requested_options([a, b])
    assert (requests["CONFIG_X"].value, requests["CONFIG_X"].fragment) == ("m", b)
    assert requests["CONFIG_Y"].fragment == a


def test_final_config_parsing_ignores_comments() -> None:
    text = "#\n# Automatically generated file; DO NOT EDIT.\n#\nCONFIG_A=y\n# CONFIG_B is not set\n"
    assert parse_config(text) == {"CONFIG_A": "y", "CONFIG_B": None}


def test_every_dropped_option_is_named_with_its_fragment(repo: Path) -> None:
    base = write(repo / "kernel-patches/base.config", "CONFIG_I2C=y\n# CONFIG_NET is not set\n")
    frag = write(
        repo / "tests/drivers/iio/light/opt3001.config", "CONFIG_IIO=y\nCONFIG_OPT3001=m\n"
    )
    final = write(
        repo / "build/.config", "CONFIG_IIO=y\nCONFIG_NET=y\n# CONFIG_OPT3001 is not set\n"
    )
    with pytest.raises(RoadtestError) as err:
        check_config(final, [base, frag], repo)
    message = str(err.value)
    assert message.startswith("config options dropped by olddefconfig: ")
    assert "CONFIG_OPT3001=m (tests/drivers/iio/light/opt3001.config, now not set)" in message
    assert "CONFIG_I2C=y (kernel-patches/base.config, now not set)" in message
    assert "CONFIG_NET is not set (kernel-patches/base.config, now y)" in message
    assert "CONFIG_IIO" not in message
    assert message.endswith("check their dependencies")
    assert "\n" not in message


def test_only_the_winning_value_is_checked(tmp_path: Path) -> None:
    a = write(tmp_path / "a.config", "CONFIG_X=y\n")
    b = write(tmp_path / "b.config", "CONFIG_X=m\n")
    check_config(write(tmp_path / "ok", "CONFIG_X=m\n"), [a, b])
    with pytest.raises(RoadtestError, match=r"CONFIG_X=m \(.*b\.config, now y\)"):
        check_config(write(tmp_path / "bad", "CONFIG_X=y\n"), [a, b])


def test_not_set_is_satisfied_by_an_absent_option_and_numbers_by_their_value(
    tmp_path: Path,
) -> None:
    frag = write(
        tmp_path / "f.config",
        '# CONFIG_GONE is not set\nCONFIG_OFF=n\nCONFIG_N=010\nCONFIG_S="null"\n',
    )
    check_config(write(tmp_path / "c", 'CONFIG_N=10\nCONFIG_S="null"\n'), [frag])
    with pytest.raises(RoadtestError, match='CONFIG_S="null"'):
        check_config(write(tmp_path / "d", 'CONFIG_N=10\nCONFIG_S=""\n'), [frag])
