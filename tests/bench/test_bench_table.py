"""bench/table.py's memory figure: what one table event holds while a log keeps it (the
hub's recent log is sized by it, server/gateway/hub.py ``RETAINED_EVENTS``)."""

from __future__ import annotations

import pytest

from bench import table as bench_table
from server.gateway.hub import RETAINED_EVENTS


@pytest.mark.slow  # a second or more of CPU
def test_an_event_holds_kilobytes_and_a_recent_log_of_them_under_a_few_mebibytes() -> None:
    held = bench_table.held_bytes_per_event(coups=20)
    # An event is its data and its private parts: far more than its ~400 B of JSON,
    # far less than a table state.
    assert 500 < held < 20_000, held
    assert held * RETAINED_EVENTS < 4 * 2**20
