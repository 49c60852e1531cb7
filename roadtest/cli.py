"""The `roadtest` command: build the guest kernel, run driver tests."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from roadtest.errors import RoadtestError


def _repo_root() -> Path:
    from roadtest.testing.plugin import repo_root

    return repo_root()


_XDIST_OPTIONS = {"--numprocesses", "--dist", "--tx", "-d", "--looponfail", "-f"}


def cmd_build(args: argparse.Namespace) -> int:
    from roadtest.kernel import build_main

    return build_main(_repo_root())


def cmd_run(args: argparse.Namespace) -> int:
    import pytest

    from roadtest.kernel import ensure_kernel

    # Build (or confirm) the kernel first, so its progress is not hidden behind pytest's capture.
    ensure_kernel(_repo_root())
    pytest_args = list(args.pytest_args) or [str(_repo_root() / "tests" / "drivers")]
    # Hypothesis' pytest plugin imports all of Hypothesis up front: ~0.9 s of every run here.
    # @given tests work without it; ROADTEST_HYPOTHESIS_PLUGIN=1 keeps it (for its options).
    if os.environ.get("ROADTEST_HYPOTHESIS_PLUGIN") != "1":
        pytest_args = ["-p", "no:hypothesispytest", *pytest_args]
    # Loading xdist costs ~0.15 s; only load it when the run asks for workers.
    wants_xdist = any(a.split("=")[0] in _XDIST_OPTIONS or a[:2] == "-n" for a in pytest_args)
    if not wants_xdist and not os.environ.get("PYTEST_ADDOPTS"):
        pytest_args = ["-p", "no:xdist", *pytest_args]
    return int(pytest.main(pytest_args))


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(
        prog="roadtest",
        description="Test real Linux drivers in a User-Mode Linux guest against Python models.",
    )
    sub = top.add_subparsers(dest="command", required=True, metavar="COMMAND")
    build = sub.add_parser(
        "build", help="build the guest kernel, or confirm the cached one is current"
    )
    build.set_defaults(func=cmd_build)
    run = sub.add_parser(
        "run",
        help="run driver tests (arguments go to pytest; default: tests/drivers)",
        description="Run driver tests with pytest; every argument is passed to pytest.",
    )
    run.add_argument(
        "pytest_args", nargs=argparse.REMAINDER, help="pytest arguments, e.g. -k opt3001 -n 2"
    )
    run.set_defaults(func=cmd_run)
    return top


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) > 1 and argv[0] == "run" and argv[1] not in ("-h", "--help"):
        # Everything after `run` is pytest's, options first included (argparse would eat them).
        args = argparse.Namespace(func=cmd_run, pytest_args=argv[1:])
    else:
        args = parser().parse_args(argv)
    try:
        status: int = args.func(args)
    except RoadtestError as err:
        print(f"roadtest: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("roadtest: interrupted", file=sys.stderr)
        return 130
    return status


if __name__ == "__main__":
    sys.exit(main())
