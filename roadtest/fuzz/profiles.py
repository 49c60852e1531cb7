"""Hypothesis settings profiles for guest tests, and the example database in roadtest's cache.

- `roadtest-quick` (`make test`, `roadtest run`): few examples, derandomized, so a
  run tests the same examples every time, and no database: a guest test's result
  depends on the checkout alone.
- `roadtest-fuzz` (`roadtest fuzz`): random and long, with the example database in
  the cache (never the repository), so a failure found once is tried first next time.

Both: no deadline (an example's time is the guest's, which host load moves), no health
check against the function-scoped `guest` fixture (one guest serves every example of a
test on purpose: the examples runner keeps it clean between them), and no explain
phase: after a failure it runs about a hundred variants of the minimal example to find
the host lines only failing examples ran, and when each crashes the kernel each costs a
guest boot, while the lines it finds are roadtest's, not the driver's.
"""

from __future__ import annotations

from pathlib import Path

from roadtest.errors import RoadtestError

# Hypothesis is imported where it is used: importing this module must not import it
# (roadtest/pytest_plugin/hypothesis_profile.py says why).

QUICK = "roadtest-quick"
FUZZ = "roadtest-fuzz"
QUICK_EXAMPLES = 20
FUZZ_EXAMPLES = 1000
# The entry under which Hypothesis keeps the database's own keys, not examples.
_KEYS_ENTRY = ".hypothesis-keys"


def database_dir(cache: Path) -> Path:
    return cache / "hypothesis"


def register(cache: Path) -> None:
    """Register both profiles (the fuzz one's database under `cache`); loads none."""
    from hypothesis import HealthCheck, Phase, settings
    from hypothesis.database import DirectoryBasedExampleDatabase

    common = settings(
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
        print_blob=True,
        phases=[p for p in Phase if p is not Phase.explain],
    )
    settings.register_profile(
        QUICK, common, max_examples=QUICK_EXAMPLES, derandomize=True, database=None
    )
    settings.register_profile(
        FUZZ,
        common,
        max_examples=FUZZ_EXAMPLES,
        database=DirectoryBasedExampleDatabase(database_dir(cache)),
    )


def check_database(path: Path) -> None:
    """RoadtestError unless `path` is absent or an example database Hypothesis wrote.

    Hypothesis itself drops entries it cannot decode, silently: a damaged database
    would lose the failures it holds without a word."""
    from hypothesis.database import choices_from_bytes

    if not path.exists():
        return
    if not path.is_dir():
        raise RoadtestError(f"example database {path} is not a directory: delete it")
    hashed_keys = _hashed(_KEYS_ENTRY.encode())
    for entry in sorted(path.iterdir()):
        if entry.name == hashed_keys:
            continue
        if not entry.is_dir():
            raise RoadtestError(
                f"example database {path} is damaged: {entry.name} is not a test's "
                "directory (delete the database to start afresh)"
            )
        for example in sorted(entry.iterdir()):
            try:
                data = example.read_bytes()
            except OSError as err:
                raise RoadtestError(
                    f"example database {path} is damaged: {example}: {err.strerror}"
                ) from None
            if choices_from_bytes(data) is None:
                raise RoadtestError(
                    f"example database {path} is damaged: {example} is not a Hypothesis "
                    "example (delete it, or the database to start afresh)"
                )


def _hashed(key: bytes) -> str:
    from hypothesis.database import _hash

    return _hash(key)
