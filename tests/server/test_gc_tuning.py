"""``chemmy-server`` keeps the cyclic collector's pauses out of the round trips (issue
23): what it made while starting is frozen, and collections run less often."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest

from server.process.main import GC_THRESHOLDS, tune_gc


@pytest.fixture
def restored() -> Iterator[None]:
    thresholds = gc.get_threshold()
    yield
    gc.unfreeze()
    gc.set_threshold(*thresholds)


def test_tune_gc_freezes_the_start_up_and_raises_the_thresholds(restored: None) -> None:
    kept = [[n] for n in range(1000)]  # made "while starting"
    tune_gc()
    assert gc.get_threshold() == GC_THRESHOLDS
    assert GC_THRESHOLDS[0] >= 10 * 700  # far fewer young collections than CPython's
    assert gc.get_freeze_count() >= len(kept)
    frozen = {id(x) for x in kept}
    assert not frozen & {id(o) for o in gc.get_objects()}  # never scanned again


def test_what_is_made_after_is_still_collected(restored: None) -> None:
    tune_gc()

    class Cycle:
        pass

    a, b = Cycle(), Cycle()
    a.other, b.other = b, a  # type: ignore[attr-defined]
    gone = weakref.ref(a)
    del a, b
    assert gone() is not None  # a cycle: only the collector frees it
    gc.collect()
    assert gone() is None
