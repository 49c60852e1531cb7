"""The documentation says what the code does: the tutorial's files are the repository's,
and the command reference names every command and option roadtest has."""

from __future__ import annotations

import argparse
import re

import pytest

from roadtest.checkout import repo_root
from roadtest.cli import parser as cli_parser

DOCS = repo_root() / "docs"
# A fenced block that stands for a file: ```python file=PATH
FILE_BLOCK = re.compile(r"^```\w* file=(?P<path>\S+)\n(?P<body>.*?)^```$", re.M | re.S)


def tutorial_files() -> list[tuple[str, str]]:
    text = (DOCS / "tutorial.md").read_text()
    return [(m["path"], m["body"]) for m in FILE_BLOCK.finditer(text)]


def test_the_tutorial_writes_files() -> None:
    paths = [path for path, _ in tutorial_files()]
    assert "tests/drivers/hwmon/test_tmp102.py" in paths, paths


@pytest.mark.parametrize(("path", "body"), tutorial_files(), ids=[p for p, _ in tutorial_files()])
def test_tutorial_file_is_the_repositorys(path: str, body: str) -> None:
    # Following the tutorial must give the files the suite runs, byte for byte.
    assert (repo_root() / path).read_text() == body, f"docs/tutorial.md's {path} has drifted"


def test_tutorial_deletes_what_it_writes() -> None:
    # "To write them yourself, delete them first": the rm line covers every file.
    text = (DOCS / "tutorial.md").read_text()
    rm = next(line for line in text.splitlines() if line.startswith("rm -r "))
    removed = rm.split()[2:]
    for path, _ in tutorial_files():
        assert any(path == r or path.startswith(r.rstrip("/") + "/") for r in removed), path


class _OptionNames:
    """Stands in for pytest's parser and its option group: keeps the names added."""

    def __init__(self) -> None:
        self.names: list[str] = []

    def getgroup(self, name: str) -> _OptionNames:
        return self

    def addoption(self, *names: str, **_: object) -> None:
        self.names += names


def plugin_options() -> list[str]:
    from roadtest.pytest_plugin import options

    recorder = _OptionNames()
    options.pytest_addoption(recorder)  # type: ignore[arg-type]
    return recorder.names


def cli_commands() -> list[str]:
    """`roadtest <command>`, `<command> <subcommand>` and every long option, at every level."""
    names: list[str] = []

    def walk(parser: argparse.ArgumentParser, command: str) -> None:
        for action in parser._actions:
            names.extend(o for o in action.option_strings if o.startswith("--") and o != "--help")
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    names.append(f"{command} {name}")
                    walk(sub, name)

    walk(cli_parser(), "roadtest")
    return names


@pytest.mark.parametrize("name", plugin_options() + cli_commands())
def test_command_reference_names(name: str) -> None:
    assert name in (DOCS / "commands.md").read_text(), f"docs/commands.md does not name {name}"
