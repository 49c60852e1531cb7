"""Which device and test a trace belongs to, and where it lives: DIR/<chip>/<test>.rtrace.

Record writes traces under these names and replay finds them by the same.
`TracedDevice` is how the test session names a device to them; `test_file`
resolves the test a trace names (a pytest node id) to its file, refusing
anything outside the repository's tests/.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from roadtest.errors import RoadtestError
from roadtest.text import printable

_UNSAFE = re.compile(r"[^A-Za-z0-9_.,=+-]+")
_RELEASE = re.compile(r"(\d+)\.(\d+)(?:\.(\d+))?")


@dataclass(frozen=True)
class TracedDevice:
    """A device of a test, as record and replay know it (what the session tells them)."""

    compatible: str  # the devicetree compatible, e.g. "ti,opt3001"
    address: int  # its bus address
    origin: str  # the test module's variable that declares it, e.g. "test_opt3001.SENSOR"
    lines: tuple[str, ...] = ()  # the names of the GPIO lines it uses, e.g. ("irq",)
    bus: str = "i2c"  # the bus it is on (testing/bus/), as trace headers name it


def chip_name(compatible: str) -> str:
    """The traces/ directory of a device: its compatible without the vendor."""
    return compatible.split(",", 1)[-1]


def trace_name(test_id: str) -> str:
    """A stable, readable file name: `test_x[a b]` -> `test_x-a-b`."""
    name = test_id.rsplit("::", 1)[-1]
    return _UNSAFE.sub("-", name).strip("-")


def kernel_version(release: str) -> tuple[int, int, int] | None:
    """A kernel release as a trace header or `uname -r` gives it ("6.1.192-roadtest") as
    (6, 1, 192); None when it names no version."""
    match = _RELEASE.match(release)
    if match is None:
        return None
    return int(match[1]), int(match[2]), int(match[3] or 0)


def version_suffix(release: str, plain_line: str) -> str:
    """What a trace's file name adds for the kernel it was recorded on: nothing on the
    kernel line (major.minor) roadtest builds by default, `plain_line`; "@6.1" on 6.1.y,
    so that the two kernels' traces of one test lie side by side."""
    version = kernel_version(release)
    line = "" if version is None else f"{version[0]}.{version[1]}"
    return "" if line in ("", plain_line) else f"@{line}"


def shown_id(text: str) -> str:
    """A test id or selection (from a trace, or the user's), for a message."""
    return printable(text, 300)


def test_file(root: Path, test_id: str, tests: str = "tests") -> Path | None:
    """The file of a trace's test (a pytest node id), only ever one under `root`/`tests`
    (roadtest's checkout: tests/; a user's own test directory: "", the whole of it).

    A trace from elsewhere names the test that replay imports and runs: a path
    out of it (absolute, `..`, a symlink out) is refused (RoadtestError). None
    when the file or the test function does not exist (any more).
    """
    file, sep, name = test_id.partition("::")
    rel = PurePosixPath(file)
    top = (root / tests).resolve() if tests else root.resolve()
    prefix = (tests,) if tests else ()
    if (
        not sep
        or not name
        or "\0" in test_id
        or rel.is_absolute()
        or ".." in rel.parts
        or rel.parts[: len(prefix)] != prefix
        or rel.suffix != ".py"
    ):
        where = (
            f"{tests}/<file>.py::<name>, under {root}"
            if tests
            else f"<file>.py::<name>, under {root}"
        )
        raise RoadtestError(
            f"its test {shown_id(test_id)} is not a node id of these tests ({where})"
        )
    path = root / rel
    try:
        if not path.resolve().is_relative_to(top):
            raise RoadtestError(f"its test {shown_id(test_id)} leads out of {top}")
        if not path.is_file():
            return None
        source = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        why = err.strerror if isinstance(err, OSError) and err.strerror else "not UTF-8 text"
        raise RoadtestError(f"its test {shown_id(test_id)}: cannot read its file: {why}") from None
    function = name.split("[", 1)[0].rsplit("::", 1)[-1]
    if re.search(rf"^\s*def {re.escape(function)}\(", source, re.M) is None:
        return None
    return path
