"""Kernel configuration: config fragments, merging them over defconfig, checking the result."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from roadtest.arch import Target
from roadtest.arch.um import UM
from roadtest.errors import RoadtestError
from roadtest.kernel.runner import Runner

_SET = re.compile(r"^(CONFIG_[A-Za-z0-9_]+)=(.*)$")
_UNSET = re.compile(r"^# (CONFIG_[A-Za-z0-9_]+) is not set$")

# None stands for "not set": "# CONFIG_X is not set", CONFIG_X=n, or no line at all.
Value = str | None


@dataclass(frozen=True)
class Request:
    """One option as a fragment asks for it."""

    name: str
    value: Value
    fragment: Path

    def describe(self) -> str:
        return f"{self.name}={self.value}" if self.value is not None else f"{self.name} is not set"


def config_fragments(
    repo_root: Path, target: Target = UM, extra: Sequence[Path] = ()
) -> list[Path]:
    """The target's base fragment (kernel-patches/base.config), then every tests/**/*.config
    of the checkout, then those under each `extra` directory (a user's own tests), each
    group sorted by path (later ones win)."""
    base = repo_root / target.base_config
    if not base.is_file():
        raise RoadtestError(f"{base} not found: is {repo_root} a roadtest checkout?")
    fragments = [base]
    for top in (repo_root / "tests", *extra):
        found = sorted(fragments_under(top), key=lambda p: p.relative_to(top).as_posix())
        fragments += [p for p in found if p not in fragments]
    return fragments


def fragments_under(top: Path) -> list[Path]:
    """The *.config files under `top`, but not those of another project below it: a test in
    /tmp or a home directory must not take a kernel tree's arch/*/configs/*.config, a
    clone's tests, or a build directory's .config (the kernel's whole configuration). So
    hidden files and directories are skipped, and so is a directory under `top` that is a
    git work tree or a kernel tree (a Kconfig file at its top)."""
    found = []
    for directory, subdirectories, files in os.walk(top):
        here = Path(directory)
        subdirectories[:] = [
            d
            for d in subdirectories
            if not d.startswith(".")
            and not (here / d / ".git").exists()
            and not (here / d / "Kconfig").exists()
        ]
        found += [here / f for f in files if f.endswith(".config") and not f.startswith(".")]
    return [p for p in found if p.is_file()]


def _normalise(value: str) -> Value:
    return None if value == "n" else value


def parse_fragment(path: Path, repo_root: Path | None = None) -> dict[str, Value]:
    """A fragment's options in file order; any other line but comments and blanks is an error."""
    options: dict[str, Value] = {}
    try:
        text = path.read_text()
    except OSError as err:
        raise RoadtestError(f"cannot read config fragment {path}: {err.strerror}") from None
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if unset := _UNSET.match(line):
            options[unset.group(1)] = None
        elif line.startswith("#") or not line:
            continue
        elif match := _SET.match(line):
            options[match.group(1)] = _normalise(match.group(2).strip())
        else:
            raise RoadtestError(
                f"malformed line {number} of config fragment {display(path, repo_root)}: {line!r} "
                "(expected CONFIG_NAME=value or '# CONFIG_NAME is not set')"
            )
    return options


def parse_config(text: str) -> dict[str, Value]:
    """A full .config as kconfig writes it."""
    options: dict[str, Value] = {}
    for line in text.splitlines():
        if match := _SET.match(line):
            options[match.group(1)] = _normalise(match.group(2))
        elif unset := _UNSET.match(line):
            options[unset.group(1)] = None
    return options


def requested_options(fragments: list[Path], repo_root: Path | None = None) -> dict[str, Request]:
    """What the fragments ask for; when two disagree the later one wins, as in merge_config.sh."""
    requests: dict[str, Request] = {}
    for fragment in fragments:
        for name, value in parse_fragment(fragment, repo_root).items():
            requests[name] = Request(name, value, fragment)
    return requests


def _number(value: str) -> int:
    # kconfig reads int options in decimal and hex options with their 0x prefix.
    return int(value, 16) if value.lower().startswith("0x") else int(value, 10)


def _same(wanted: Value, got: Value) -> bool:
    if wanted == got:
        return True
    if wanted is None or got is None:
        return False
    try:
        # kconfig may rewrite a number's spelling (e.g. 010 -> 10); the value is what matters.
        return _number(wanted) == _number(got)
    except ValueError:
        return False


def dropped_options(config: str, requests: dict[str, Request]) -> list[tuple[Request, Value]]:
    """Requests the final config does not honour, with what it has instead."""
    final = parse_config(config)
    return [
        (req, final.get(name))
        for name, req in requests.items()
        if not _same(req.value, final.get(name))
    ]


def display(path: Path, repo_root: Path | None) -> str:
    if repo_root is not None:
        try:
            return str(path.resolve().relative_to(repo_root.resolve()))
        except ValueError:
            pass
    return str(path)


def kconfig_symbols(source_dir: Path, names: Sequence[str]) -> set[str]:
    """Those of `names` (CONFIG_X) that some Kconfig file of the tree defines."""
    wanted = {name.removeprefix("CONFIG_") for name in names}
    pattern = re.compile(r"^\s*(?:menu)?config\s+(\w+)\s*$", re.M)
    found: set[str] = set()
    for kconfig in source_dir.rglob("Kconfig*"):
        if kconfig.is_file():
            text = kconfig.read_text(errors="replace")
            found.update(wanted.intersection(pattern.findall(text)))
    return {f"CONFIG_{name}" for name in found}


def check_config(
    config_path: Path,
    fragments: list[Path],
    repo_root: Path | None = None,
    *,
    absent: Callable[[str], None] | None = None,
    source_dir: Path | None = None,
) -> None:
    """Raise a RoadtestError naming every requested option the final .config does not have.

    With `absent` (a developer's tree, in `source_dir`): an option no Kconfig file of the
    tree defines (a driver newer than the tree, whose tests then find no driver) is said
    to `absent`, in one line, rather than failing the build."""
    dropped = dropped_options(config_path.read_text(), requested_options(fragments, repo_root))
    if dropped and absent is not None and source_dir is not None:
        known = kconfig_symbols(source_dir, [req.name for req, _ in dropped])
        missing = [req for req, _ in dropped if req.name not in known]
        if missing:
            names = ", ".join(f"{req.name} ({display(req.fragment, repo_root)})" for req in missing)
            absent(f"kernel: not in this tree, left out: {names}")
        dropped = [(req, got) for req, got in dropped if req.name in known]
    if not dropped:
        return
    items = []
    for req, got in dropped:
        now = "now not set" if got is None else f"now {got}"
        items.append(f"{req.describe()} ({display(req.fragment, repo_root)}, {now})")
    raise RoadtestError(
        f"config options dropped by olddefconfig: {', '.join(items)} — check their dependencies"
    )


def configure(
    runner: Runner,
    source_dir: Path,
    build_dir: Path,
    fragments: list[Path],
    repo_root: Path,
    target: Target = UM,
    absent: Callable[[str], None] | None = None,
) -> Path:
    """The target's defconfig, merge the fragments, olddefconfig, check; return the .config.
    `absent`: told the options the tree does not have at all, rather than failing (a
    developer's tree: check_config)."""
    make = ["make", *target.make_args(), f"O={build_dir}"]
    failure = "kernel configuration failed"
    runner.check([*make, target.defconfig], cwd=source_dir, failure=failure, nice=True)
    merge = source_dir / "scripts" / "kconfig" / "merge_config.sh"
    config = build_dir / ".config"
    # merge_config.sh makes its temp files in the current directory: keep them out of the source.
    runner.check(
        ["sh", str(merge), "-m", "-O", str(build_dir), str(config), *map(str, fragments)],
        cwd=build_dir,
        failure=failure,
    )
    runner.check([*make, "olddefconfig"], cwd=source_dir, failure=failure, nice=True)
    check_config(config, fragments, repo_root, absent=absent, source_dir=source_dir)
    return config
