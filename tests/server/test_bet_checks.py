"""A ``bet``'s checks before it is relayed (``server.gateway.tables.bet_checks``): what they
check is one store read (``Store.bet_reads``, issue 36: it was three reads, then three
at once), and the refusals stay those of the checks in their order: the restriction
first, then the reality check, then the limits. A store that cannot be read refuses the
bet (fail closed)."""

from __future__ import annotations

import time
from types import SimpleNamespace
from typing import Any

import pytest

from server.gateway.tables import bet_checks
from server.protection.context import PlayClock
from server.protocol.errors import Refused, StoreUnavailable
from server.store.base import BetReads, CurrentRule


class Reads:
    """A store answering ``bet_reads`` with what it is given (or failing)."""

    def __init__(
        self, restriction: Any = None, limits: Any = None, play: Any = None, fail: bool = False
    ) -> None:
        self.answer = BetReads(
            restriction, limits or {}, play if play is not None else played(due=False), {}
        )
        self.fail = fail
        self.asked: list[str] = []

    async def bet_reads(self, player: str, since_day: str, *, rule: CurrentRule) -> BetReads:
        self.asked.append(since_day)
        if self.fail:
            raise StoreUnavailable("down")
        return self.answer


def played(due: bool) -> dict[str, Any]:
    """A stored play session begun a minute ago, its reality check due or not."""
    now = time.time()
    return {
        "started": now - 60,
        "seen": now,
        "every": 60.0,
        "next": now - 1 if due else now + 59,
        "baseline": {"staked": 0, "net": 0},
    }


def _ctx(store: Reads) -> Any:
    return SimpleNamespace(store=store, lobby=None, background=lambda job: job.close())


def _session() -> Any:
    return SimpleNamespace(player="ann", play=PlayClock(60.0), persisted=True)


BLOCK = {"kind": "break", "until": time.time() + 3600}
LOSS = {"loss_day": {"amount": 1000, "since": 0.0, "by": "player"}}


async def test_no_restriction_and_no_limits_allow_the_bet_in_one_read() -> None:
    store = Reads()
    assert await bet_checks(_ctx(store), _session()) is None
    assert len(store.asked) == 1  # one read, of the month's days


async def test_a_restriction_refuses_first() -> None:
    store = Reads(BLOCK, LOSS, play=played(due=True))
    with pytest.raises(Refused) as caught:
        await bet_checks(_ctx(store), _session())
    assert caught.value.code == "player_blocked"


async def test_then_the_reality_check_then_the_limits() -> None:
    with pytest.raises(Refused) as caught:
        await bet_checks(_ctx(Reads(None, LOSS, play=played(due=True))), _session())
    assert caught.value.code == "reality_check_due"
    allowance = await bet_checks(_ctx(Reads(None, LOSS)), _session())
    assert allowance is not None
    assert allowance.nearest == {"kind": "loss_day", "amount": 1000, "remaining": 1000}
    assert [guard[:2] for guard in allowance.guards] == [["loss_day", 1000]]


async def test_a_store_that_cannot_be_read_refuses_the_bet() -> None:
    """Fail closed: never let through unchecked for a restriction or a reality check."""
    with pytest.raises(Refused) as caught:
        await bet_checks(_ctx(Reads(fail=True)), _session())
    assert caught.value.code == "store_unavailable"
