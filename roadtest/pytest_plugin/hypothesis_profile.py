"""roadtest's Hypothesis profiles, registered and chosen when Hypothesis is first imported.

Importing Hypothesis takes 0.44 s of the 0.95 s a `roadtest run` of one test file takes
to start (Intel Xeon, `python -X importtime`), and most runs have no property test: make
test starts roadtest and pytest some hundreds of times (patches-check's reproducers, the
harness tests' runs). So nothing of the plugin imports it; the profiles are set up at the
moment something does (a test module's `from hypothesis import given`, a conftest, the
fuzz strategies), by a finder on sys.meta_path that runs `then` once the `hypothesis`
package has been executed. That is before the importing module's next line: an
`@settings(...)` there, which takes its defaults from the profile loaded at that moment,
gets roadtest's.

The choice: roadtest's quick profile unless a roadtest profile is loaded (`roadtest fuzz`
loads its own) or the run names one (`--hypothesis-profile`): not Hypothesis's own
"default", nor the "ci" it loads by itself when CI is set, which keep the health check
that fails every @given test using the function-scoped `guest` fixture.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
from collections.abc import Callable, Sequence
from types import ModuleType

import pytest

from roadtest.fuzz import profiles
from roadtest.kernel import default_cache_dir

PACKAGE = "hypothesis"


class AfterImport(importlib.abc.MetaPathFinder):
    """Runs `then` once, right after the package `name` has been executed; the import
    itself is left to the finders after this one (its spec and loader are theirs)."""

    def __init__(self, name: str, then: Callable[[], None]) -> None:
        self.name = name
        self.then = then

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != self.name:
            return None
        self.remove()
        spec = None
        for finder in sys.meta_path:  # the finders after this one, as the import would
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                break
        if spec is None or spec.loader is None:
            return spec
        loader = spec.loader
        execute = loader.exec_module
        name, then = self.name, self.then

        # The loader can be shared (pytest's assertion rewriter loads every module of a
        # plugin's distribution, Hypothesis's too): the package's submodules, executed
        # while it is, pass through.
        def exec_module(module: ModuleType) -> None:
            if module.__name__ != name:
                execute(module)
                return
            try:
                execute(module)
            finally:
                del loader.exec_module  # the loader's own method again
            then()

        loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec

    def install(self) -> None:
        sys.meta_path.insert(0, self)

    def remove(self) -> None:
        if self in sys.meta_path:
            sys.meta_path.remove(self)


def choose(config: pytest.Config) -> None:
    """Register roadtest's profiles and load the quick one, unless a roadtest profile is
    loaded or the run names one. Hypothesis must be importable: this imports it."""
    from hypothesis import settings

    profiles.register(default_cache_dir())
    chosen = config.getoption("--hypothesis-profile", None)
    if not chosen and not settings.get_current_profile_name().startswith("roadtest-"):
        settings.load_profile(profiles.QUICK)


_PENDING = pytest.StashKey[AfterImport]()


def set_up(config: pytest.Config) -> None:
    """Choose now if Hypothesis is imported already or the command line names a profile
    (Hypothesis's own plugin then loads it at configure: it must be registered first);
    otherwise when Hypothesis is first imported."""
    if PACKAGE in sys.modules or config.getoption("--hypothesis-profile", None):
        choose(config)
        return
    finder = AfterImport(PACKAGE, lambda: choose(config))
    config.stash[_PENDING] = finder
    finder.install()


def tear_down(config: pytest.Config) -> None:
    """Take the finder out if Hypothesis was never imported (pytest.main may run again in
    this process, with another config)."""
    finder = config.stash.get(_PENDING, None)
    if finder is not None:
        finder.remove()
