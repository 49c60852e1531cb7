import pytest

pytest_plugins = ["pytester"]


@pytest.fixture(autouse=True)
def wide_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """Whole headlines in the summary lines of the pytest runs the harness tests start."""
    monkeypatch.setenv("COLUMNS", "400")
