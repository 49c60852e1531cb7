"""`python -m roadtest`: the roadtest command (a bisection runs its oracle this way)."""

import sys

from roadtest.cli import main

sys.exit(main())
