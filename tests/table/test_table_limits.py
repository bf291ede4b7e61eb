"""A player's own wager and loss limits at the table (issue 21): the gateway finds what
the nearest one leaves for new chips (the ``allowance``: the chips already on the felt,
here and at other tables, are counted in it), the table refuses chips added past it.
Pure."""

from __future__ import annotations

import pytest
from table_helpers import BANKER_WIN, PLAYER_WIN, TableHarness, stack

from server.table import TableError, TableOptions
from server.vocabulary import commands as c


def _harness(options: TableOptions | None = None) -> TableHarness:
    h = TableHarness(options=options) if options is not None else TableHarness()
    h.setup({"alice": 1, "bob": 2}, stack(BANKER_WIN, PLAYER_WIN), holder="alice")
    return h


def _allow(remaining: int, kind: str = "loss_day", amount: int = 5000) -> dict[str, object]:
    return {"kind": kind, "amount": amount, "remaining": remaining}


def test_a_bet_exactly_at_what_the_limit_leaves_is_taken() -> None:
    h = _harness()
    h.do(c.PlaceBet(player="bob", area="player", amount=1200, allowance=_allow(1200)))
    assert h.stake("bob") == 1200


def test_one_minor_unit_over_is_refused_with_the_limit_and_what_remains() -> None:
    h = _harness()
    before = h.snapshot()
    err = h.refuse(
        c.PlaceBet(player="bob", area="player", amount=1201, allowance=_allow(1200)),
        "limit_reached",
    )
    assert err.details == {"limit": {"kind": "loss_day", "amount": 5000, "remaining": 1200}}
    assert err.message == "that would pass your daily loss limit of 50.00: 12.00 remains"
    assert err.to_dict()["limit"]["remaining"] == 1200
    assert h.snapshot() == before  # nothing changed


def test_the_allowance_is_for_the_chips_added() -> None:
    h = _harness()
    h.do(c.PlaceBet(player="bob", area="player", amount=800, allowance=_allow(1000)))
    # The next read counts the 800 on the felt: 200 left for new chips.
    err = h.refuse(
        c.PlaceBet(player="bob", area="tie", amount=300, allowance=_allow(200)), "limit_reached"
    )
    assert err.details["limit"]["remaining"] == 200
    h.do(c.PlaceBet(player="bob", area="tie", amount=200, allowance=_allow(200)))
    assert h.stake("bob") == 1000


def test_a_limit_lowered_below_the_chips_placed_refuses_more_but_keeps_them() -> None:
    h = _harness()
    h.do(c.PlaceBet(player="bob", area="player", amount=1000))
    err = h.refuse(  # a limit of 5000 lowered to 500: 500 - 1000 on the felt
        c.PlaceBet(player="bob", area="player", amount=100, allowance=_allow(-500, amount=500)),
        "limit_reached",
    )
    assert err.details["limit"]["remaining"] == 0
    assert h.stake("bob") == 1000  # what is on the felt stays; removing it is allowed
    h.do(c.RemoveBet(player="bob", area="player", amount=600))
    assert h.stake("bob") == 400


def test_same_bet_is_held_to_the_allowance_too() -> None:
    h = _harness()
    h.play_coup({"alice": {"banker": 1000}, "bob": {"player": 700}})
    err = h.refuse(c.SameBet(player="bob", allowance=_allow(699, "wager_week")), "limit_reached")
    assert err.message == "that would pass your weekly wager limit of 50.00: 6.99 remains"
    h.do(c.SameBet(player="bob", allowance=_allow(700, "wager_week")))
    assert h.stake("bob") == 700


def test_the_message_is_in_the_tables_currency() -> None:
    h = _harness(TableOptions.from_dict({"currency": "JPY", "tier": "1-100"}))
    err = h.refuse(
        c.PlaceBet(player="bob", area="player", amount=600, allowance=_allow(500, amount=5000)),
        "limit_reached",
    )
    assert err.message == "that would pass your daily loss limit of 5,000: 500 remains"


@pytest.mark.parametrize(
    "allowance",
    [
        {"kind": "loss_day", "amount": 5000},
        {"kind": 3, "amount": 5000, "remaining": 1},
        {"kind": "loss_day", "amount": "5000", "remaining": 1},
        {"kind": "loss_day", "amount": 5000, "remaining": True},
        [1, 2, 3],
    ],
)
def test_a_malformed_allowance_is_a_bad_command(allowance: object) -> None:
    with pytest.raises(TableError) as caught:
        c.PlaceBet(player="bob", area="player", amount=100, allowance=allowance)  # type: ignore[arg-type]
    assert caught.value.code == "bad_command"
