"""Fixtures for the table tests. Pure: no event loop, no clock, no I/O.

The helpers are ``table_helpers`` (this folder is on pytest's ``pythonpath``)."""

from __future__ import annotations

import pytest
from table_helpers import TableHarness


@pytest.fixture
def harness() -> TableHarness:
    """A default table (commission, 1-100 tier, default timers) with nobody at it."""
    return TableHarness()


@pytest.fixture
def make_harness():
    """Build a harness with options: ``make_harness(TableOptions(...), table_id=...)``."""
    return TableHarness
