"""What the client tests share (``from client_helpers import ...``: pytest's
``pythonpath`` has tests/client): table frames for the pure tests (a snapshot as the
server sends it, events, one whole coup fed through the reducer), and waiting on the
headless app (Textual's pilot)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from textual.pilot import Pilot
from textual.widgets import Static

from client_cli.model import Applied, TableModel, apply_event, reduce
from server.engine.roads import parse_results, roads

if TYPE_CHECKING:
    from client_cli.tui import ChemmyApp

ME = "guest-me"
OTHER = "guest-bo"


def snapshot(seq: int = 10, **over: Any) -> dict[str, Any]:
    snap: dict[str, Any] = {
        "table": "t1",
        "seq": seq,
        "phase": "betting",
        "deadline": 1000.0,
        "options": {
            "name": "Salon",
            "decks": 8,
            "areas": ["player", "banker", "tie", "player_pair", "banker_pair"],
            "limits": {"min": 100, "max": 10000, "tie_max": 1500, "side_max": 1500},
        },
        "shoe": {"no": 1, "commitment": "ab" * 32, "cards_left": 400, "cut": 200},
        "coup_no": 3,
        "holder": OTHER,
        "house_holds": False,
        "offer": None,
        "cutter": None,
        "seats": [
            {
                "seat": 1,
                "player": OTHER,
                "name": "Bo",
                "connected": True,
                "bets": {"banker": 500},
                "done": False,
                "holder": True,
            },
            {
                "seat": 2,
                "player": ME,
                "name": "Me",
                "connected": True,
                "bets": {},
                "done": False,
                "holder": False,
            },
        ],
        "spectators": 1,
        "coup": None,
        "last_result": None,
        "roads": roads(parse_results("BPB")),
        "you": {
            "player": ME,
            "seat": 2,
            "balance": 100000,
            "available": 100000,
            "bets": {},
            "last_bets": {},
        },
    }
    snap.update(over)
    return snap


def ev(seq: int, kind: str, **data: Any) -> dict[str, Any]:
    return {"type": "event", "table": "t1", "seq": seq, "kind": kind, "data": data}


def snap(s: dict[str, Any]) -> dict[str, Any]:
    return {"type": "snapshot", "table": s["table"], "seq": s["seq"], "snapshot": s}


def loaded(s: dict[str, Any] | None = None, me: str | None = None) -> TableModel:
    return reduce(TableModel(me=me), snap(s or snapshot()))


def play_a_coup(m: TableModel) -> TableModel:
    seq = m.seq or 0

    def nxt(kind: str, **data: Any) -> None:
        nonlocal seq, m
        seq += 1
        m, applied = apply_event(m, ev(seq, kind, **data))
        assert applied is Applied.APPLIED, kind

    def bend(**data: Any) -> None:  # a progress message: no seq of its own
        nonlocal m
        m = reduce(m, {"type": "progress", "table": "t1", "seq": seq, **data})

    nxt("bets", player=ME, seat=2, bets={"player": 1000}, change="place", available=99000)
    nxt("done", player=ME)
    nxt(
        "betting_closed",
        round_id="t1-1-3",
        bets={ME: {"player": 1000}, OTHER: {"banker": 500}},
        totals={},
        balance=99000,
    )
    nxt("dealt", round_id="t1-1-3", player=2, banker=2, turners={"player": ME, "banker": OTHER})
    assert m.phase == "turn" and m.coup is not None and m.coup.player[0].card is None
    # (the server's private overlay: what ME may do now, on a step's last event)
    squeeze = {"hand": "player", "styles": ["peek", "side", "quick"]}
    nxt(
        "turn",
        hand="player",
        turner=ME,
        third=False,
        deadline=2000.0,
        actions={"toss": {"hand": "player"}, "squeeze": squeeze},
    )
    assert m.my_turn == "player" and "Your turn" in m.message
    nxt(
        "squeeze",
        hand="player",
        style="peek",
        turner=ME,
        cards={"1": "9h", "2": "Kd"},
        actions={
            "toss": {"hand": "player"},
            "turn": {"hand": "player", "cards": [1, 2]},
            "progress": {"hand": "player", "cards": [1, 2]},
        },
    )
    assert m.coup.private == {("player", 1): "9h", ("player", 2): "Kd"}
    assert m.coup.seen("player", 1) == "9h" and m.coup.player[0].card is None  # still face down
    bend(hand="player", card=1, percent=50, turner=ME)
    assert m.coup.progress[("player", 1)] == 50
    nxt("card", hand="player", index=1, card="9h", by=ME, on_behalf=None, total=9)
    nxt("card", hand="player", index=2, card="Kd", by=ME, on_behalf=None, total=9, actions={})
    assert m.my_turn is None and m.coup is not None and m.coup.total("player") == 9
    nxt("turn", hand="banker", turner=OTHER, third=False, deadline=2001.0)
    assert m.my_turn is None and "Bo turns the Banker cards" in m.message
    nxt("squeeze", hand="banker", style="side", turner=OTHER)
    bend(hand="banker", card=2, percent=40, turner=OTHER)
    nxt("card", hand="banker", index=1, card="3c", by=OTHER, on_behalf=None, total=3)
    nxt("card", hand="banker", index=2, card="4c", by="croupier", on_behalf=OTHER, total=7)
    nxt(
        "result",
        round_id="t1-1-3",
        coup_no=3,
        player=["9h", "Kd"],
        banker=["3c", "4c"],
        player_total=9,
        banker_total=7,
        outcome="player",
        natural=True,
        player_pair=False,
        banker_pair=False,
    )
    assert m.message == "Player wins 9 to 7 (natural)"
    nxt("settled", round_id="t1-1-3", payouts=[], balance=101000, net=1000)
    return m


# ---------------------------------------------------------------------------- the headless app


async def until(
    pilot: Pilot[Any], cond: Callable[[], object], what: str, timeout: float = 10.0
) -> None:
    """Let the app run until ``cond()`` holds; fail after ``timeout`` s, saying where the
    table was."""
    end = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > end:
            model = getattr(pilot.app, "model", None)
            state = f"phase={model.phase} message={model.message!r}" if model else "no model"
            raise AssertionError(f"timed out waiting for {what} ({state})")
        await pilot.pause(0.05)


def model_of(app: ChemmyApp) -> TableModel:
    """The app's model now (a new value after every item the server sends)."""
    assert app.model is not None
    return app.model


def text_of(app: ChemmyApp, selector: str) -> str:
    return str(app.screen.query_one(selector, Static).render())


async def at_table(pilot: Pilot[Any], app: ChemmyApp) -> None:
    """Wait for the table screen, mounted, with the table's snapshot in the model."""
    from client_cli.tui import TableScreen

    await until(
        pilot,
        lambda: (
            isinstance(app.screen, TableScreen)
            and app.screen.is_mounted
            and app.model is not None
            and app.model.seq is not None
        ),
        "the table",
    )
