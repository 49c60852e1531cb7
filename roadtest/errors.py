"""Errors a user can cause: reported as one line and a non-zero exit, never a traceback."""


class RoadtestError(Exception):
    """A problem the user can fix; str(err) is the whole message, one line saying what to do."""


class UsageError(RoadtestError):
    """A command line that cannot run (a bad option, or a bad combination of them): one line
    and exit status 4 (pytest's usage error), before anything is built."""
