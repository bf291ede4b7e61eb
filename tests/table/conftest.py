"""Fixtures for the table tests. Pure: no event loop, no clock, no I/O.

helpers.py is loaded under the unique module name ``table_helpers`` so the test modules
here can ``from table_helpers import ...`` whatever else is on sys.path.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

_spec = importlib.util.spec_from_file_location(
    "table_helpers", Path(__file__).with_name("helpers.py")
)
assert _spec is not None and _spec.loader is not None
if "table_helpers" not in sys.modules:
    _mod = importlib.util.module_from_spec(_spec)
    sys.modules["table_helpers"] = _mod
    _spec.loader.exec_module(_mod)

from table_helpers import TableHarness  # noqa: E402


@pytest.fixture
def harness() -> TableHarness:
    """A default table (commission, 1-100 tier, default timers) with nobody at it."""
    return TableHarness()


@pytest.fixture
def make_harness():
    """Build a harness with options: ``make_harness(TableOptions(...), table_id=...)``."""
    return TableHarness
