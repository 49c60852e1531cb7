"""roadtest's pytest plugin (entry point `pytest11`): guests, devices and failure reports.

Everything in roadtest that imports pytest is in this package; the test API
(roadtest.testing) does not need it. The hooks and fixtures live one concern a module
and are gathered in plugin.py, the entry point, where pytest looks for them:

  options        roadtest's options and their checks
  configure      the run's set-up from them
  hypothesis_profile  roadtest's Hypothesis profiles, chosen when Hypothesis is imported
  collection     the devices each test module declares
  fixtures       `guest` (the session, ready for one test) and `roadtest_session`
  verdict        a guest test's cause of failure
  report         the header, the summary and a failing test's sections

Fixtures:
  guest            the worker's guest session (booted on first use, rebooted
                   after a crash), with the test's kernel and backend logs kept
  roadtest_session the same object, session-scoped, for fixtures of your own
  roadtest_kernel_range (autouse) skips a test marked roadtest_kernel(RANGE)
                   on a kernel outside its range, guest or not
"""
