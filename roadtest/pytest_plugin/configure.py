"""The run's set-up: the Hypothesis profile (hypothesis_profile), the hostile, timeout,
KTAP and coverage plugins the options ask for, the backend's log, and a stop at the next
test after a Ctrl-C or SIGTERM that something swallowed."""

from __future__ import annotations

import logging

import pytest

from roadtest import signals
from roadtest.checkout import repo_root
from roadtest.pytest_plugin import examples, hypothesis_profile, kernel_marks, timeouts
from roadtest.pytest_plugin.backend_log import BACKEND_LOG
from roadtest.pytest_plugin.ktap import KtapReport
from roadtest.pytest_plugin.options import check_options
from roadtest.pytest_plugin.stash import EXAMPLE_STATS
from roadtest.pytest_plugin.verdict import VERDICT
from roadtest.testing import coverage


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> None:
    """The default time limit, set before pytest-timeout reads its settings (configure);
    roadtest's Hypothesis profiles, registered before Hypothesis's plugin loads the one
    --hypothesis-profile names (configure)."""
    hypothesis_profile.set_up(config)
    if config.pluginmanager.hasplugin("timeout"):
        # Not run_options(config): a conftest may register its machine at configure.
        timeouts.set_default_limit(config, limits=not config.getoption("--roadtest-gdb"))


# What Python prints for a KeyboardInterrupt it could not raise (in a gc callback, say):
# pytest shows it as a warning, with a traceback, when the test's phase ends.
_SWALLOWED_INTERRUPT = r"ignore:(?ms).*^KeyboardInterrupt$:pytest.PytestUnraisableExceptionWarning"


class StopOnSignal:
    """A SIGINT or SIGTERM whose KeyboardInterrupt was lost (raised in a gc callback, which
    Python reports as "ignored" and goes on: Hypothesis has one) stops the run before the
    next test, as the KeyboardInterrupt would have; the command then says `roadtest:
    interrupted` and exits 130. Without this, every remaining test ran first."""

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_protocol(self, item: pytest.Item) -> bool | None:
        if signals.received() is None:
            return None
        item.session.shouldstop = f"roadtest: {signals.describe()}"
        return True  # the test does not run; pytest stops after this "protocol"


def pytest_configure(config: pytest.Config) -> None:
    options = check_options(config)
    if signals.installed():  # a roadtest command, which remembers the signal
        config.pluginmanager.register(StopOnSignal(), "roadtest-stop-on-signal")
        config.addinivalue_line("filterwarnings", _SWALLOWED_INTERRUPT)
    config.addinivalue_line(
        "markers",
        "roadtest_time(mode): the test needs the guest's clock in this mode (sim: a model's "
        "datasheet timing); in another it is skipped, and the run's summary says so",
    )
    config.addinivalue_line(
        "markers",
        "roadtest_hang_limit(seconds): an agent request of the test that takes longer (host "
        "seconds; 30 by default) fails it as a hang: for a test whose failure is a hang",
    )
    config.addinivalue_line("markers", kernel_marks.MARKER_HELP)
    config.stash[EXAMPLE_STATS] = examples.ExampleStats()
    if options.hostile:
        from roadtest.pytest_plugin import hostile

        config.pluginmanager.register(hostile.HostileCollection(), "roadtest-hostile")
    if config.pluginmanager.hasplugin("timeout"):
        config.pluginmanager.register(
            timeouts.GuestTimeouts(
                lambda item: item.stash.get(VERDICT, None), limits=not options.gdb
            ),
            "roadtest-timeouts",
        )
    if options.tree is not None and not hasattr(config, "workerinput"):
        # The user's tree, brought up to date before any test process boots it (a roadtest
        # command has done so already: then this is nothing).
        options.kernel(repo_root(), build=True)
    if options.ktap and not hasattr(config, "workerinput"):  # xdist's controller sees all
        config.pluginmanager.register(KtapReport(options.ktap), "roadtest-ktap")
    if options.coverage and not hasattr(config, "workerinput"):
        coverage.start(options.coverage)
    logger = logging.getLogger("roadtest")
    logger.addHandler(BACKEND_LOG)
    if logger.level == logging.NOTSET:
        logger.setLevel(logging.INFO)


def pytest_unconfigure(config: pytest.Config) -> None:
    hypothesis_profile.tear_down(config)
