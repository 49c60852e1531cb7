"""Errors a user can cause: reported as one line and a non-zero exit, never a traceback."""


class RoadtestError(Exception):
    """A problem the user can fix; str(err) is the whole message, one line saying what to do."""
