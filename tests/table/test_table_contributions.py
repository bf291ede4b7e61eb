"""The players' contributions at the table: commit until the cut, reveal after it
(docs/fairness.md §9, issue 24). Pure: the harness's clock, no I/O.

Every refusal changes nothing (``TableHarness.refuse`` checks the whole state and the
money); the reveal step is the table's REVEAL phase with its own timer; the stored state
carries a window or a reveal across a restart.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pytest
from table_helpers import TableHarness

from server.engine.shoe import (
    Shoe,
    commitment,
    contribution_key,
    shuffle_order,
    timeout_cut,
    verify,
)
from server.table import Table, TableOptions, Timers
from server.table.table import Phase
from server.table.views import view
from server.vocabulary import commands as c

ROOT = Path(__file__).resolve().parents[2]
SEED = bytes(range(32))
VALUES = {"ann": b"\x11" * 32, "bob": b"\x22" * 32, "cy": b"\x33" * 32}


def commit_of(name: str) -> str:
    return hashlib.sha256(VALUES[name]).hexdigest()


def table(
    players: tuple[str, ...] = ("ann", "bob", "cy"), *, cut_timer: float = 15.0
) -> TableHarness:
    """Seated ``players``, a seeded 8-deck shoe, the house holding it: the CUT phase
    (the first seated player cuts)."""
    h = TableHarness(TableOptions(timers=Timers(cut=cut_timer, reveal=5.0)))
    h.seat(players)
    h.start(seed=SEED)
    for _ in players:
        if h.table.offer is not None:
            h.decline(h.table.offer.current)
    assert h.phase is Phase.CUT
    return h


def commit(h: TableHarness, name: str) -> None:
    h.do(c.Contribute(player=name, commitment=commit_of(name)))


def reveal(h: TableHarness, name: str) -> None:
    h.do(c.Contribute(player=name, value=VALUES[name].hex()))


def test_three_commit_reveal_and_the_shoe_is_the_keys() -> None:
    h = table()
    for name in ("cy", "ann", "bob"):
        commit(h, name)
        assert h.one("contribution_committed", h.last).data == {
            "player": name,
            "commitment": commit_of(name),
        }
    h.do(c.Cut(player="ann", position=100))
    opened = h.one("reveal_opened", h.last).data
    assert opened == {
        "deadline": h.now + 5.0,
        "players": ["cy", "ann", "bob"],
        "cut": 100,
        "cutter": "ann",
    }
    assert h.phase is Phase.REVEAL and h.table.shoe is not None and h.table.shoe.cut is None
    assert h.table.actions("ann")["contribute"] == {"step": "reveal"}
    reveal(h, "bob")
    reveal(h, "ann")
    assert h.phase is Phase.REVEAL
    reveal(h, "cy")  # the last: closed at once, then the cut, the burn, betting
    kinds = h.kinds(h.last)
    assert kinds[:4] == ["contribution_revealed", "contributions_closed", "shoe_cut", "burned"]
    closed = h.one("contributions_closed", h.last).data
    assert closed == {
        "contributions": [{"player": n, "value": VALUES[n].hex()} for n in ("bob", "ann", "cy")],
        "withheld": [],
    }
    assert h.phase is Phase.BETTING
    key = contribution_key(SEED, VALUES.values())
    shoe = h.table.shoe
    assert shoe is not None and shoe.key == key
    expected = shuffle_order(key, 8)
    assert shoe.cards == expected[100:] + expected[:100]
    assert "contribute" not in h.table.actions("ann")


def test_commitments_are_listed_while_open_and_shown_in_the_snapshot() -> None:
    h = table()
    assert h.table.actions("bob")["contribute"] == {"step": "commit"}
    commit(h, "bob")
    assert "contribute" not in h.table.actions("bob")  # committed already
    assert h.table.actions("ann")["contribute"] == {"step": "commit"}
    snap = h.table.to_state()  # (the stored state has them)
    assert snap["contributions"]["commitments"] == {"bob": commit_of("bob")}
    seen = view(h.table, "ann")["shoe"]["contributions"]
    assert seen == [{"player": "bob", "commitment": commit_of("bob"), "value": None}]


def test_refusals_change_nothing() -> None:
    h = table(("ann", "bob"))
    h.join("spec")
    h.refuse(c.Contribute(player="spec", commitment=commit_of("cy")), "not_seated")
    h.refuse(c.Contribute(player="zed", commitment=commit_of("cy")), "not_joined")
    commit(h, "ann")
    h.refuse(c.Contribute(player="ann", commitment=commit_of("cy")), "already_contributed")
    h.refuse(c.Contribute(player="bob", commitment=commit_of("ann")), "contribution_taken")
    h.refuse(c.Contribute(player="ann", value=VALUES["ann"].hex()), "too_early")
    for bad in ("", "ab", "0" * 63, "0" * 65, "A" * 64, "g" * 64, "0" * 1000):
        h.malformed(lambda bad=bad: c.Contribute(player="bob", commitment=bad), "bad_contribution")
        h.malformed(lambda bad=bad: c.Contribute(player="bob", value=bad), "bad_contribution")
    h.malformed(lambda: c.Contribute(player="bob"), "bad_contribution")
    h.malformed(
        lambda: c.Contribute(player="bob", commitment="0" * 64, value="0" * 64), "bad_contribution"
    )
    h.malformed(lambda: c.Contribute(player="bob", commitment=5), "bad_contribution")  # type: ignore[arg-type]
    h.do(c.Cut(player="ann", position=100))
    assert h.phase is Phase.REVEAL
    # the commitments closed with the cut
    h.refuse(c.Contribute(player="bob", commitment=commit_of("bob")), "contributions_closed")
    h.refuse(c.Contribute(player="bob", value=VALUES["bob"].hex()), "no_commitment")
    h.refuse(c.Contribute(player="ann", value=VALUES["bob"].hex()), "reveal_mismatch")
    h.refuse(c.Cut(player="ann", position=120), "wrong_phase")
    reveal(h, "ann")
    assert h.phase is Phase.BETTING
    h.refuse(c.Contribute(player="ann", value=VALUES["ann"].hex()), "contributions_closed")
    h.refuse(c.Contribute(player="bob", commitment=commit_of("bob")), "contributions_closed")


def test_a_stacked_shoe_takes_no_contribution() -> None:
    h = TableHarness()
    h.seat(["ann"])
    h.start(["Ks", "9s", "Th", "Kd"] * 10)
    assert "contribute" not in h.table.actions("ann")
    h.refuse(c.Contribute(player="ann", commitment=commit_of("ann")), "contributions_closed")


def test_a_repeated_reveal_is_refused() -> None:
    h = table(("ann", "bob"))
    commit(h, "ann")
    commit(h, "bob")
    h.do(c.Cut(player="ann", position=100))
    reveal(h, "ann")
    h.refuse(c.Contribute(player="ann", value=VALUES["ann"].hex()), "already_revealed")


def test_the_reveal_timer_withholds_who_did_not_reveal() -> None:
    h = table()
    for name in ("ann", "bob", "cy"):
        commit(h, name)
    h.do(c.Cut(player="ann", position=100))
    reveal(h, "ann")
    h.do(c.Tick(), 4.9)
    assert h.phase is Phase.REVEAL and h.table.next_deadline == pytest.approx(h.now + 0.1)
    h.do(c.Tick(), 0.1)
    closed = h.one("contributions_closed", h.last).data
    assert closed == {
        "contributions": [{"player": "ann", "value": VALUES["ann"].hex()}],
        "withheld": ["bob", "cy"],
    }
    assert h.phase is Phase.BETTING
    shoe = h.table.shoe
    assert shoe is not None and shoe.key == contribution_key(SEED, [VALUES["ann"]])


def test_nobody_revealing_is_the_seeds_shoe() -> None:
    h = table(("ann", "bob"))
    commit(h, "bob")
    h.do(c.Cut(player="ann", position=100))
    h.do(c.Tick(), 5)
    assert h.one("contributions_closed", h.last).data == {"contributions": [], "withheld": ["bob"]}
    shoe = h.table.shoe
    assert shoe is not None and shoe.key is None
    order = shuffle_order(SEED, 8)
    assert shoe.cards == order[100:] + order[:100]


def test_no_commitment_is_exactly_as_before() -> None:
    h = table(("ann", "bob"))
    h.do(c.Cut(player="ann", position=100))
    assert h.kinds(h.last)[:2] == ["shoe_cut", "burned"]
    assert "reveal_opened" not in h.kinds()
    order = shuffle_order(SEED, 8)
    assert h.table.shoe is not None and h.table.shoe.cards == order[100:] + order[:100]


def test_a_timeout_cut_comes_from_the_key() -> None:
    h = table(("ann", "bob"), cut_timer=15.0)
    commit(h, "ann")
    commit(h, "bob")
    h.do(c.Tick(), 15)  # the cut times out: the commitments close, the reveal opens
    assert h.phase is Phase.REVEAL and "shoe_cut" not in h.kinds(h.last)
    reveal(h, "bob")
    reveal(h, "ann")
    key = contribution_key(SEED, [VALUES["ann"], VALUES["bob"]])
    cut = h.one("shoe_cut", h.last).data
    assert cut == {"position": timeout_cut(key, 416), "by": "croupier", "on_behalf": "ann"}
    assert cut["position"] != timeout_cut(SEED, 416)


def test_everyone_standing_up_does_not_stop_the_reveal() -> None:
    h = table(("ann", "bob"))
    commit(h, "ann")
    commit(h, "bob")
    h.do(c.Cut(player="ann", position=100))
    h.do(c.Stand(player="bob"))
    reveal(h, "bob")  # stood up: still at the table, still reveals
    h.do(c.Stand(player="ann"))
    h.do(c.Tick(), 5)
    assert h.one("contributions_closed", h.last).data["withheld"] == ["ann"]
    assert h.phase is Phase.WAITING and h.table.shoe is not None and h.table.shoe.cut == 100


@pytest.mark.parametrize("moment", ["window", "reveal"])
def test_the_stored_state_keeps_the_contributions_across_a_restart(moment: str) -> None:
    h = table()
    commit(h, "ann")
    commit(h, "bob")
    if moment == "reveal":
        h.do(c.Cut(player="ann", position=100))
        reveal(h, "ann")
    state = json.loads(json.dumps(h.table.to_state(spectators=False)))
    back = Table.from_state(state, h.wallet)
    assert back.to_state() == h.table.to_state(spectators=False)
    h.table = back
    h.do(c.Restored())
    for name in ("ann", "bob", "cy"):
        h.do(c.Reconnect(player=name))
    if moment == "window":
        h.refuse(c.Contribute(player="ann", commitment=commit_of("cy")), "already_contributed")
        commit(h, "cy")
        h.do(c.Cut(player="ann", position=100))
        reveal(h, "ann")
        reveal(h, "cy")
    assert h.phase is Phase.REVEAL
    reveal(h, "bob")
    assert h.phase is Phase.BETTING


def test_a_state_stored_before_contributions_loads() -> None:
    h = table()
    state = h.table.to_state()
    del state["contributions"]
    back = Table.from_state(state, h.wallet)
    assert back.contributions is not None and not back.contributions.closed
    h.do(c.Cut(player="ann", position=100))
    state = h.table.to_state()
    del state["contributions"]
    del state["shoe"]["key"]
    back = Table.from_state(state, h.wallet)
    assert back.contributions is not None and back.contributions.closed


def _play_out(h: TableHarness) -> dict[str, object]:
    shoes = h.table.shoe_no
    while h.table.shoe_no == shoes and h.table.shoe is not None:
        t = h.table
        if t.offer is not None:
            h.accept(t.offer.current)
        elif t.phase is Phase.BETTING:
            h.play_coup({"bob": {"player": 100}})
        else:  # pragma: no cover - the walk never stops elsewhere
            raise AssertionError(t.phase)
    records = [r for r in h.table.drain_records() if r.get("kind") == "shoe"]
    assert len(records) == 1
    return records[0]


def test_a_whole_shoe_with_contributions_verifies() -> None:
    h = TableHarness(TableOptions(decks=6, timers=Timers(reveal=5.0), stop_offset=100))
    h.seat(["ann", "bob", "cy"])
    h.start(seed=SEED)
    h.accept("ann")
    for name in ("ann", "bob", "cy"):
        commit(h, name)
    h.do(c.Cut(player="ann", position=60))
    reveal(h, "cy")
    reveal(h, "ann")
    h.do(c.Tick(), 5)  # bob withholds
    record = _play_out(h)
    assert record["contributions"] == [
        {"player": "ann", "commitment": commit_of("ann"), "value": VALUES["ann"].hex()},
        {"player": "bob", "commitment": commit_of("bob"), "value": None},
        {"player": "cy", "commitment": commit_of("cy"), "value": VALUES["cy"].hex()},
    ]
    assert record["withheld"] == ["bob"]
    report = verify(record)
    assert report.ok and report.contributions == 2, str(report)
    assert commitment(SEED) == record["commitment"]
    # the same record without the contributions does not verify: they made the order
    assert not verify({**record, "contributions": [], "withheld": []}).ok
    shoe = Shoe.from_seed(SEED, 6)
    shoe.mix([VALUES["cy"], VALUES["ann"]])
    shoe.apply_cut(60)
    first = record["coups"][0]
    burn = 1 + int(record["burned"])
    assert shoe.cards[burn : burn + 4] == [
        first["player"][0],
        first["banker"][0],
        first["player"][1],
        first["banker"][1],
    ]


def test_a_snapshot_in_the_reveal_shows_the_cut_made_and_whose() -> None:
    """§7: in the reveal the shoe is cut (the cut applied once it is over): a snapshot
    says where and whose, as ``reveal_opened`` did; a timeout cut's place is the key's,
    not known before the reveal is over (issue 33 point 14)."""
    h = table(("ann", "bob"))
    commit(h, "bob")
    h.do(c.Cut(player="ann", position=100))
    snap = view(h.table, "bob")
    assert snap["phase"] == "reveal"
    assert (snap["shoe"]["cut"], snap["cutter"]) == (100, "ann")
    opened = h.one("reveal_opened", h.last).data
    assert (opened["cut"], opened["cutter"]) == (100, "ann")
    reveal(h, "bob")  # applied: the snapshot's cut is the shoe's own from now on
    snap = view(h.table, "bob")
    assert (snap["phase"], snap["shoe"]["cut"], snap["cutter"]) == ("betting", 100, None)

    timed = table(("ann", "bob"))
    commit(timed, "bob")
    timed.do(c.Tick(), 15)  # the cut times out: the croupier's, on ann's behalf
    snap = view(timed.table, None)
    assert (snap["phase"], snap["shoe"]["cut"], snap["cutter"]) == ("reveal", None, "ann")
    opened = timed.one("reveal_opened", timed.last).data
    assert (opened["cut"], opened["cutter"]) == (None, "ann")


def test_one_who_stood_up_after_committing_is_told_to_reveal_and_when_it_is_over() -> None:
    """fairness.md §9: a committed player who stood up before the cut still reveals; the
    ``actions`` of their copy of ``reveal_opened`` say so (a client never derives a rule),
    and their copy of the step that ends it for them takes it away."""
    h = table(("ann", "bob", "cy"))
    commit(h, "bob")
    commit(h, "cy")
    h.do(c.Stand(player="bob"))
    h.do(c.Stand(player="cy"))
    assert h.table.players["bob"].seat is None
    h.do(c.Cut(player="ann", position=100))
    last = h.last[-1]
    assert last.private is not None
    assert last.private["bob"]["actions"] == {
        **h.table.actions("bob"),
        "contribute": {"step": "reveal"},
    }
    assert last.private["cy"]["actions"]["contribute"] == {"step": "reveal"}
    h.join("dan")
    h.do(c.Sit(player="dan", seat=5))  # a seat taken: the spectators' sit choices change
    assert h.last[-1].private is not None
    assert h.last[-1].private["bob"]["actions"] == h.table.actions("bob")
    reveal(h, "bob")
    assert h.last[-1].private is not None
    assert h.last[-1].private["bob"]["actions"] == h.table.actions("bob")
    assert "contribute" not in h.table.actions("bob")
    h.do(c.Tick(), 5)  # cy withholds: the reveal is over, and so is her step
    assert h.last[-1].private is not None
    assert h.last[-1].private["cy"]["actions"] == h.table.actions("cy")
    assert "contribute" not in h.table.actions("cy")


def test_one_back_after_a_restart_in_the_reveal_hears_that_it_is_over_for_them() -> None:
    h = table(("ann", "bob"))
    commit(h, "bob")
    h.do(c.Stand(player="bob"))
    h.do(c.Cut(player="ann", position=100))
    state = json.loads(json.dumps(h.table.to_state(spectators=False)))
    h.table = Table.from_state(state, h.wallet)  # a restart: spectators are gone...
    h.do(c.Restored())
    h.do(c.Join(player="bob", name="Bob", rejoin=True))  # ... until they join again
    assert view(h.table, "bob")["you"]["actions"]["contribute"] == {"step": "reveal"}
    reveal(h, "bob")
    assert h.last[-1].private is not None
    assert h.last[-1].private["bob"]["actions"] == h.table.actions("bob")
    assert "contribute" not in h.table.actions("bob")


def documented_order(step: str) -> list[str]:
    """The order docs/protocol.md §6 ``contribute`` gives the refusals of a ``step``
    (``commitment`` or ``value``) where two could apply."""
    text = (ROOT / "docs" / "protocol.md").read_text(encoding="utf-8")
    section = " ".join(text[text.index("### contribute") : text.index("### squeeze")].split())
    found = re.search(rf"for a `{step}`, ((?:`\w+`(?:, | \(|;|\.))+)", section)
    assert found, f"the order of a {step}'s refusals is not written"
    return re.findall(r"`(\w+)`", found.group(1))


def test_the_order_of_the_contribute_refusals_is_the_documented_one() -> None:
    """Where two refusals could apply, the first of the documented order is given: who
    (at the table; seated, for a commitment), then when (closed, too early), then what
    they sent before (committed, revealed), then the value itself (taken, mismatch)."""
    assert documented_order("commitment") == [
        "not_joined",
        "not_seated",
        "contributions_closed",
        "already_contributed",
        "contribution_taken",
    ]
    assert documented_order("value") == [
        "not_joined",
        "contributions_closed",
        "too_early",
        "no_commitment",
        "already_revealed",
        "reveal_mismatch",
    ]
    h = table(("ann", "bob", "cy"))
    h.join("spec")
    commit(h, "ann")
    commit(h, "cy")
    # not_joined first (a stranger's value is too early, and they committed nothing)
    h.refuse(c.Contribute(player="zed", value=VALUES["cy"].hex()), "not_joined")
    # a spectator whose commitment is taken: not_seated
    h.refuse(c.Contribute(player="spec", commitment=commit_of("ann")), "not_seated")
    # one who committed, stood up and commits again: not_seated, not already_contributed
    h.do(c.Stand(player="cy"))
    h.refuse(c.Contribute(player="cy", commitment=commit_of("bob")), "not_seated")
    # committed, sending another's: already_contributed before contribution_taken
    commit(h, "bob")
    h.refuse(c.Contribute(player="bob", commitment=commit_of("ann")), "already_contributed")
    # a value too early from one who never committed: too_early before no_commitment
    h.join("dan")
    h.refuse(c.Contribute(player="dan", value=VALUES["cy"].hex()), "too_early")
    h.do(c.Cut(player="ann", position=100))
    # after the cut: a spectator committing: not_seated before contributions_closed
    h.refuse(
        c.Contribute(player="spec", commitment=hashlib.sha256(b"spec").hexdigest()), "not_seated"
    )
    # one who committed commits again: contributions_closed before already_contributed
    h.refuse(c.Contribute(player="ann", commitment=commit_of("ann")), "contributions_closed")
    reveal(h, "ann")
    # revealed, sending a wrong value: already_revealed before reveal_mismatch
    h.refuse(c.Contribute(player="ann", value=VALUES["cy"].hex()), "already_revealed")
    reveal(h, "bob")
    reveal(h, "cy")  # the last: the reveal is over
    # after it: contributions_closed before too_early, no_commitment, already_revealed
    h.refuse(c.Contribute(player="ann", value=VALUES["ann"].hex()), "contributions_closed")
    h.refuse(c.Contribute(player="dan", value=VALUES["cy"].hex()), "contributions_closed")
