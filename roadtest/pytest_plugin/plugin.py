"""The entry point (`pytest11`): the plugin's hooks and fixtures, gathered from the modules
that define them (see the package's docstring)."""

from roadtest.pytest_plugin.collection import pytest_collection_modifyitems
from roadtest.pytest_plugin.configure import (
    pytest_cmdline_main,
    pytest_configure,
    pytest_unconfigure,
)
from roadtest.pytest_plugin.fixtures import guest, roadtest_kernel_range, roadtest_session
from roadtest.pytest_plugin.options import pytest_addoption
from roadtest.pytest_plugin.report import (
    pytest_report_header,
    pytest_runtest_makereport,
    pytest_terminal_summary,
)
from roadtest.pytest_plugin.verdict import pytest_runtest_call

__all__ = [
    "guest",
    "pytest_addoption",
    "pytest_cmdline_main",
    "pytest_collection_modifyitems",
    "pytest_configure",
    "pytest_report_header",
    "pytest_runtest_call",
    "pytest_runtest_makereport",
    "pytest_terminal_summary",
    "pytest_unconfigure",
    "roadtest_kernel_range",
    "roadtest_session",
]
