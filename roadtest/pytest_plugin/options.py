"""roadtest's pytest options, from the one option table (roadtest.run_options), and the run's
checked RunOptions, made once at configure: a bad option is pytest's usage error (one line,
exit 4) before any test runs."""

from __future__ import annotations

import pytest

from roadtest.errors import UsageError
from roadtest.run_options import OPTIONS, RunOptions
from roadtest.run_options import xdist_worker as xdist_worker

_RUN_OPTIONS = pytest.StashKey[RunOptions]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("roadtest")
    for option in OPTIONS:
        if option.kind == "flag":
            group.addoption(option.name, action="store_true", help=option.help)
        elif option.kind == "append":
            group.addoption(
                option.name, action="append", default=[], metavar=option.metavar, help=option.help
            )
        else:
            kind = {"int": int, "float": float}.get(option.kind, str)
            group.addoption(
                option.name,
                type=kind,
                default=None,
                metavar=option.metavar,
                choices=option.choices,
                help=option.help,
            )


def option_values(config: pytest.Config) -> dict[str, object]:
    """The run options as pytest parsed them, by dest (what RunOptions.parse takes)."""
    return {option.dest: config.getoption(option.name) for option in OPTIONS}


def make_run_options(config: pytest.Config, interactive: bool = False) -> RunOptions:
    """The run's options from pytest's, checked (pytest.UsageError, one line, otherwise)."""
    values = option_values(config)
    workers = config.getoption("numprocesses", None)  # xdist's -n, when xdist is loaded
    try:
        return RunOptions.parse(
            values, interactive=interactive, workers=workers if isinstance(workers, int) else 0
        )
    except UsageError as err:
        raise pytest.UsageError(f"roadtest: {err}") from None


def check_options(config: pytest.Config) -> RunOptions:
    """Make the run's options and keep them (pytest_configure)."""
    options = make_run_options(config)
    config.stash[_RUN_OPTIONS] = options
    return options


def run_options(config: pytest.Config) -> RunOptions:
    """The run's options, as check_options made them (made now if it has not run)."""
    if _RUN_OPTIONS not in config.stash:
        config.stash[_RUN_OPTIONS] = make_run_options(config)
    return config.stash[_RUN_OPTIONS]
