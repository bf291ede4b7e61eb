"""The store contract of a player's usage and limits (issue 21), on every store.

SQLite and a real Redis (the ``redis_url`` fixture). Flows: the chips placed
and taken back, returns, wins, refunds, voids and deposits a commit newly inserts land in the player's
bucket of the commit's UTC day with the signs of :func:`entry_flow`; other kinds do not;
a retried commit and a refused one add nothing; days are read from a day on, per
player, and a player keeps :data:`FLOW_DAYS` of them. Limits: the rules of
:func:`merge_limits` (pure, with ``now`` given; a Hypothesis property: a player's change
never loosens a limit before :data:`RAISE_DELAY`), and the stores' round trip, atomic,
refusing bad changes and kept across opening the store again.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from server.ledger.accounts import Entry
from server.ledger.flows import FLOW_DAYS, LimitGuard, entry_flow, flow_day
from server.protection.rules import (
    RAISE_DELAY,
    current_limits,
    merge_limits,
    merge_restriction,
    open_play,
)
from server.protocol.errors import KeyConflict, LimitPassed, Overdrawn, StaleEpoch, StoreError
from server.store import Store, TableRow
from server.store.base import BetReads
from server.store.players import LIMIT_KINDS
from tests.server.conftest import Clock, make_store

DAY = 86_400.0
#: Noon UTC of a day, so a few hours either way stay in it.
NOON = 1_767_225_600.0 + DAY / 2  # 2026-01-01 12:00 UTC


@pytest.fixture
def clock() -> Clock:
    return Clock(NOON)


@pytest.fixture
async def clocked(
    kind: str, request: pytest.FixtureRequest, tmp_path: Path, clock: Clock
) -> AsyncIterator[Store]:
    """An open store of ``kind`` on the test's :class:`Clock`."""
    made = make_store(kind, request, tmp_path, clock=clock)
    await made.open()
    yield made
    await made.close()


def deposit(key: str, player: str, amount: int) -> Entry:
    return Entry(key, "cashier", f"player:{player}", amount, "deposit")


def stake(key: str, player: str, amount: int, table: str = "t1") -> Entry:
    return Entry(key, f"player:{player}", f"stake:{table}:{player}", amount, "stake", "r")


def hold(rid: str, player: str, area: str, amount: int, table: str = "t1") -> Entry:
    key = f"{rid}:{player}:{area}:hold"
    return Entry(key, f"stake:{table}:{player}", f"held:{table}", amount, "hold", rid)


def outcome(rid: str, player: str, area: str, amount: int, kind: str, table: str = "t1") -> Entry:
    dst = "house" if kind == "lose" else f"player:{player}"
    return Entry(f"{rid}:{player}:{area}:{kind}", f"held:{table}", dst, amount, kind, rid)


def win(rid: str, player: str, area: str, amount: int) -> Entry:
    return Entry(f"{rid}:{player}:{area}:win", "house", f"player:{player}", amount, "win", rid)


def flows(staked: int, net: int, deposited: int) -> dict[str, int]:
    return {"staked": staked, "net": net, "deposited": deposited}


# -- entry_flow, pure ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("entry", "flow"),
    [
        (stake("s1", "ann", 5), ("ann", 1, -1, 0)),
        (stake("s1", "a:b", 5), ("a:b", 1, -1, 0)),
        (Entry("u", "stake:t1:ann", "player:ann", 5, "unstake", "r"), ("ann", -1, 1, 0)),
        (outcome("r1", "ann", "banker", 5, "return"), ("ann", 0, 1, 0)),
        (win("r1", "ann", "banker", 5), ("ann", 0, 1, 0)),
        (outcome("r1", "ann", "banker", 5, "refund"), ("ann", -1, 1, 0)),
        (outcome("r1", "ann", "banker", 5, "void"), ("ann", -1, 1, 0)),
        (deposit("d1", "ann", 5), ("ann", 0, 0, 1)),
        (Entry("x", "operator", "player:ann", 5, "transfer_deposit"), ("ann", 0, 0, 1)),
        (outcome("r1", "ann", "banker", 5, "lose"), None),
        (hold("r1", "ann", "banker", 5), None),  # counted when the chips were placed
        (Entry("welcome:ann", "cashier", "player:ann", 5, "welcome"), None),
        (Entry("w", "wallet:ann", "player:ann", 5, "sync"), None),
        (Entry("x", "player:ann", "operator", 5, "transfer_withdraw"), None),
        # Accounts not of the shape the kind expects move nothing.
        (Entry("s", "cashier", "stake:t1:ann", 5, "stake", "r"), None),
        (Entry("s", "player:", "stake:t1:", 5, "stake", "r"), None),
        (Entry("u", "stake:t1:ann", "house", 5, "unstake", "r"), None),
        (Entry("d", "cashier", "house", 5, "deposit"), None),
        (Entry("d", "cashier", "player:", 5, "deposit"), None),
    ],
)
def test_entry_flow(entry: Entry, flow: tuple[str, int, int, int] | None) -> None:
    assert entry_flow(entry) == flow


# -- flows kept by commit -------------------------------------------------------------


async def test_a_players_day(clocked: Store) -> None:
    store = clocked
    today = flow_day(NOON)
    await store.ensure_player("ann", "Ann", 1000)  # a welcome moves nothing
    assert await store.player_days("ann", "2000-01-01") == {}
    await store.commit(entries=[deposit("d1", "ann", 500)])
    await store.commit(entries=[stake("s1", "ann", 300)])
    await store.commit(entries=[hold("r1", "ann", "banker", 200), hold("r1", "ann", "player", 100)])
    await store.commit(
        entries=[
            outcome("r1", "ann", "banker", 200, "return"),
            win("r1", "ann", "banker", 190),
            outcome("r1", "ann", "player", 100, "lose"),
        ]
    )
    assert await store.player_days("ann", today) == {today: flows(300, 90, 500)}
    await store.commit(entries=[stake("s2", "ann", 100), hold("r2", "ann", "banker", 100)])
    await store.commit(entries=[outcome("r2", "ann", "banker", 100, "refund")])
    await store.commit(entries=[stake("s3", "ann", 50), hold("r3", "ann", "tie", 50)])
    await store.commit(entries=[outcome("r3", "ann", "tie", 50, "void")])
    await store.commit(
        entries=[
            Entry("t1", "operator", "player:ann", 70, "transfer_deposit"),
            Entry("t2", "player:ann", "operator", 20, "transfer_withdraw"),
            Entry("w1", "wallet:ann", "player:ann", 10, "sync"),
            Entry("u1", "player:ann", "stake:t1:ann", 5, "stake", "r4"),
            Entry("u2", "stake:t1:ann", "player:ann", 5, "unstake", "r4"),
        ]
    )
    assert await store.player_days("ann", today) == {today: flows(300, 90, 570)}
    assert (await store.audit())["holds_ok"]


async def test_other_kinds_make_no_day(clocked: Store) -> None:
    store = clocked
    await store.ensure_player("bob", "Bob", 1000)
    await store.commit(
        entries=[
            stake("s1", "bob", 100),
            Entry("u1", "stake:t1:bob", "player:bob", 40, "unstake", "r"),
            hold("r1", "bob", "banker", 60),
        ]
    )
    await store.commit(entries=[outcome("r1", "bob", "banker", 60, "lose")])
    assert await store.player_days("bob", "2000-01-01") == {
        flow_day(NOON): flows(60, -60, 0)
    }  # the chips placed less those taken back
    await store.commit(entries=[Entry("x", "player:bob", "operator", 10, "transfer_withdraw")])
    assert await store.player_days("cat", "2000-01-01") == {}


async def test_a_retried_commit_adds_nothing(clocked: Store) -> None:
    store = clocked
    today = flow_day(NOON)
    await store.ensure_player("ann", "Ann", 1000)
    step = [stake("s1", "ann", 100), hold("r1", "ann", "banker", 100), deposit("d1", "ann", 50)]
    assert (await store.commit(entries=step)).inserted == 3
    assert (await store.commit(entries=step)).inserted == 0
    # A deposit sent again (same key) in a later commit, beside a new entry.
    again = await store.commit(entries=[deposit("d1", "ann", 50), deposit("d2", "ann", 7)])
    assert again.inserted == 1
    assert await store.player_days("ann", today) == {today: flows(100, -100, 57)}


async def test_a_refused_commit_adds_nothing(clocked: Store) -> None:
    store = clocked
    today = flow_day(NOON)
    await store.ensure_player("ann", "Ann", 1000)
    await store.commit(entries=[deposit("d1", "ann", 50), stake("s1", "ann", 100)])
    before = await store.player_days("ann", today)
    assert before == {today: flows(100, -100, 50)}
    with pytest.raises(Overdrawn):  # the hold is more than the stake
        await store.commit(entries=[deposit("d2", "ann", 9), hold("r1", "ann", "banker", 101)])
    with pytest.raises(KeyConflict):  # d1 holds another amount
        await store.commit(entries=[deposit("d3", "ann", 9), deposit("d1", "ann", 51)])
    epoch = await store.claim_table("t1")
    await store.claim_table("t1")
    with pytest.raises(StaleEpoch):
        await store.commit(
            entries=[deposit("d4", "ann", 9), hold("r1", "ann", "banker", 10)],
            table=TableRow("t1", {}, {"x": 1}, 1, False, epoch),
        )
    assert await store.player_days("ann", today) == before
    assert not await store.has_entry("d2")


# -- limit guards: the cap held by the commit itself (issue 33) ------------------------


def guard(kind: str, cap: int, since: str = flow_day(NOON), player: str = "ann") -> LimitGuard:
    return LimitGuard(player, kind, cap, since)


async def test_a_guard_holds_a_wager_cap(clocked: Store) -> None:
    store = clocked
    await store.ensure_player("ann", "Ann", 1000)
    cap = [guard("wager_day", 500)]
    await store.commit(entries=[stake("s1", "ann", 300)], guards=cap)
    with pytest.raises(LimitPassed) as refused:
        await store.commit(entries=[stake("s2", "ann", 250, "t2")], guards=cap)
    assert (refused.value.kind, refused.value.cap, refused.value.remaining) == (
        "wager_day",
        500,
        200,
    )
    assert not await store.has_entry("s2")  # nothing of it kept
    assert await store.player_money("ann", ["t1", "t2"]) == (1000, 700)
    await store.commit(entries=[stake("s3", "ann", 200, "t2")], guards=cap)  # exactly at it
    # Chips taken back pass whatever the cap (the usage does not rise), and so does a
    # retried commit, which inserts nothing, even under a lower cap.
    back = Entry("u1", "stake:t2:ann", "player:ann", 100, "unstake", "r")
    await store.commit(entries=[back], guards=[guard("wager_day", 0)])
    assert (
        await store.commit(entries=[stake("s1", "ann", 300)], guards=[guard("wager_day", 0)])
    ).inserted == 0
    today = flow_day(NOON)
    assert await store.player_days("ann", today) == {today: flows(400, -400, 0)}
    assert (await store.audit())["sum"] == 0


async def test_a_guard_holds_a_loss_cap_and_winnings_do_not_raise_it(clocked: Store) -> None:
    store = clocked
    await store.ensure_player("ann", "Ann", 1000)
    cap = [guard("loss_day", 300)]
    await store.commit(entries=[stake("s1", "ann", 300)], guards=cap)
    with pytest.raises(LimitPassed) as refused:
        await store.commit(entries=[stake("s2", "ann", 1, "t2")], guards=cap)
    assert refused.value.remaining == 0
    # The coup is won: 300 back and 300 won, net +300; the loss is 0, never below.
    await store.commit(entries=[hold("r1", "ann", "player", 300)])
    await store.commit(
        entries=[outcome("r1", "ann", "player", 300, "return"), win("r1", "ann", "player", 300)]
    )
    await store.commit(entries=[stake("s3", "ann", 600, "t2")], guards=cap)  # net -300
    with pytest.raises(LimitPassed) as again:
        await store.commit(entries=[stake("s4", "ann", 1, "t3")], guards=cap)
    assert again.value.remaining == 0


async def test_a_guard_holds_a_deposit_cap(clocked: Store) -> None:
    store = clocked
    await store.ensure_player("ann", "Ann", 0)
    cap = [guard("deposit_day", 100)]
    await store.commit(entries=[deposit("d1", "ann", 60)], guards=cap)
    with pytest.raises(LimitPassed) as refused:
        await store.commit(entries=[deposit("d2", "ann", 50)], guards=cap)
    assert (refused.value.kind, refused.value.remaining) == ("deposit_day", 40)
    assert (await store.commit(entries=[deposit("d1", "ann", 60)], guards=cap)).inserted == 0
    # Another player's guard is theirs alone.
    await store.ensure_player("bob", "Bob", 0)
    await store.commit(
        entries=[deposit("b1", "bob", 90)], guards=[guard("deposit_day", 90, player="bob")]
    )
    await store.commit(entries=[deposit("d3", "ann", 40)], guards=cap)


async def test_a_guard_counts_its_window_only(clocked: Store, clock: Clock) -> None:
    store = clocked
    await store.ensure_player("ann", "Ann", 0)
    await store.commit(entries=[deposit("d1", "ann", 80)])
    clock.now += DAY
    today, yesterday = flow_day(clock.now), flow_day(NOON)
    await store.commit(
        entries=[deposit("d2", "ann", 80)], guards=[guard("deposit_day", 100, today)]
    )
    with pytest.raises(LimitPassed):
        await store.commit(
            entries=[deposit("d3", "ann", 1)], guards=[guard("deposit_week", 160, yesterday)]
        )


async def test_racing_commits_never_pass_a_guard_together(clocked: Store) -> None:
    """Eight bets of the whole cap at eight tables at once: exactly one is kept."""
    store = clocked
    await store.ensure_player("ann", "Ann", 100_000)
    cap = [guard("loss_day", 1000), guard("wager_week", 5000, flow_day(NOON - 6 * DAY))]
    results = await asyncio.gather(
        *(
            store.commit(entries=[stake(f"s{n}", "ann", 1000, f"t{n}")], guards=cap)
            for n in range(8)
        ),
        return_exceptions=True,
    )
    assert sum(not isinstance(r, BaseException) for r in results) == 1
    assert all(isinstance(r, LimitPassed) for r in results if isinstance(r, BaseException))
    assert (await store.player_money("ann", [f"t{n}" for n in range(8)])) == (100_000, 99_000)


@pytest.mark.parametrize(
    "bad",
    [
        LimitGuard("", "loss_day", 1, "2026-01-01"),
        LimitGuard("ann", "session", 1, "2026-01-01"),
        LimitGuard("ann", "loss_day", -1, "2026-01-01"),
        LimitGuard("ann", "loss_day", 2**53, "2026-01-01"),
        LimitGuard("ann", "loss_day", 1, "yesterday"),
        ("ann", "loss_day", 1, "2026-01-01"),
    ],
)
async def test_a_bad_guard_is_refused(store: Store, bad: Any) -> None:
    await store.ensure_player("ann", "Ann", 1000)
    with pytest.raises(StoreError):
        await store.commit(entries=[stake("s1", "ann", 10)], guards=[bad])
    assert not await store.has_entry("s1")


async def test_days_from_a_day_on_and_per_player(clocked: Store, clock: Clock) -> None:
    store = clocked
    await store.ensure_player("ann", "Ann", 1000)
    await store.ensure_player("bob", "Bob", 1000)
    first, second = flow_day(NOON), flow_day(NOON + DAY)
    await store.commit(entries=[deposit("a1", "ann", 10), deposit("b1", "bob", 1)])
    clock.now += DAY
    await store.commit(entries=[deposit("a2", "ann", 20)])
    await store.commit(entries=[stake("bs", "bob", 5), hold("r1", "bob", "banker", 5)])
    assert await store.player_days("ann", first) == {
        first: flows(0, 0, 10),
        second: flows(0, 0, 20),
    }
    assert await store.player_days("ann", second) == {second: flows(0, 0, 20)}
    assert await store.player_days("ann", flow_day(NOON + 2 * DAY)) == {}
    assert await store.player_days("bob", first) == {
        first: flows(0, 0, 1),
        second: flows(5, -5, 0),
    }


async def test_a_player_keeps_their_newest_days(clocked: Store, clock: Clock) -> None:
    store = clocked
    await store.ensure_player("ann", "Ann", 1000)
    await store.ensure_player("bob", "Bob", 1000)
    start = clock.now
    for n, offset in enumerate((0, 1, 10, FLOW_DAYS - 1)):
        clock.now = start + offset * DAY
        await store.commit(entries=[deposit(f"a{n}", "ann", 1 + n)])
    await store.commit(entries=[deposit("b0", "bob", 3)])
    assert len(await store.player_days("ann", "2000-01-01")) == 4
    clock.now = start + FLOW_DAYS * DAY  # the first day is now one too many
    await store.commit(entries=[deposit("a9", "ann", 9)])
    kept = await store.player_days("ann", "2000-01-01")
    days = [flow_day(start + offset * DAY) for offset in (1, 10, FLOW_DAYS - 1, FLOW_DAYS)]
    assert list(kept) == days
    assert len(await store.player_days("bob", "2000-01-01")) == 1  # written on its day


async def test_a_refused_first_commit_of_the_day_leaves_the_prune_to_the_next(
    clocked: Store, clock: Clock
) -> None:
    """A player's first commit of a day refused (here by a guard) prunes nothing, and
    their next commit that day still prunes: every store drops the old day alike (the
    SQLite store once counted the refused commit's prune as done, and kept the day)."""
    store = clocked
    await store.ensure_player("ann", "Ann", 1000)
    start = clock.now
    await store.commit(entries=[deposit("a0", "ann", 5)])
    clock.now = start + FLOW_DAYS * DAY  # the first day is now one too many
    guard = LimitGuard("ann", "deposit_day", 1, flow_day(clock.now))
    with pytest.raises(LimitPassed):
        await store.commit(entries=[deposit("a1", "ann", 5)], guards=[guard])
    await store.commit(entries=[deposit("a2", "ann", 7)])
    assert list(await store.player_days("ann", "2000-01-01")) == [flow_day(clock.now)]


@pytest.mark.parametrize("day", ["", "2026-1-01", "2026-13-01", "yesterday", 20260101])
async def test_a_bad_day_is_refused(store: Store, day: Any) -> None:
    with pytest.raises(StoreError):
        await store.player_days("ann", day)


# -- merge_limits, pure ---------------------------------------------------------------

T = 1_800_000_000.0


def limit(
    amount: int, since: float = T, by: str = "player", pending: dict[str, Any] | None = None
) -> dict[str, Any]:
    """A stored limit (with its pending change, if any)."""
    found: dict[str, Any] = {"amount": amount, "since": since, "by": by}
    if pending is not None:
        found["pending"] = pending
    return found


def test_a_new_limit_and_a_lower_one_apply_at_once() -> None:
    kept = merge_limits(None, {"loss_day": 500, "session": 60}, "player", T)
    assert kept == {"loss_day": limit(500), "session": limit(60)}
    lower = merge_limits(kept, {"loss_day": 200}, "player", T + 10)
    assert lower == {"loss_day": limit(200, T + 10), "session": limit(60)}
    assert kept == {"loss_day": limit(500), "session": limit(60)}  # old is not changed


def test_a_raise_waits_for_the_delay() -> None:
    kept = merge_limits(None, {"wager_week": 1000}, "player", T)
    raised = merge_limits(kept, {"wager_week": 5000}, "player", T + 10)
    wait = {"amount": 5000, "from": T + 10 + RAISE_DELAY}
    assert raised == {"wager_week": limit(1000, pending=wait)}
    assert current_limits(raised, T + 10 + RAISE_DELAY - 1) == raised
    due = {"wager_week": limit(5000, T + 10 + RAISE_DELAY)}
    assert current_limits(raised, T + 10 + RAISE_DELAY) == due
    # A merge applies what is due first.
    later = merge_limits(raised, {"session": 30}, "player", T + 2 * RAISE_DELAY)
    assert later == {**due, "session": limit(30, T + 2 * RAISE_DELAY)}


def test_a_newer_raise_replaces_the_pending_one_and_waits_again() -> None:
    kept = merge_limits(None, {"deposit_day": 100}, "player", T)
    first = merge_limits(kept, {"deposit_day": 300}, "player", T + 1)
    second = merge_limits(first, {"deposit_day": 200}, "player", T + 100)
    wait = {"amount": 200, "from": T + 100 + RAISE_DELAY}
    assert second == {"deposit_day": limit(100, pending=wait)}


def test_the_same_amount_or_a_lower_one_drops_the_pending_raise() -> None:
    kept = merge_limits(None, {"loss_month": 100}, "player", T)
    raised = merge_limits(kept, {"loss_month": 300}, "player", T + 1)
    assert merge_limits(raised, {"loss_month": 100}, "player", T + 2) == kept
    assert merge_limits(raised, {"loss_month": 50}, "player", T + 2) == {
        "loss_month": limit(50, T + 2)
    }


def test_a_removal_waits_then_removes() -> None:
    kept = merge_limits(None, {"loss_day": 100, "session": 45}, "player", T)
    removing = merge_limits(kept, {"loss_day": None}, "player", T + 1)
    pending = {"amount": None, "from": T + 1 + RAISE_DELAY}
    assert removing == {"loss_day": limit(100, pending=pending), "session": limit(45)}
    assert current_limits(removing, T + 1 + RAISE_DELAY) == {"session": limit(45)}
    assert merge_limits(None, {"loss_day": None}, "player", T) == {}


def test_an_operator_changes_at_once() -> None:
    kept = merge_limits(None, {"loss_day": 100, "session": 45}, "player", T)
    raised = merge_limits(kept, {"loss_day": 300}, "player", T + 1)
    by = "operator:ops"
    assert merge_limits(raised, {"loss_day": 900}, by, T + 2) == {
        "loss_day": limit(900, T + 2, by),
        "session": limit(45),
    }
    assert merge_limits(raised, {"loss_day": None, "session": 5}, by, T + 2) == {
        "session": limit(5, T + 2, by)
    }
    # And a player's lower one after it applies at once too.
    set_by_ops = merge_limits(None, {"wager_day": 50}, by, T)
    assert merge_limits(set_by_ops, {"wager_day": 40}, "player", T + 1) == {
        "wager_day": limit(40, T + 1)
    }


@pytest.mark.parametrize(
    ("changes", "by"),
    [
        ({"loss_year": 10}, "player"),
        ({"loss_day": True}, "player"),
        ({"loss_day": 1.5}, "player"),
        ({"loss_day": "10"}, "player"),
        ({"loss_day": 0}, "player"),
        ({"loss_day": -5}, "player"),
        ({"loss_day": 2**53}, "player"),
        ({"session": 10, "loss_day": 0}, "player"),
        ({"loss_day": 10}, "operator"),
        ({"loss_day": 10}, ""),
        (["loss_day"], "player"),
    ],
)
def test_bad_changes_are_refused(changes: Any, by: str) -> None:
    with pytest.raises(StoreError):
        merge_limits({"session": limit(10)}, changes, by, T)


#: One change: the kinds changed, to what, by whom, and how long after the last.
changes_st = st.dictionaries(
    st.sampled_from(LIMIT_KINDS), st.one_of(st.none(), st.integers(1, 10_000)), max_size=4
)
step_st = st.tuples(
    changes_st,
    st.sampled_from(["player", "player", "operator:ops"]),
    st.floats(0, 2 * RAISE_DELAY, allow_nan=False),
)


def effective(limits: dict[str, Any], kind: str, when: float) -> float:
    """The amount of ``kind`` in force at ``when`` (no limit: infinity)."""
    found = current_limits(limits, when).get(kind)
    return float("inf") if found is None else float(found["amount"])


@settings(max_examples=300, deadline=None)
@given(
    history=st.lists(step_st, max_size=8),
    change=changes_st,
    later=st.floats(0, RAISE_DELAY - 1),
)
@pytest.mark.slow
def test_a_player_never_loosens_a_limit_before_the_delay(
    history: list[tuple[dict[str, int | None], str, float]],
    change: dict[str, int | None],
    later: float,
) -> None:
    now = T
    old: dict[str, Any] = {}
    for changes, by, gap in history:
        now += gap
        old = merge_limits(old, changes, by, now)
    new = merge_limits(old, change, "player", now)
    assert current_limits(new, now) == new  # no due pending is left in it
    for when in (now, now + later, now + RAISE_DELAY - 1e-3):
        for kind in LIMIT_KINDS:
            assert effective(new, kind, when) <= effective(old, kind, when)
            if kind in change:
                assert effective(new, kind, when) <= effective(old, kind, now)
    for kind, amount in change.items():  # and once it has passed, what the player asked
        asked = float("inf") if amount is None else amount
        assert effective(new, kind, now + RAISE_DELAY) == asked


# -- limits in the stores -----------------------------------------------------------------


async def test_limits_round_trip(clocked: Store, clock: Clock) -> None:
    store = clocked
    assert await store.player_limits("ann", rule=current_limits) == {}
    kept = await store.set_player_limits(
        "ann", {"loss_day": 500, "session": 60}, "player", rule=merge_limits
    )
    assert kept == {"loss_day": limit(500, NOON), "session": limit(60, NOON)}
    assert await store.player_limits("ann", rule=current_limits) == kept
    assert await store.player_limits("bob", rule=current_limits) == {}
    clock.now += 60
    raised = await store.set_player_limits("ann", {"loss_day": 900}, "player", rule=merge_limits)
    pending = {"amount": 900, "from": NOON + 60 + RAISE_DELAY}
    assert raised["loss_day"] == limit(500, NOON, pending=pending)
    assert await store.player_limits("ann", rule=current_limits) == raised
    clock.now = NOON + 60 + RAISE_DELAY  # due: read as applied
    due = {"loss_day": limit(900, NOON + 60 + RAISE_DELAY), "session": limit(60, NOON)}
    assert await store.player_limits("ann", rule=current_limits) == due
    lowered = await store.set_player_limits("ann", {"session": 30}, "player", rule=merge_limits)
    assert lowered == {**due, "session": limit(30, clock.now)}
    by = "operator:ops"
    cleared = await store.set_player_limits(
        "ann", {"loss_day": None, "session": None}, by, rule=merge_limits
    )
    assert cleared == {}
    assert await store.player_limits("ann", rule=current_limits) == {}


async def test_bad_limit_changes_change_nothing(store: Store) -> None:
    kept = await store.set_player_limits("ann", {"wager_day": 100}, "player", rule=merge_limits)
    for changes, by in (({"wager_day": 0}, "player"), ({"nap": 5}, "player"), ({}, "x")):
        with pytest.raises(StoreError):
            await store.set_player_limits("ann", changes, by, rule=merge_limits)
    with pytest.raises(StoreError):  # a good change beside a bad one: neither is kept
        await store.set_player_limits(
            "ann", {"wager_day": 10, "session": False}, "player", rule=merge_limits
        )
    assert await store.player_limits("ann", rule=current_limits) == kept


async def test_concurrent_players_keep_the_lowest(store: Store) -> None:
    await asyncio.gather(
        *(
            store.set_player_limits("ann", {"loss_week": amount}, "player", rule=merge_limits)
            for amount in (500, 100, 300, 700)
        )
    )
    found = await store.player_limits("ann", rule=current_limits)
    assert found["loss_week"]["amount"] == 100


@pytest.mark.parametrize("kind", ["sqlite", "redis"])
async def test_usage_survives_opening_again(
    kind: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    first = make_store(kind, request, tmp_path)
    await first.open()
    await first.ensure_player("ann", "Ann", 100)
    await first.commit(entries=[deposit("d1", "ann", 40)])
    kept = await first.set_player_limits(
        "ann", {"deposit_month": 1000}, "player", rule=merge_limits
    )
    await first.set_player_limits("ann", {"deposit_month": 2000}, "player", rule=merge_limits)
    await first.close()
    again = make_store(kind, request, tmp_path)
    await again.open()
    try:
        found = await again.player_limits("ann", rule=current_limits)
        assert found["deposit_month"]["amount"] == kept["deposit_month"]["amount"]
        assert found["deposit_month"]["pending"]["amount"] == 2000
        today = flow_day(time.time())
        assert await again.player_days("ann", today) == {today: flows(0, 0, 40)}
    finally:
        await again.close()


async def test_a_bets_reads_together_are_the_reads_one_by_one(clocked: Store) -> None:
    """``bet_reads``: the restriction, limits, play session and (with limits) days, as
    each is read alone; no days for a player without limits."""
    store = clocked
    today = flow_day(NOON)
    await store.ensure_player("ann", "Ann", 1000)
    await store.commit(entries=[stake("s1", "ann", 300)])
    bare = await store.bet_reads("ann", today, rule=current_limits)
    assert bare == BetReads(None, {}, None, {})
    await store.set_player_restriction(
        "ann", "break", time.time() + DAY, "player", rule=merge_restriction
    )
    await store.set_player_limits("ann", {"loss_day": 5000}, "player", rule=merge_limits)
    await store.open_play_session("ann", NOON, 900.0, 1800.0, rule=open_play)
    reads = await store.bet_reads("ann", today, rule=current_limits)
    assert reads == BetReads(
        await store.player_restriction("ann"),
        await store.player_limits("ann", rule=current_limits),
        await store.play_session("ann"),
        await store.player_days("ann", today),
    )
    assert reads.restriction is not None and reads.days == {today: flows(300, -300, 0)}


@settings(max_examples=300, deadline=None)
@given(st.floats(min_value=-1e9, max_value=4e9, allow_nan=False))
@example(-1.192092896e-07)  # (the microsecond rounds these into the next day)
@example(86_399.999_999_6)
@example(86_399.999_999_4)
@example(1_780_000_000.0)
def test_a_commits_day_and_cutoff_are_the_calendars(now: float) -> None:
    """``flow_day`` and ``flow_cutoff`` (cached by the day's number and text) say what
    the calendar says, at every moment of a day and across its edges."""
    from datetime import UTC, datetime, timedelta

    from server.ledger.flows import check_day, flow_cutoff

    day = datetime.fromtimestamp(now, UTC)
    assert flow_day(now) == day.strftime("%Y-%m-%d")
    assert flow_cutoff(flow_day(now)) == (day - timedelta(days=FLOW_DAYS - 1)).strftime("%Y-%m-%d")
    assert check_day(flow_day(now)) == flow_day(now)
