"""A player who stops play (a break, a self-exclusion, ``leave`` at a reality check) is
stood up on their behalf: the gateway's ``Stand(on_break=True)`` (issue 33 point 3).

With no wager of theirs in play they stand at once. With their wager, or the shoe they
hold, in the coup being dealt (or debited), the table does not refuse it
(``wager_in_play``, which the gateway never tried again) but remembers it in the
player's state (``on_break``, stored, so a restart keeps it) and stands them once the
coup is settled, voided or their debit refused, before the shoe is offered to anyone:
a player on a break is never offered the shoe. Their own copy of ``stood`` (and of
``stand_after_coup``) says ``reason`` ``break``; everyone else's says ``stood``.
"""

from __future__ import annotations

import json

from table_helpers import BANKER_WIN, PLAYER_WIN, TableHarness, stack

from server.table import MemoryWallet, Table, view_event
from server.table.table import Phase
from server.vocabulary import commands as c
from server.vocabulary.events import Event


def _break(player: str) -> c.Stand:
    return c.Stand(player=player, on_break=True)


def _reason(event: Event, viewer: str | None) -> str:
    return str(view_event(event, viewer)["data"]["reason"])


def _restarted(h: TableHarness) -> None:
    """The table rebuilt from its stored state (as JSON), as after a restart."""
    state = json.loads(json.dumps(h.table.to_state(spectators=False)))
    h.table = Table.from_state(state, h.wallet)


def test_a_break_mid_coup_waits_for_the_settlement_and_the_shoe_skips_them() -> None:
    h = TableHarness()
    # cat holds the shoe; a Player win passes it to the seat after hers: ann's (seat 1)
    h.setup({"ann": 1, "bob": 2, "cat": 3}, stack(PLAYER_WIN, BANKER_WIN), holder="cat")
    h.bet("ann", "player", 500)  # ann turns the Player hand
    h.bet("cat", "banker", 100)
    h.done_all()
    assert h.table.coup is not None
    before = h.available("ann")
    h.refuse(c.Stand(player="ann"), "wager_in_play")  # her own stand still waits

    evs = h.do(_break("ann"))
    (after,) = evs
    assert after.kind == "stand_after_coup" and after.data == {"player": "ann", "seat": 1}
    assert _reason(after, "ann") == "break" and "reason" not in view_event(after, "bob")["data"]
    assert h.table.players["ann"].seat == 1 and h.table.players["ann"].on_break
    h.do(_break("ann"))  # sent again (another table's relay, a retry): nothing changes
    assert h.last == [] and h.step is not None and h.step.duplicate

    _restarted(h)  # kept in the stored state: a restart (or a failover) remembers it
    assert h.table.players["ann"].on_break
    start = len(h.events)
    h.turn_all()  # she turns her cards: her wager plays out; Player wins
    evs = h.events[start:]
    kinds = h.kinds(evs)
    stood = h.one("stood", evs)
    assert stood.data["player"] == "ann" and stood.data["reason"] == "stood"  # everyone's
    assert _reason(stood, "ann") == "break" and _reason(stood, "bob") == "stood"
    assert kinds.index("settled") < kinds.index("stood") < kinds.index("shoe_offered")
    assert [e.data["player"] for e in h.find("shoe_offered", evs)] == ["bob"]  # not ann
    assert h.available("ann") == before + 1000  # paid: 500 back and 500 won
    ann = h.table.players["ann"]
    assert ann.seat is None and not ann.on_break
    assert set(h.table.actions("ann")) == {"sit", "leave"}  # (the gateway refuses the sit)
    h.refuse(c.AcceptShoe(player="ann"), "not_seated")
    h.accept("bob")
    assert h.table.holder == "bob" and h.phase is Phase.BETTING


def test_a_break_with_no_wager_in_play_stands_them_at_once() -> None:
    h = TableHarness()
    h.setup({"ann": 1, "bob": 2}, stack(BANKER_WIN, BANKER_WIN), holder="bob")
    h.bet("ann", "banker", 300)  # placed, not held: it comes back
    evs = h.do(_break("ann"))
    assert h.kinds(evs) == ["stood"]
    stood = h.one("stood", evs)
    assert _reason(stood, "ann") == "break" and _reason(stood, None) == "stood"
    assert h.table.players["ann"].seat is None and h.stake("ann") == 0
    h.refuse(_break("ann"), "not_seated")  # a table where they have no seat: unheard


def test_the_holder_on_a_break_keeps_the_shoe_until_the_coup_is_settled() -> None:
    h = TableHarness()
    h.setup({"ann": 1, "bob": 2}, stack(BANKER_WIN, BANKER_WIN), holder="ann")
    h.bet("bob", "banker", 500)
    h.done_all()  # ann holds the shoe: it is in the coup though she bet nothing
    (after,) = h.do(_break("ann"))
    assert after.kind == "stand_after_coup" and h.table.holder == "ann"
    evs = h.turn_all()  # Banker wins: a holder keeps the shoe, but ann gets up
    kinds = h.kinds(evs)
    assert kinds.index("stood") < kinds.index("shoe_passed") < kinds.index("shoe_offered")
    assert h.one("shoe_passed", evs).data == {"player": "ann", "reason": "stood"}
    assert h.one("shoe_offered", evs).data["player"] == "bob"


def test_a_refused_debit_frees_a_player_on_a_break_at_once() -> None:
    h = TableHarness(wallet=MemoryWallet(confirms_holds=True))
    h.setup({"ann": 1, "bob": 2}, stack(BANKER_WIN, BANKER_WIN), holder="bob")
    h.bet("ann", "player", 500)
    h.bet("bob", "banker", 500)
    h.done_all()
    assert h.phase is Phase.DEBITING
    assert h.kinds(h.do(_break("ann"))) == ["stand_after_coup"]
    evs = h.do(c.Debited(round_id=h.table.round_id, refused={"ann": "insufficient_funds"}))
    kinds = h.kinds(evs)
    assert kinds.index("debit_refused") < kinds.index("stood") < kinds.index("dealt")
    assert h.table.players["ann"].seat is None and h.stake("ann") == 0
    assert h.table.coup is not None and set(h.table.coup.held) == {"bob"}


def test_a_voided_round_frees_a_player_on_a_break() -> None:
    h = TableHarness()
    h.setup({"ann": 1, "bob": 2}, stack(BANKER_WIN, BANKER_WIN), holder="bob")
    h.bet("ann", "player", 500)
    h.done_all()
    h.do(_break("ann"))
    before = h.available("ann")
    evs = h.do(c.VoidRound(round_id=h.table.round_id, reason="the reader failed"))
    assert h.kinds(evs).index("voided") < h.kinds(evs).index("stood")
    assert h.available("ann") == before + 500  # her wager came back, and she stood
    assert h.table.players["ann"].seat is None


def test_on_break_is_true_or_false() -> None:
    TableHarness.malformed(lambda: c.Stand(player="ann", on_break=1), "bad_command")  # type: ignore[arg-type]
