"""One timeout factor for slow machines, as websockets' own tests have (``tests/utils.py``).

Every wait in the kit, and every table timer a test sets, goes through :func:`scaled`, so
a busy machine is given more time by one environment variable,
``CHEMMY_TESTS_TIMEOUT_FACTOR`` (default 1), instead of by editing timeouts.

This module must never sleep or read the clock: it only scales numbers.
"""

from __future__ import annotations

import os

#: Multiply every timeout and table timer by this on a slow machine.
TIMEOUT_FACTOR = float(os.environ.get("CHEMMY_TESTS_TIMEOUT_FACTOR", "1"))


def scaled(seconds: float) -> float:
    """A timeout or a table timer, scaled for slow machines."""
    return seconds * TIMEOUT_FACTOR
