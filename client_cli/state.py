"""The client's model of one table: a join snapshot, then events applied in ``seq`` order.

:class:`TableModel` is pure (no I/O, no clock): :meth:`TableModel.load_snapshot` takes
the per-viewer snapshot a ``join`` returns, :meth:`TableModel.apply` takes each event
(``{"seq", "kind", "data"}``) and answers :class:`Applied`:

* ``STALE`` — its seq is at or below what the model has (a duplicate, or older than
  the snapshot): ignored;
* ``GAP`` — a seq is missing: nothing is applied and :attr:`TableModel.needs_resync`
  is set until the next snapshot (the caller asks the server for one);
* ``APPLIED`` — the model moved on, and :attr:`TableModel.message` says what happened
  in words ("Banker wins 7 to 5", "You won 9.50").

The model keeps the seats and everyone's bets, the shoe holder and any offer, the phase
and its deadline (server time), the coup's cards (``None`` while face down; a turner's
privately squeezed cards in :attr:`CoupView.private`), the squeeze progress others see,
the roads and odds (from the ``roads`` command), and your balance.

Money is integer minor units throughout; :func:`format_money` is the only place it
becomes text, with two decimals, and :func:`parse_money` the only way back.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from enum import StrEnum
from typing import Any

__all__ = [
    "AREA_NAMES",
    "Applied",
    "CardView",
    "CoupView",
    "Seat",
    "TableModel",
    "card_text",
    "format_money",
    "history_net",
    "my_payouts",
    "parse_money",
    "result_text",
    "round_summary",
]

AREA_NAMES: dict[str, str] = {
    "player": "Player",
    "banker": "Banker",
    "tie": "Tie",
    "player_pair": "Player Pair",
    "banker_pair": "Banker Pair",
    "super6": "Super 6",
    "dragon_player": "Dragon Player",
    "dragon_banker": "Dragon Banker",
}
SUITS = {"s": "♠", "h": "♥", "d": "♦", "c": "♣"}
HAND_NAMES = {"player": "Player", "banker": "Banker"}


# ---------------------------------------------------------------------------- money


def format_money(minor: int, *, sign: bool = False) -> str:
    """Minor units as currency with two decimals: ``1250`` -> ``"12.50"``,
    ``123456`` -> ``"1,234.56"``, ``-5`` -> ``"-0.05"``; ``sign`` adds ``+`` when
    positive. Integer arithmetic only: money is never a float."""
    if isinstance(minor, bool) or not isinstance(minor, int):
        raise TypeError(f"money is an integer number of minor units, not {minor!r}")
    prefix = "-" if minor < 0 else "+" if sign and minor > 0 else ""
    whole, cents = divmod(abs(minor), 100)
    return f"{prefix}{whole:,}.{cents:02d}"


def parse_money(text: str) -> int:
    """Currency text to minor units, exactly: ``"12.5"`` -> ``1250``, ``"1,000"`` ->
    ``100000``. Raises :class:`ValueError` for more than two decimals or non-numbers."""
    cleaned = text.strip().replace(",", "").replace("_", "")
    try:
        value = Decimal(cleaned)
    except InvalidOperation:
        raise ValueError(f"not an amount: {text!r}") from None
    if not value.is_finite():
        raise ValueError(f"not an amount: {text!r}")
    minor = value * 100
    if minor != minor.to_integral_value():
        raise ValueError(f"at most two decimals: {text!r}")
    return int(minor)


# ---------------------------------------------------------------------------- cards


def card_text(card: str | None) -> str:
    """``"Td"`` -> ``"10♦"``; ``None`` (face down) -> ``"??"``."""
    if not card:
        return "??"
    rank, suit = card[:-1], card[-1:]
    rank = "10" if rank == "T" else rank
    return f"{rank}{SUITS.get(suit, suit)}"


def card_points(card: str) -> int:
    rank = card[:-1]
    if rank == "A":
        return 1
    if rank in ("T", "J", "Q", "K", "10"):
        return 0
    try:
        return int(rank) % 10
    except ValueError:
        return 0


def result_text(result: dict[str, Any]) -> str:
    """``{"outcome": "banker", "banker_total": 7, "player_total": 5, ...}`` ->
    ``"Banker wins 7 to 5"`` (with naturals and pairs noted)."""
    pt = int(result.get("player_total", 0))
    bt = int(result.get("banker_total", 0))
    outcome = result.get("outcome")
    if outcome == "tie":
        text = f"Tie {pt} to {bt}"
    elif outcome == "player":
        text = f"Player wins {pt} to {bt}"
    else:
        text = f"Banker wins {bt} to {pt}"
    notes = []
    if result.get("natural"):
        notes.append("natural")
    if result.get("player_pair"):
        notes.append("Player Pair")
    if result.get("banker_pair"):
        notes.append("Banker Pair")
    return f"{text} ({', '.join(notes)})" if notes else text


# ---------------------------------------------------------------------------- model


class Applied(StrEnum):
    APPLIED = "applied"
    STALE = "stale"
    GAP = "gap"


@dataclass
class Seat:
    seat: int
    player: str
    name: str
    connected: bool = True
    bets: dict[str, int] = field(default_factory=dict)
    done: bool = False


@dataclass
class CardView:
    card: str | None = None  # None while face down (to you)
    up: bool = False
    by: str | None = None


@dataclass
class CoupView:
    round_id: str
    coup_no: int
    player: list[CardView]
    banker: list[CardView]
    turners: dict[str, str | None]
    bets: dict[str, dict[str, int]] = field(default_factory=dict)
    stage: str = "player"  # player | banker | player_third | banker_third
    style: str | None = None
    squeezer: str | None = None
    deadline: float | None = None
    private: dict[tuple[str, int], str] = field(default_factory=dict)  # (hand, 1-based) -> card
    progress: dict[tuple[str, int], int] = field(default_factory=dict)
    totals: dict[str, int] = field(default_factory=dict)
    result: dict[str, Any] | None = None

    @property
    def hand(self) -> str:
        return "player" if self.stage.startswith("player") else "banker"

    @property
    def third(self) -> bool:
        return self.stage.endswith("third")

    def cards(self, hand: str) -> list[CardView]:
        return self.player if hand == "player" else self.banker

    def stage_cards(self) -> list[int]:
        """1-based indexes of the cards the current stage turns."""
        return [3] if self.third else [1, 2]

    def face_down(self) -> list[int]:
        """The current stage's cards still face down (1-based)."""
        cards = self.cards(self.hand)
        return [i for i in self.stage_cards() if i <= len(cards) and not cards[i - 1].up]

    def seen(self, hand: str, index: int) -> str | None:
        """The card as you know it: face up, or privately squeezed by you."""
        cards = self.cards(hand)
        if 1 <= index <= len(cards) and cards[index - 1].card:
            return cards[index - 1].card
        return self.private.get((hand, index))

    def total(self, hand: str) -> int:
        return sum(card_points(c.card) for c in self.cards(hand) if c.up and c.card) % 10


class TableModel:
    """One table as this client sees it; see the module docstring."""

    def __init__(self, me: str | None = None) -> None:
        self.me = me
        self.table_id: str | None = None
        self.seq: int | None = None  # None until the first snapshot
        self.needs_resync = False
        self.phase = "unknown"
        self.deadline: float | None = None
        self.options: dict[str, Any] = {}
        self.shoe: dict[str, Any] | None = None
        self.coup_no = 0
        self.holder: str | None = None
        self.house_holds = False
        self.offer: dict[str, Any] | None = None
        self.cutter: str | None = None
        self.seats: dict[str, Seat] = {}  # by player id
        self.names: dict[str, str] = {}
        self.spectators = 0
        self.coup: CoupView | None = None
        self.last_coup: CoupView | None = None  # the settled coup, shown until the next deal
        self.last_result: dict[str, Any] | None = None
        self.roads: dict[str, Any] = {}
        self.odds: dict[str, Any] | None = None
        self.roads_stale = False  # a coup ended: fetch the roads again
        self.balance: int | None = None
        self.available: int | None = None
        self.my_bets: dict[str, int] = {}
        self.last_bets: dict[str, int] = {}
        self.last_net: int | None = None
        self.result_line = ""  # the last coup's result and your win, until the next deal
        self.message = ""
        self.log: list[str] = []
        self.closed = False

    # ------------------------------------------------------------------ queries
    @property
    def my_seat(self) -> int | None:
        s = self.seats.get(self.me or "")
        return s.seat if s else None

    @property
    def seated(self) -> bool:
        return self.my_seat is not None

    @property
    def limits(self) -> dict[str, int]:
        lim = self.options.get("limits") or {}
        return {k: int(v) for k, v in lim.items()}

    @property
    def areas(self) -> list[str]:
        return [str(a) for a in self.options.get("areas") or ["player", "banker", "tie"]]

    def max_for(self, area: str) -> int:
        lim = self.limits
        if area in ("player", "banker"):
            return lim.get("max", 0)
        if area == "tie":
            return lim.get("tie_max", 0)
        return lim.get("side_max", 0)

    def name(self, pid: str | None) -> str:
        if pid is None or pid == "croupier":
            return "the croupier"
        if pid == self.me:
            return "you"
        return self.names.get(pid, pid)

    def seats_in_order(self) -> list[Seat]:
        return sorted(self.seats.values(), key=lambda s: s.seat)

    def area_totals(self) -> dict[str, int]:
        """Everyone's stakes per area (the chips on the layout)."""
        out: dict[str, int] = {}
        bets = self.coup.bets if self.coup is not None and self.coup.bets else None
        if bets is not None:
            for b in bets.values():
                for a, v in b.items():
                    out[a] = out.get(a, 0) + v
            return out
        for s in self.seats.values():
            for a, v in s.bets.items():
                out[a] = out.get(a, 0) + v
        return out

    def stacks(self, area: str) -> list[tuple[str, int]]:
        """Who has what on ``area``: (name, amount), in seat order."""
        bets_by = (
            self.coup.bets
            if self.coup is not None and self.coup.bets
            else {s.player: s.bets for s in self.seats.values()}
        )
        order = {s.player: s.seat for s in self.seats.values()}
        rows = [(pid, b.get(area, 0)) for pid, b in bets_by.items() if b.get(area, 0)]
        rows.sort(key=lambda r: order.get(r[0], 99))
        return [(self.name(pid), amount) for pid, amount in rows]

    @property
    def my_turn(self) -> str | None:
        """The hand you must turn now ("player"/"banker"), or None."""
        coup = self.coup
        if coup is None or self.me is None or self.phase != "turn":
            return None
        if coup.turners.get(coup.hand) != self.me or not coup.face_down():
            return None
        return coup.hand

    @property
    def offered_to_me(self) -> bool:
        return self.offer is not None and self.offer.get("player") == self.me and self.me is not None

    @property
    def i_cut(self) -> bool:
        return self.phase == "cut" and self.cutter == self.me and self.me is not None

    @property
    def i_hold(self) -> bool:
        return self.holder is not None and self.holder == self.me

    @property
    def shoe_size(self) -> int:
        decks = self.options.get("decks") or 8
        return int(decks) * 52

    # ------------------------------------------------------------------ input
    def load_snapshot(self, snap: dict[str, Any]) -> None:
        """Replace everything with a ``join`` snapshot (``view()`` of the server)."""
        self.table_id = str(snap.get("table"))
        self.seq = int(snap.get("seq", 0))
        self.needs_resync = False
        self.phase = str(snap.get("phase", "unknown"))
        self.deadline = snap.get("deadline")
        self.options = dict(snap.get("options") or {})
        shoe = snap.get("shoe")
        self.shoe = dict(shoe) if isinstance(shoe, dict) else None
        self.coup_no = int(snap.get("coup_no") or 0)
        self.holder = snap.get("holder")
        self.house_holds = bool(snap.get("house_holds"))
        self.offer = snap.get("offer")
        self.cutter = snap.get("cutter")
        self.seats = {}
        for s in snap.get("seats") or []:
            seat = Seat(
                seat=int(s["seat"]),
                player=str(s["player"]),
                name=str(s.get("name") or s["player"]),
                connected=bool(s.get("connected", True)),
                bets=dict(s.get("bets") or {}),
                done=bool(s.get("done")),
            )
            self.seats[seat.player] = seat
            self.names[seat.player] = seat.name
        self.spectators = int(snap.get("spectators") or 0)
        self.coup = _coup_from_view(snap.get("coup"))
        self.last_coup = None
        self.last_result = snap.get("last_result")
        self.roads = dict(snap.get("roads") or {})
        self.closed = self.phase == "closed"
        you = snap.get("you")
        if isinstance(you, dict):
            self.me = str(you.get("player") or self.me)
            self.balance = you.get("balance")
            self.available = you.get("available")
            self.my_bets = dict(you.get("bets") or {})
            self.last_bets = dict(you.get("last_bets") or {})
        self._say(self._phase_text())

    def apply(self, event: dict[str, Any]) -> Applied:
        """Apply one event in seq order; see :class:`Applied`."""
        seq = event.get("seq")
        if not isinstance(seq, int) or self.seq is None or seq <= self.seq:
            return Applied.STALE
        if self.needs_resync or seq != self.seq + 1:
            self.needs_resync = True
            return Applied.GAP
        self.seq = seq
        kind = str(event.get("kind"))
        data = event.get("data") or {}
        handler = getattr(self, f"_on_{kind}", None)
        if handler is not None:
            handler(data)
        return Applied.APPLIED

    def set_roads(self, roads: dict[str, Any] | None, odds: dict[str, Any] | None) -> None:
        """The ``roads`` command's reply: the current shoe's roads and exact odds."""
        if roads is not None:
            self.roads = dict(roads)
        self.odds = odds
        self.roads_stale = False

    def note(self, text: str) -> None:
        """Put something on the message line (an error, the connection's state)."""
        self._say(text)

    # ------------------------------------------------------------------ helpers
    def _say(self, text: str) -> None:
        if not text:
            return
        self.message = text
        self.log.append(text)
        del self.log[:-200]

    def _phase_text(self) -> str:
        return {
            "betting": "Place your bets",
            "turn": "The cards are being turned",
            "shoe_offer": "The shoe is being offered",
            "cut": "Waiting for the cut",
            "waiting": "Waiting for players: take a seat",
            "shuffle": "Shuffling",
            "closed": "The table is closed",
        }.get(self.phase, "")

    def _seat_of(self, pid: str) -> Seat | None:
        return self.seats.get(pid)

    def _my_money(self, data: dict[str, Any]) -> None:
        if isinstance(data.get("balance"), int):
            self.balance = data["balance"]
        if isinstance(data.get("available"), int):
            self.available = data["available"]

    # ------------------------------------------------------------------ events: players
    def _on_sat(self, d: dict[str, Any]) -> None:
        pid = str(d.get("player"))
        name = str(d.get("name") or self.names.get(pid, pid))
        self.names[pid] = name
        self.seats[pid] = Seat(int(d.get("seat", 0)), pid, name)
        self.spectators = max(0, self.spectators - 1)
        if pid == self.me:
            self._my_money(d)
            self._say(f"You sit in seat {d.get('seat')}")
        else:
            self._say(f"{name} sits in seat {d.get('seat')}")

    def _on_stood(self, d: dict[str, Any]) -> None:
        """A seat empties. Spectators coming and going are not events (the server counts
        them in snapshots); only a player who stands and stays is one more watching."""
        pid = str(d.get("player"))
        self.seats.pop(pid, None)
        if pid == self.me:
            self.my_bets = {}
        reason = d.get("reason")
        who = self.name(pid).capitalize()
        if reason == "left":
            self._say(f"{who} left the table")
        elif reason == "timeout":
            self._say(f"{who} stood up (timed out) and left")
        else:
            self.spectators += 1
            self._say(f"{who} stood up")

    def _on_disconnected(self, d: dict[str, Any]) -> None:
        pid = str(d.get("player"))
        seat = self._seat_of(pid)
        if seat is not None:
            seat.connected = False
        if pid != self.me:
            self._say(f"{self.name(pid).capitalize()} lost the connection")

    def _on_reconnected(self, d: dict[str, Any]) -> None:
        pid = str(d.get("player"))
        seat = self._seat_of(pid)
        if seat is not None:
            seat.connected = True
        if pid != self.me:
            self._say(f"{self.name(pid).capitalize()} is back")

    # ------------------------------------------------------------------ events: the shoe
    def _on_shoe_started(self, d: dict[str, Any]) -> None:
        self.shoe = {
            "no": d.get("shoe_no"),
            "commitment": d.get("commitment"),
            "cards_left": d.get("cards"),
            "cut": None,
            "burn": None,
            "stop_card_out": False,
            "last_coup": False,
        }
        self.roads = {}
        self.odds = None
        self.phase = "shuffle"
        self._say(f"Shoe {d.get('shoe_no')}: a new shoe, commitment {str(d.get('commitment', ''))[:12]}…")

    def _on_shoe_offered(self, d: dict[str, Any]) -> None:
        pid = str(d.get("player"))
        self.offer = {"player": pid, "deadline": d.get("deadline")}
        self.phase = "shoe_offer"
        self.deadline = d.get("deadline")
        if pid == self.me:
            self._say("The shoe is offered to you: accept (y) or decline (n)")
        else:
            self._say(f"The shoe is offered to {self.name(pid)}")

    def _on_shoe_accepted(self, d: dict[str, Any]) -> None:
        pid = str(d.get("player"))
        self.offer = None
        self.holder = pid
        self.house_holds = False
        self.deadline = None
        self._say("You hold the shoe" if pid == self.me else f"{self.name(pid)} takes the shoe")

    def _on_shoe_declined(self, d: dict[str, Any]) -> None:
        pid = str(d.get("player"))
        timeout = " (time ran out)" if d.get("timeout") else ""
        self._say(f"{self.name(pid).capitalize()} declined the shoe{timeout}")
        self.offer = None

    def _on_shoe_held_by_house(self, d: dict[str, Any]) -> None:
        self.offer = None
        self.holder = None
        self.house_holds = True
        self._say("The house holds the shoe")

    def _on_shoe_passed(self, d: dict[str, Any]) -> None:
        pid = str(d.get("player"))
        reason = d.get("reason")
        if self.holder == pid:
            self.holder = None
        why = {
            "player_won": "Player won",
            "passed": "passed",
            "stood": "stood up",
            "left": "left",
            "timeout": "timed out",
        }.get(str(reason), str(reason))
        self.log.append(f"The shoe leaves {self.name(pid)} ({why})")

    def _on_cut_offered(self, d: dict[str, Any]) -> None:
        pid = d.get("player")
        self.cutter = str(pid) if pid is not None else None
        self.phase = "cut"
        self.deadline = d.get("deadline")
        self._say("Cut the shoe (u)" if pid == self.me else f"{self.name(self.cutter)} cuts the shoe")

    def _on_shoe_cut(self, d: dict[str, Any]) -> None:
        if self.shoe is not None:
            self.shoe["cut"] = d.get("position")
        self.cutter = None
        self.deadline = None
        by = d.get("on_behalf")
        who = f"the croupier for {self.name(str(by))}" if by else self.name(d.get("by"))
        self._say(f"The shoe is cut at {d.get('position')} by {who}")

    def _on_burned(self, d: dict[str, Any]) -> None:
        count = int(d.get("count") or 0)
        if self.shoe is not None:
            self.shoe["burn"] = {"card": d.get("card"), "count": count}
            left = self.shoe.get("cards_left")
            if isinstance(left, int):
                self.shoe["cards_left"] = left - 1 - count
        self._say(f"Burn card {card_text(d.get('card'))}: {count} cards burned")

    def _on_waiting(self, d: dict[str, Any]) -> None:
        self.phase = "waiting"
        self.deadline = None
        self.offer = None
        self._say("Waiting for players: take a seat")

    def _on_stop_card(self, d: dict[str, Any]) -> None:
        if self.shoe is not None:
            self.shoe["stop_card_out"] = True
            self.shoe["last_coup"] = True
        self._say("The stop card is out: one more coup, then a new shoe")

    def _on_shoe_ended(self, d: dict[str, Any]) -> None:
        self.shoe = None
        self.phase = "shuffle"
        self.deadline = None
        self._say(f"Shoe {d.get('shoe_no')} is over: its seed is revealed ({len(d.get('coups') or [])} coups)")

    def _on_closed(self, d: dict[str, Any]) -> None:
        self.phase = "closed"
        self.closed = True
        self.coup = None
        self.deadline = None
        self._say("The table is closed" + (": wagers refunded" if d.get("refunded") else ""))

    # ------------------------------------------------------------------ events: betting
    def _on_betting_opened(self, d: dict[str, Any]) -> None:
        self.phase = "betting"
        self.deadline = d.get("deadline")
        self.coup_no = int(d.get("coup_no") or self.coup_no)
        self.coup = None
        for s in self.seats.values():
            s.done = False
        last = f" (last: {self.result_line})" if self.result_line else ""
        self._say(f"Coup {self.coup_no}: place your bets{last}")

    def _on_betting_timer(self, d: dict[str, Any]) -> None:
        self.deadline = d.get("deadline")

    def _on_betting_waiting(self, d: dict[str, Any]) -> None:
        self.deadline = None
        self._say("Waiting for a bet")

    def _on_bets(self, d: dict[str, Any]) -> None:
        pid = str(d.get("player"))
        bets = {str(k): int(v) for k, v in (d.get("bets") or {}).items()}
        seat = self._seat_of(pid)
        if seat is not None:
            seat.bets = bets
            seat.done = False
        if pid == self.me:
            self.my_bets = bets
            self._my_money(d)

    def _on_bets_void(self, d: dict[str, Any]) -> None:
        pid = str(d.get("player"))
        seat = self._seat_of(pid)
        if seat is not None:
            seat.bets = {}
        if pid == self.me:
            self.my_bets = {}
            self._say("Your bets were void: not enough balance")

    def _on_done(self, d: dict[str, Any]) -> None:
        seat = self._seat_of(str(d.get("player")))
        if seat is not None:
            seat.done = True

    def _on_betting_closed(self, d: dict[str, Any]) -> None:
        held = {str(p): {str(a): int(v) for a, v in b.items()} for p, b in (d.get("bets") or {}).items()}
        self.phase = "turn"
        self.deadline = None
        self._my_money(d)
        self.coup = CoupView(
            round_id=str(d.get("round_id")),
            coup_no=self.coup_no,
            player=[],
            banker=[],
            turners={},
            bets=held,
        )
        self._say("No more bets")

    def _on_dealt(self, d: dict[str, Any]) -> None:
        self.result_line = ""
        if self.coup is None:
            self.coup = CoupView(str(d.get("round_id")), self.coup_no, [], [], {})
        self.coup.player = [CardView() for _ in range(int(d.get("player") or 2))]
        self.coup.banker = [CardView() for _ in range(int(d.get("banker") or 2))]
        self.coup.turners = dict(d.get("turners") or {})
        self.phase = "turn"
        if self.shoe is not None and isinstance(self.shoe.get("cards_left"), int):
            self.shoe["cards_left"] -= 4

    # ------------------------------------------------------------------ events: turning
    def _on_turn(self, d: dict[str, Any]) -> None:
        coup = self.coup
        if coup is None:
            return
        hand = str(d.get("hand"))
        coup.stage = f"{hand}_third" if d.get("third") else hand
        coup.style = None
        coup.squeezer = None
        coup.deadline = d.get("deadline")
        self.deadline = coup.deadline
        turner = d.get("turner")
        coup.turners[hand] = turner
        what = f"the {HAND_NAMES.get(hand, hand)} third card" if d.get("third") else f"the {HAND_NAMES.get(hand, hand)} cards"
        if turner == self.me:
            self._say(f"Your turn: turn {what} — TOSS, or squeeze: PEEK, SIDE, QUICK")
        else:
            self._say(f"{self.name(turner).capitalize()} turns {what}")

    def _on_squeeze(self, d: dict[str, Any]) -> None:
        coup = self.coup
        if coup is None:
            return
        hand = str(d.get("hand"))
        coup.style = str(d.get("style"))
        coup.squeezer = d.get("turner")
        for key, card in (d.get("cards") or {}).items():
            coup.private[(hand, int(key))] = str(card)
        if d.get("turner") != self.me:
            self._say(f"{self.name(d.get('turner')).capitalize()} squeezes the {HAND_NAMES.get(hand, hand)} cards ({coup.style})")

    def _on_progress(self, d: dict[str, Any]) -> None:
        coup = self.coup
        if coup is None:
            return
        coup.progress[(str(d.get("hand")), int(d.get("card") or 0))] = int(d.get("percent") or 0)

    def _on_card(self, d: dict[str, Any]) -> None:
        coup = self.coup
        if coup is None:
            return
        hand = str(d.get("hand"))
        index = int(d.get("index") or 0)
        cards = coup.cards(hand)
        while len(cards) < index:
            cards.append(CardView())
        cards[index - 1] = CardView(str(d.get("card")), True, d.get("by"))
        coup.progress.pop((hand, index), None)
        coup.private.pop((hand, index), None)
        if isinstance(d.get("total"), int):
            coup.totals[hand] = d["total"]
        if not coup.stage.startswith(hand):
            coup.stage = hand if index <= 2 else f"{hand}_third"
        self._say(f"{HAND_NAMES.get(hand, hand)} card {index}: {card_text(d.get('card'))} — {HAND_NAMES.get(hand, hand)} {coup.total(hand)}")

    def _on_third_card(self, d: dict[str, Any]) -> None:
        coup = self.coup
        if coup is None:
            return
        hand = str(d.get("hand"))
        coup.cards(hand).append(CardView())
        coup.stage = f"{hand}_third"
        coup.style = None
        if self.shoe is not None and isinstance(self.shoe.get("cards_left"), int):
            self.shoe["cards_left"] -= 1
        self._say(f"{HAND_NAMES.get(hand, hand)} draws a third card")

    def _on_result(self, d: dict[str, Any]) -> None:
        self.last_result = dict(d)
        if self.coup is not None:
            self.coup.result = dict(d)
        self._say(result_text(d))

    def _on_settled(self, d: dict[str, Any]) -> None:
        result = self.last_result
        text = result_text(result) if result else "Settled"
        coup = self.coup
        if coup is not None:
            mine = coup.bets.get(self.me or "")
            if mine:
                self.last_bets = dict(mine)
        self._my_money(d)
        net = d.get("net")
        if isinstance(net, int):
            self.last_net = net
            if net > 0:
                text += f" — You won {format_money(net)}"
            elif net < 0:
                text += f" — You lost {format_money(-net)}"
            else:
                text += " — Your bets push"
        for s in self.seats.values():
            s.bets = {}
            s.done = False
        self.my_bets = {}
        self.last_coup = coup
        self.coup = None
        self.phase = "settled"
        self.deadline = None
        self.roads_stale = True
        self.result_line = text
        self._say(text)


def _coup_from_view(view: Any) -> CoupView | None:
    if not isinstance(view, dict):
        return None
    coup = CoupView(
        round_id=str(view.get("round_id")),
        coup_no=int(view.get("coup_no") or 0),
        player=[],
        banker=[],
        turners=dict(view.get("turners") or {}),
        bets={str(p): dict(b) for p, b in (view.get("bets") or {}).items()},
        stage=str(view.get("stage") or "player"),
        style=view.get("style"),
        deadline=view.get("deadline"),
    )
    for hand in ("player", "banker"):
        out = coup.cards(hand)
        for i, c in enumerate(view.get(hand) or [], start=1):
            up = bool(c.get("up"))
            card = c.get("card")
            out.append(CardView(card if up else None, up, c.get("by")))
            if card and not up:
                coup.private[(hand, i)] = str(card)
    if coup.style is not None:
        coup.squeezer = coup.turners.get(coup.hand)
    return coup


# ---------------------------------------------------------------------------- history


def my_payouts(record: dict[str, Any], me: str) -> list[dict[str, Any]]:
    return [p for p in record.get("bets") or [] if p.get("player") == me]


def history_net(rounds: list[dict[str, Any]], me: str) -> int:
    """The sum of your results over recorded rounds: returned - stake, per bet."""
    return sum(int(p["returned"]) - int(p["stake"]) for r in rounds for p in my_payouts(r, me))


def round_summary(record: dict[str, Any], me: str) -> dict[str, Any]:
    """One recorded round, from your side: what came, what you bet, what you got."""
    pays = my_payouts(record, me)
    stake = sum(int(p["stake"]) for p in pays)
    net = sum(int(p["returned"]) - int(p["stake"]) for p in pays)
    # The server sends each player their own "balance"; a full record has "balances".
    bal = record.get("balance") or (record.get("balances") or {}).get(me) or {}
    return {
        "round_id": record.get("round_id"),
        "table": record.get("table"),
        "shoe_no": record.get("shoe_no"),
        "coup_no": record.get("coup_no"),
        "time": record.get("time"),
        "result": result_text(record),
        "outcome": record.get("outcome"),
        "player": list(record.get("player") or []),
        "banker": list(record.get("banker") or []),
        "bets": {str(p["area"]): int(p["stake"]) for p in pays},
        "stake": stake,
        "net": net,
        "balance_before": bal.get("before"),
        "balance_after": bal.get("after"),
    }
