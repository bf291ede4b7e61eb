"""The client's model of one table, as a pure reducer: ``reduce(model, item) -> model``.

A :class:`TableModel` is an immutable value. :func:`reduce` takes it and one item of
the connection's stream and returns the next model; the one given is never changed, so
a test (or a bot) can keep any model it was handed and compare. The items:

* ``{"type": "snapshot", "snapshot": {...}}`` — a ``join`` snapshot (docs/protocol.md
  §9) replaces everything;
* ``{"type": "event", "seq", "kind", "data"}`` — a table event, applied in ``seq``
  order (:func:`apply_event` also says how: :class:`Applied`);

  - ``STALE``: its seq is at or below the model's (a duplicate, or older than the
    snapshot): ignored;
  - ``GAP``: a seq is missing: nothing is applied and :attr:`TableModel.needs_resync`
    is set until the next snapshot (the caller asks the server for one);
  - ``APPLIED``: the model moved on, and :attr:`TableModel.message` says what
    happened in words (:mod:`client_cli.sentences`);
* ``{"type": "progress", "seq", "hand", "card", "percent", "turner"}`` — a squeezed
  card's bend (transient: never stored, no seq of its own): shown when its ``seq`` is
  the model's (it follows the event the model has last), else ignored;
* ``{"type": "roads", "roads", "odds"}`` — the ``roads`` reply (the roads and exact odds);
* ``{"type": "chat", "name", "text"}`` and ``{"type": "note", "text"}`` — a line for the
  message line (chat, an error, the connection's state);
* ``{"type": "reality_check", "session_seconds", "net", "staked", "every"}`` — the
  server's reality check (docs/protocol.md §6 ``reality_ack``): it is said on the message
  line and :attr:`TableModel.reality_check_due` is set (the server refuses bets
  ``reality_check_due`` until it is answered); ``{"type": "reality_ack", "choice"}`` —
  the client's answer, once the server took it (or the server's ``reality_answered``:
  another connection of the player answered it): no longer due.

The model keeps the seats and everyone's bets, the shoe holder and any offer, the phase
and its deadline (server time), the coup's cards (``None`` while face down; a turner's
privately squeezed cards in :attr:`CoupView.private`), the hands' totals as the server
counted them, the squeeze progress others see, the roads and odds, your balance, and
**what you may do now**: :attr:`TableModel.actions`, the server's ``you.actions``
(docs/protocol.md), taken from the snapshot and from the private ``actions`` the server
adds to the last event of a step that changed them; a spectator's ``sit`` seats follow
the public ``free_seats`` of ``sat`` and ``stood``. Bettors without a seat (GAME_RULES
§5): the felt's ``totals`` per area and how many ``bettors`` are in, as the server says
them (the snapshot's ``felt``, and every event that changes the felt); your own bets and
wager as a bettor come in your private copies (``bets``, ``own``); a bettor who turns is
named by ``dealt``'s ``names``.

This module must never do I/O, read a clock, or decide a rule of the game: what is
allowed, the cut's bounds, chip limits and hand totals are the server's answers.
Money is integer minor units.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any

from client_cli import sentences as say
from client_cli.i18n import t

__all__ = [
    "Actions",
    "Applied",
    "CardView",
    "CoupView",
    "Seat",
    "TableModel",
    "apply_event",
    "load_snapshot",
    "reduce",
]

LOG_KEPT = 200  # message-line history kept in the model

#: What the server says you may do now: command -> its bounds (an empty map when it has
#: none). A command that is absent is not allowed now. See docs/protocol.md.
Actions = Mapping[str, Mapping[str, Any]]


class Applied(StrEnum):
    APPLIED = "applied"
    STALE = "stale"
    GAP = "gap"


@dataclass(frozen=True, slots=True)
class Seat:
    seat: int
    player: str
    name: str
    connected: bool = True
    bets: Mapping[str, int] = field(default_factory=dict)
    done: bool = False


@dataclass(frozen=True, slots=True)
class CardView:
    card: str | None = None  # None while face down (to you)
    up: bool = False
    by: str | None = None


@dataclass(frozen=True, slots=True)
class CoupView:
    round_id: str
    coup_no: int
    player: tuple[CardView, ...] = ()
    banker: tuple[CardView, ...] = ()
    turners: Mapping[str, str | None] = field(default_factory=dict)
    bets: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    stage: str = "player"  # player | banker | player_third | banker_third
    style: str | None = None
    squeezer: str | None = None
    deadline: float | None = None
    private: Mapping[tuple[str, int], str] = field(default_factory=dict)  # (hand, 1-based) -> card
    progress: Mapping[tuple[str, int], int] = field(default_factory=dict)
    totals: Mapping[str, int] = field(default_factory=dict)  # the server's count of face-up cards
    result: Mapping[str, Any] | None = None

    @property
    def hand(self) -> str:
        return "player" if self.stage.startswith("player") else "banker"

    @property
    def third(self) -> bool:
        return self.stage.endswith("third")

    def cards(self, hand: str) -> tuple[CardView, ...]:
        return self.player if hand == "player" else self.banker

    def stage_cards(self) -> list[int]:
        """1-based numbers of the cards the current stage turns (the protocol's ``card``:
        1 and 2, or 3 for a third card)."""
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

    def total(self, hand: str) -> int | None:
        """The hand's total as the server counted it (``card`` events, the result), or
        None when it has not said yet."""
        if hand in self.totals:
            return self.totals[hand]
        if self.result is not None and isinstance(self.result.get(f"{hand}_total"), int):
            return int(self.result[f"{hand}_total"])
        return None


@dataclass(frozen=True, slots=True)
class TableModel:
    """One table as this client sees it; see the module docstring. Build the next one
    with :func:`reduce`, never by changing this one."""

    me: str | None = None
    table_id: str | None = None
    seq: int | None = None  # None until the first snapshot
    needs_resync: bool = False
    phase: str = "unknown"
    deadline: float | None = None
    options: Mapping[str, Any] = field(default_factory=dict)
    shoe: Mapping[str, Any] | None = None
    coup_no: int = 0
    holder: str | None = None
    house_holds: bool = False
    offer: Mapping[str, Any] | None = None
    cutter: str | None = None
    seats: Mapping[str, Seat] = field(default_factory=dict)  # by player id
    names: Mapping[str, str] = field(default_factory=dict)
    spectators: int = 0
    #: The felt as the server says it (§5): chips per area, everyone's together (None
    #: before a server that sends it has said), and how many bettors without a seat.
    felt: Mapping[str, int] | None = None
    bettors: int = 0
    coup: CoupView | None = None
    last_coup: CoupView | None = None  # the settled coup, shown until the next deal
    last_result: Mapping[str, Any] | None = None
    roads: Mapping[str, Any] = field(default_factory=dict)
    odds: Mapping[str, Any] | None = None
    roads_stale: bool = False  # a coup ended: fetch the roads again
    balance: int | None = None
    available: int | None = None
    my_bets: Mapping[str, int] = field(default_factory=dict)
    last_bets: Mapping[str, int] = field(default_factory=dict)
    last_net: int | None = None
    result_line: str = ""  # the last coup's result and your win, until the next deal
    message: str = ""
    #: A message you must read (your refused debit), kept on the message line before the
    #: news that follows at once (the coup dealt without you, the next round) until you
    #: bet again or a coup is settled.
    notice: str = ""
    log: tuple[str, ...] = ()
    closed: bool = False
    server_actions: Actions | None = None  # None: this server sends no `actions`
    #: A reality check waits for your answer (bets are refused until then), and what it
    #: said (the server's ``reality_check``).
    reality_check_due: bool = False
    reality_check: Mapping[str, Any] | None = None

    # ------------------------------------------------------------------ what you may do
    @property
    def message_line(self) -> str:
        """What the message line shows: the :attr:`notice`, then the latest message."""
        if not self.notice or self.notice == self.message:
            return self.message
        return f"{self.notice} · {self.message}" if self.message else self.notice

    @property
    def actions(self) -> Actions:
        """What you may send now, with its bounds: the server's ``actions`` (nothing
        before the server has said)."""
        return self.server_actions if self.server_actions is not None else {}

    def can(self, command: str) -> bool:
        return command in self.actions

    def action(self, command: str) -> Mapping[str, Any]:
        """The bounds of ``command`` (empty when it is not allowed or has none)."""
        return self.actions.get(command) or {}

    @property
    def my_turn(self) -> str | None:
        """The hand you may turn now ("player"/"banker"), or None."""
        hand = self.action("toss").get("hand")
        return str(hand) if hand is not None else None

    @property
    def squeezing(self) -> bool:
        """You are squeezing: the cards wait for CARD n (``turn``) or TOSS."""
        return self.can("turn")

    # ------------------------------------------------------------------ facts
    @property
    def my_seat(self) -> int | None:
        s = self.seats.get(self.me or "")
        return s.seat if s else None

    @property
    def seated(self) -> bool:
        return self.my_seat is not None

    @property
    def betting_without_a_seat(self) -> bool:
        """You have chips on the felt, or a wager in the coup, without a seat (§5)."""
        return not self.seated and bool(self.my_stake)

    @property
    def limits(self) -> dict[str, int]:
        """The table's published limits (for display and chip values)."""
        lim = self.options.get("limits") or {}
        return {k: int(v) for k, v in lim.items()}

    @property
    def areas(self) -> list[str]:
        """The bet areas open at this table."""
        return [str(a) for a in self.options.get("areas") or ["player", "banker", "tie"]]

    def name(self, pid: str | None) -> str:
        if pid is None or pid == "croupier":
            return t("who.croupier")
        if pid == self.me:
            return t("who.you")
        return self.names.get(pid, pid)

    def seats_in_order(self) -> list[Seat]:
        return sorted(self.seats.values(), key=lambda s: s.seat)

    def _bets_by_player(self) -> Mapping[str, Mapping[str, int]]:
        if self.coup is not None and self.coup.bets:
            return self.coup.bets
        return {s.player: s.bets for s in self.seats.values()}

    def area_totals(self) -> dict[str, int]:
        """Everyone's stakes per area (the chips on the layout): the felt's totals as the
        server says them (bettors without a seat included), else the seats' chips."""
        if self.felt is not None:
            return dict(self.felt)
        out: dict[str, int] = {}
        for b in self._bets_by_player().values():
            for a, v in b.items():
                out[a] = out.get(a, 0) + v
        return out

    def stacks(self, area: str) -> list[tuple[str, int]]:
        """Who has what on ``area``: (name, amount), in seat order."""
        order = {s.player: s.seat for s in self.seats.values()}
        rows = [
            (pid, b.get(area, 0)) for pid, b in self._bets_by_player().items() if b.get(area, 0)
        ]
        rows.sort(key=lambda r: order.get(r[0], 99))
        return [(self.name(pid), amount) for pid, amount in rows]

    @property
    def my_stake(self) -> Mapping[str, int]:
        """Your chips: held in the coup, or placed while betting."""
        if self.coup is not None and self.me is not None and self.me in self.coup.bets:
            return self.coup.bets[self.me]
        return self.my_bets

    @property
    def offered_to_me(self) -> bool:
        return (
            self.offer is not None and self.offer.get("player") == self.me and self.me is not None
        )

    @property
    def i_cut(self) -> bool:
        return self.phase == "cut" and self.cutter == self.me and self.me is not None

    @property
    def i_hold(self) -> bool:
        return self.holder is not None and self.holder == self.me


# ---------------------------------------------------------------------------- the reducer


def reduce(model: TableModel, item: Mapping[str, Any]) -> TableModel:
    """The next model after one stream item (see the module docstring); ``model`` is
    not changed. An item this model does not know leaves it as it is."""
    kind = item.get("type")
    if kind == "snapshot":
        return load_snapshot(model, item.get("snapshot") or {})
    if kind == "event":
        return apply_event(model, item)[0]
    if kind == "progress":
        seq = item.get("seq")
        if model.needs_resync or not isinstance(seq, int) or seq != model.seq:
            return model  # from before the snapshot, or past a gap
        return _on_progress(model, item)
    if kind == "roads":
        return set_roads(model, item.get("roads"), item.get("odds"))
    if kind == "chat":
        return _say(model, say.chat(item.get("name"), item.get("text")))
    if kind == "note":
        return _say(model, str(item.get("text") or ""))
    if kind == "reality_check":
        check = {k: v for k, v in item.items() if k != "type"}
        due = replace(model, reality_check_due=True, reality_check=check)
        return _say(due, say.reality_text(check))
    if kind == "reality_ack":
        return replace(model, reality_check_due=False, reality_check=None)
    return model


def load_snapshot(model: TableModel, snap: Mapping[str, Any]) -> TableModel:
    """The model after a ``join`` snapshot (the server's view for this player): the
    table as the snapshot says; who you are, the names seen, the odds, the last result
    line and the message log carry over (your money too, if it has no ``you``)."""
    seats: dict[str, Seat] = {}
    names = dict(model.names)
    for s in snap.get("seats") or []:
        seat = Seat(
            seat=int(s["seat"]),
            player=str(s["player"]),
            name=str(s.get("name") or s["player"]),
            connected=bool(s.get("connected", True)),
            bets=_amounts(s.get("bets")),
            done=bool(s.get("done")),
        )
        seats[seat.player] = seat
        names[seat.player] = seat.name
    shoe = snap.get("shoe")
    phase = str(snap.get("phase", "unknown"))
    new = replace(
        model,
        table_id=str(snap.get("table")),
        seq=int(snap.get("seq", 0)),
        needs_resync=False,
        phase=phase,
        deadline=snap.get("deadline"),
        options=dict(snap.get("options") or {}),
        shoe=dict(shoe) if isinstance(shoe, Mapping) else None,
        coup_no=int(snap.get("coup_no") or 0),
        holder=snap.get("holder"),
        house_holds=bool(snap.get("house_holds")),
        offer=snap.get("offer"),
        cutter=snap.get("cutter"),
        seats=seats,
        names={**names, **_names((snap.get("coup") or {}).get("names"))},
        spectators=int(snap.get("spectators") or 0),
        felt=_amounts((snap.get("felt") or {}).get("totals")) if "felt" in snap else None,
        bettors=int((snap.get("felt") or {}).get("bettors") or 0),
        coup=_coup_from_view(snap.get("coup")),
        last_coup=None,
        last_result=snap.get("last_result"),
        roads=dict(snap.get("roads") or {}),
        closed=phase == "closed",
        server_actions=None,
    )
    you = snap.get("you")
    if isinstance(you, Mapping):
        actions = you.get("actions")
        new = replace(
            new,
            me=str(you.get("player") or model.me),
            balance=you.get("balance"),
            available=you.get("available"),
            my_bets=_amounts(you.get("bets")),
            last_bets=_amounts(you.get("last_bets")),
            server_actions=_actions(actions) if isinstance(actions, Mapping) else None,
        )
    return _say(new, say.PHASE_SENTENCES.get(phase, ""))


def apply_event(model: TableModel, event: Mapping[str, Any]) -> tuple[TableModel, Applied]:
    """The model after one event in seq order, and how it was taken (:class:`Applied`)."""
    seq = event.get("seq")
    if not isinstance(seq, int) or model.seq is None or seq <= model.seq:
        return model, Applied.STALE
    if model.needs_resync or seq != model.seq + 1:
        return (model if model.needs_resync else replace(model, needs_resync=True)), Applied.GAP
    data: Mapping[str, Any] = event.get("data") or {}
    new = replace(model, seq=seq)
    handler = _HANDLERS.get(str(event.get("kind")))
    if handler is not None:
        new = handler(new, data)
    if isinstance(data.get("totals"), Mapping) and isinstance(data.get("bettors"), int):
        # the felt after this event (§5: every event that changes it says it)
        new = replace(new, felt=_amounts(data["totals"]), bettors=int(data["bettors"]))
    actions = data.get("actions")
    if isinstance(actions, Mapping):  # private: what you may do after this step
        new = replace(new, server_actions=_actions(actions))
    return new, Applied.APPLIED


def set_roads(
    model: TableModel, roads: Mapping[str, Any] | None, odds: Mapping[str, Any] | None
) -> TableModel:
    """The ``roads`` reply: the current shoe's roads and exact odds."""
    return replace(
        model, roads=dict(roads) if roads is not None else model.roads, odds=odds, roads_stale=False
    )


# ---------------------------------------------------------------------------- helpers


def _say(m: TableModel, text: str) -> TableModel:
    if not text:
        return m
    return replace(m, message=text, log=(*m.log[-(LOG_KEPT - 1) :], text))


def _log(m: TableModel, text: str) -> TableModel:
    """Into the log only, the message line unchanged."""
    return replace(m, log=(*m.log[-(LOG_KEPT - 1) :], text))


def _amounts(raw: Any) -> dict[str, int]:
    return {str(k): int(v) for k, v in (raw or {}).items()}


def _names(raw: Any) -> dict[str, str]:
    """A ``names`` map (player -> name), as ``dealt`` and the coup's view carry it."""
    return {str(k): str(v) for k, v in raw.items()} if isinstance(raw, Mapping) else {}


def _actions(raw: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    return {str(k): dict(v) if isinstance(v, Mapping) else {} for k, v in raw.items()}


def _money(m: TableModel, d: Mapping[str, Any]) -> TableModel:
    """Your balance and available, where an event's private part carries them."""
    balance = d["balance"] if isinstance(d.get("balance"), int) else m.balance
    available = d["available"] if isinstance(d.get("available"), int) else m.available
    return replace(m, balance=balance, available=available)


def _with_seat(m: TableModel, pid: str, **changes: Any) -> TableModel:
    seat = m.seats.get(pid)
    if seat is None:
        return m
    return replace(m, seats={**m.seats, pid: replace(seat, **changes)})


def _spectator_seats(m: TableModel, d: Mapping[str, Any]) -> TableModel:
    """A spectator's ``sit`` choices follow the public ``free_seats`` of ``sat`` and
    ``stood`` (a seated player's actions come privately)."""
    free = d.get("free_seats")
    if m.server_actions is None or m.seated or not isinstance(free, list):
        return m
    actions = dict(m.server_actions)
    if free:
        actions["sit"] = {"seats": [int(s) for s in free]}
    else:
        actions.pop("sit", None)
    return replace(m, server_actions=actions)


def _with_coup(m: TableModel, fn: Callable[[CoupView], CoupView]) -> TableModel:
    return m if m.coup is None else replace(m, coup=fn(m.coup))


def _set_card(cards: tuple[CardView, ...], index: int, card: CardView) -> tuple[CardView, ...]:
    padded = cards + (CardView(),) * max(0, index - len(cards))
    return (*padded[: index - 1], card, *padded[index:])


# ---------------------------------------------------------------------------- events: players


def _on_sat(m: TableModel, d: Mapping[str, Any]) -> TableModel:
    pid = str(d.get("player"))
    name = str(d.get("name") or m.names.get(pid, pid))
    seat = Seat(int(d.get("seat", 0)), pid, name, bets=_amounts(d.get("bets")))
    m = replace(
        m,
        names={**m.names, pid: name},
        seats={**m.seats, pid: seat},
        spectators=max(0, m.spectators - 1),
    )
    if pid == m.me:
        m = _money(m, d)
    m = _spectator_seats(m, d)
    return _say(m, say.sat(name, d.get("seat"), me=pid == m.me))


def _on_stood(m: TableModel, d: Mapping[str, Any]) -> TableModel:
    """A seat empties. Spectators coming and going are not events (the server counts
    them in snapshots); only a player who stands and stays is one more watching."""
    pid = str(d.get("player"))
    who = m.name(pid)
    m = replace(m, seats={p: s for p, s in m.seats.items() if p != pid})
    reason = d.get("reason")
    stays = reason not in ("left", "timeout")  # stood up, still watching
    if stays:
        m = replace(m, spectators=m.spectators + 1)
    if pid != m.me:
        m = _spectator_seats(m, d)
    else:
        m = replace(m, my_bets={})
        if m.server_actions is not None and stays:  # a spectator now, until the server says more
            m = _spectator_seats(replace(m, server_actions={"leave": {}}), d)
        elif m.server_actions is not None:  # gone from the table
            m = replace(m, server_actions={})
    return _say(m, say.stood(who, reason))


def _on_stand_after_coup(m: TableModel, d: Mapping[str, Any]) -> TableModel:
    """A player stops play while their wager is in the coup: they stand once it is
    settled (their ``stood`` follows then); nothing changes before."""
    pid = str(d.get("player"))
    return _say(m, say.stand_after_coup(m.name(pid), me=pid == m.me))


def _on_disconnected(m: TableModel, d: Mapping[str, Any]) -> TableModel:
    pid = str(d.get("player"))
    m = _with_seat(m, pid, connected=False)
    return m if pid == m.me else _say(m, say.disconnected(m.name(pid)))


def _on_reconnected(m: TableModel, d: Mapping[str, Any]) -> TableModel:
    pid = str(d.get("player"))
    m = _with_seat(m, pid, connected=True)
    return m if pid == m.me else _say(m, say.reconnected(m.name(pid)))


# ---------------------------------------------------------------------------- events: the shoe


def _on_shoe_started(m: TableModel, d: Mapping[str, Any]) -> TableModel:
    shoe = {
        "no": d.get("shoe_no"),
        "commitment": d.get("commitment"),
        "cards_left": d.get("cards"),
        "cut": None,
        "burn": None,
        "stop_card_out": False,
        "last_coup": False,
    }
    m = replace(m, shoe=shoe, roads={}, odds=None, phase="shuffle")
    return _say(m, say.shoe_started(d.get("shoe_no"), d.get("commitment")))


def _on_shoe_offered(m: TableModel, d: Mapping[str, Any]) -> TableModel:
    pid = str(d.get("player"))
    m = replace(
        m,
        offer={"player": pid, "deadline": d.get("deadline")},
        phase="shoe_offer",
        deadline=d.get("deadline"),
    )
    return _say(m, say.shoe_offered(m.name(pid), me=pid == m.me))


def _on_shoe_accepted(m: TableModel, d: Mapping[str, Any]) -> TableModel:
    pid = str(d.get("player"))
    m = replace(m, offer=None, holder=pid, house_holds=False, deadline=None)
    return _say(m, say.shoe_accepted(m.name(pid), me=pid == m.me))


def _on_shoe_declined(m: TableModel, d: Mapping[str, Any]) -> TableModel:
    m = _say(m, say.shoe_declined(m.name(str(d.get("player"))), timeout=bool(d.get("timeout"))))
    return replace(m, offer=None)


def _on_shoe_held_by_house(m: TableModel, d: Mapping[str, Any]) -> TableModel:
    m = replace(m, offer=None, holder=None, house_holds=True)
    return _say(m, say.shoe_held_by_house())


def _on_shoe_passed(m: TableModel, d: Mapping[str, Any]) -> TableModel:
    pid = str(d.get("player"))
    if m.holder == pid:
        m = replace(m, holder=None)
    return _log(m, say.shoe_passed(m.name(pid), d.get("reason")))


def _on_cut_offered(m: TableModel, d: Mapping[str, Any]) -> TableModel:
    pid = d.get("player")
    cutter = str(pid) if pid is not None else None
    m = replace(m, cutter=cutter, phase="cut", deadline=d.get("deadline"))
    return _say(m, say.cut_offered(m.name(cutter), me=pid == m.me))


def _on_shoe_cut(m: TableModel, d: Mapping[str, Any]) -> TableModel:
    shoe = {**m.shoe, "cut": d.get("position")} if m.shoe is not None else None
    m = replace(m, shoe=shoe, cutter=None, deadline=None)
    behalf = d.get("on_behalf")
    return _say(
        m,
        say.shoe_cut(
            d.get("position"), m.name(d.get("by")), m.name(str(behalf)) if behalf else None
        ),
    )


def _contributions(m: TableModel) -> list[dict[str, Any]]:
    return [dict(c) for c in (m.shoe or {}).get("contributions") or [] if isinstance(c, Mapping)]


def _with_contributions(m: TableModel, contributions: list[dict[str, Any]]) -> TableModel:
    if m.shoe is None:
        return m
    return replace(m, shoe={**m.shoe, "contributions": contributions})


def _on_contribution_committed(m: TableModel, d: Mapping[str, Any]) -> TableModel:
    """docs/fairness.md §9: a seated player committed randomness to the shoe."""
    pid = str(d.get("player"))
    entry = {"player": pid, "commitment": d.get("commitment"), "value": None}
    m = _with_contributions(m, [*_contributions(m), entry])
    return _log(m, say.contribution_committed(m.name(pid), me=pid == m.me))


def _on_reveal_opened(m: TableModel, d: Mapping[str, Any]) -> TableModel:
    """The shoe is cut (where: ``cut``, None for a timeout cut; whose: ``cutter``), the
    cut applied once the reveal is over (``shoe_cut``), as a snapshot says."""
    cutter = d.get("cutter")
    shoe = {**m.shoe, "cut": d.get("cut")} if m.shoe is not None else None
    m = replace(
        m,
        phase="reveal",
        shoe=shoe,
        cutter=str(cutter) if cutter is not None else None,
        deadline=d.get("deadline"),
    )
    return _say(m, say.reveal_opened())


def _on_contribution_revealed(m: TableModel, d: Mapping[str, Any]) -> TableModel:
    pid = str(d.get("player"))
    entries = [
        {**c, "value": d.get("value")} if c.get("player") == pid else c for c in _contributions(m)
    ]
    text = say.contribution_revealed(m.name(pid), mine=pid == m.me)
    return _log(_with_contributions(m, entries), text)


def _on_contributions_closed(m: TableModel, d: Mapping[str, Any]) -> TableModel:
    """The values are in: said plainly, yours first ("your randomness is in this shoe")."""
    values = [c for c in d.get("contributions") or [] if isinstance(c, Mapping)]
    withheld = [str(p) for p in d.get("withheld") or []]
    mine = any(c.get("player") == m.me for c in values)
    text = say.contributions_closed(len(values), [m.name(p) for p in withheld], mine=mine)
    return _say(m, text)


def _on_burned(m: TableModel, d: Mapping[str, Any]) -> TableModel:
    count = int(d.get("count") or 0)
    if m.shoe is not None:
        shoe = {**m.shoe, "burn": {"card": d.get("card"), "count": count}}
        left = shoe.get("cards_left")
        if isinstance(left, int):
            shoe["cards_left"] = left - 1 - count
        m = replace(m, shoe=shoe)
    return _say(m, say.burned(d.get("card"), count))


def _on_waiting(m: TableModel, d: Mapping[str, Any]) -> TableModel:
    return _say(replace(m, phase="waiting", deadline=None, offer=None), say.waiting())


def _on_stop_card(m: TableModel, d: Mapping[str, Any]) -> TableModel:
    if m.shoe is not None:
        m = replace(m, shoe={**m.shoe, "stop_card_out": True, "last_coup": True})
    return _say(m, say.stop_card())


def _on_shoe_ended(m: TableModel, d: Mapping[str, Any]) -> TableModel:
    m = replace(m, shoe=None, phase="shuffle", deadline=None)
    return _say(m, say.shoe_ended(d.get("shoe_no"), len(d.get("coups") or [])))


def _on_closed(m: TableModel, d: Mapping[str, Any]) -> TableModel:
    m = replace(m, phase="closed", closed=True, coup=None, deadline=None)
    if m.server_actions is not None:
        m = replace(m, server_actions={})
    return _say(m, say.closed(refunded=bool(d.get("refunded"))))


# ---------------------------------------------------------------------------- events: betting


def _on_betting_opened(m: TableModel, d: Mapping[str, Any]) -> TableModel:
    coup_no = int(d.get("coup_no") or m.coup_no)
    seats = {p: replace(s, done=False) for p, s in m.seats.items()}
    m = replace(
        m, phase="betting", deadline=d.get("deadline"), coup_no=coup_no, coup=None, seats=seats
    )
    return _say(m, say.betting_opened(coup_no, m.result_line))


def _on_betting_timer(m: TableModel, d: Mapping[str, Any]) -> TableModel:
    return replace(m, deadline=d.get("deadline"))


def _on_betting_waiting(m: TableModel, d: Mapping[str, Any]) -> TableModel:
    return _say(replace(m, deadline=None), say.betting_waiting())


def _on_bets(m: TableModel, d: Mapping[str, Any]) -> TableModel:
    """A player's chips; a bettor's without a seat name nobody (``player`` null) but in
    their own copy (§5)."""
    if d.get("player") is None:
        return m
    pid = str(d.get("player"))
    bets = _amounts(d.get("bets"))
    m = _with_seat(m, pid, bets=bets, done=False)
    if pid == m.me:
        m = _money(replace(m, my_bets=bets, notice=m.notice if not bets else ""), d)
    return m


def _on_draining(m: TableModel, d: Mapping[str, Any]) -> TableModel:
    return _say(m, say.draining()) if d.get("on", True) else m


def _on_paused(m: TableModel, d: Mapping[str, Any]) -> TableModel:
    """An operator paused the table: no new coup (this one, if any, finishes first)."""
    finishes = bool(d.get("coup_finishes"))
    if not finishes:
        m = replace(m, phase="paused", deadline=None)
    return _say(m, say.paused(coup_finishes=finishes))


def _on_resumed(m: TableModel, d: Mapping[str, Any]) -> TableModel:
    return _say(m, say.resumed())


def _on_voided(m: TableModel, d: Mapping[str, Any]) -> TableModel:
    """An operator voided the round: every bet went back; the next round opens."""
    seats = {p: replace(s, bets={}, done=False) for p, s in m.seats.items()}
    m = _money(replace(m, coup=None, seats=seats, my_bets={}, deadline=None), d)
    return _say(m, say.voided(d.get("reason")))


def _on_done(m: TableModel, d: Mapping[str, Any]) -> TableModel:
    return _with_seat(m, str(d.get("player")), done=True)


def _on_debiting(m: TableModel, d: Mapping[str, Any]) -> TableModel:
    """An operator's wallet takes the bets before the cards (docs/wallet.md §3)."""
    return _say(replace(m, phase="debiting", deadline=None), say.debiting())


def _on_debit_refused(m: TableModel, d: Mapping[str, Any]) -> TableModel:
    if d.get("player") is None:  # bettors without a seat, refused: not yours to know
        return m
    pid = str(d.get("player"))
    m = _with_seat(m, pid, bets={})
    if pid == m.me:
        text = say.debit_refused(d.get("reason"))
        return _say(replace(m, my_bets={}, notice=text), text)
    return _say(m, say.debit_refused_other(m.names.get(pid, pid)))


def _on_betting_closed(m: TableModel, d: Mapping[str, Any]) -> TableModel:
    held = {str(p): _amounts(b) for p, b in (d.get("bets") or {}).items()}
    if isinstance(d.get("own"), Mapping) and m.me is not None:  # your wager (private)
        held[m.me] = _amounts(d["own"])
    coup = CoupView(round_id=str(d.get("round_id")), coup_no=m.coup_no, bets=held)
    m = _money(replace(m, phase="turn", deadline=None, coup=coup), d)
    return _say(m, say.betting_closed())


def _on_dealt(m: TableModel, d: Mapping[str, Any]) -> TableModel:
    coup = m.coup or CoupView(str(d.get("round_id")), m.coup_no)
    coup = replace(
        coup,
        player=(CardView(),) * int(d.get("player") or 2),
        banker=(CardView(),) * int(d.get("banker") or 2),
        turners=dict(d.get("turners") or {}),
    )
    shoe = m.shoe
    if shoe is not None and isinstance(shoe.get("cards_left"), int):
        shoe = {**shoe, "cards_left": shoe["cards_left"] - 4}
    names = {**m.names, **_names(d.get("names"))}  # (a bettor without a seat who turns)
    return replace(m, result_line="", coup=coup, phase="turn", shoe=shoe, names=names)


# ---------------------------------------------------------------------------- events: turning


def _on_turn(m: TableModel, d: Mapping[str, Any]) -> TableModel:
    if m.coup is None:
        return m
    hand = str(d.get("hand"))
    turner = d.get("turner")
    coup = replace(
        m.coup,
        stage=f"{hand}_third" if d.get("third") else hand,
        style=None,
        squeezer=None,
        deadline=d.get("deadline"),
        turners={**m.coup.turners, hand: turner},
    )
    m = replace(m, coup=coup, deadline=coup.deadline)
    return _say(m, say.turn(m.name(turner), hand, third=bool(d.get("third")), me=turner == m.me))


def _on_squeeze(m: TableModel, d: Mapping[str, Any]) -> TableModel:
    if m.coup is None:
        return m
    hand = str(d.get("hand"))
    private = {
        **m.coup.private,
        **{(hand, int(k)): str(c) for k, c in (d.get("cards") or {}).items()},
    }
    m = replace(
        m,
        coup=replace(m.coup, style=str(d.get("style")), squeezer=d.get("turner"), private=private),
    )
    if d.get("turner") == m.me:
        return m
    return _say(m, say.squeezing(m.name(d.get("turner")), hand, d.get("style")))


def _on_progress(m: TableModel, d: Mapping[str, Any]) -> TableModel:
    key = (str(d.get("hand")), int(d.get("card") or 0))
    return _with_coup(
        m, lambda c: replace(c, progress={**c.progress, key: int(d.get("percent") or 0)})
    )


def _on_card(m: TableModel, d: Mapping[str, Any]) -> TableModel:
    coup = m.coup
    if coup is None:
        return m
    hand = str(d.get("hand"))
    index = int(d.get("index") or 0)
    up = CardView(str(d.get("card")), True, d.get("by"))
    total = d.get("total") if isinstance(d.get("total"), int) else None
    coup = replace(
        coup,
        player=_set_card(coup.player, index, up) if hand == "player" else coup.player,
        banker=_set_card(coup.banker, index, up) if hand == "banker" else coup.banker,
        progress={k: v for k, v in coup.progress.items() if k != (hand, index)},
        private={k: v for k, v in coup.private.items() if k != (hand, index)},
        totals={**coup.totals, hand: total} if total is not None else coup.totals,
        stage=coup.stage
        if coup.stage.startswith(hand)
        else hand
        if index <= 2
        else f"{hand}_third",
    )
    return _say(
        replace(m, coup=coup), say.card_turned(hand, index, d.get("card"), coup.total(hand))
    )


def _on_third_card(m: TableModel, d: Mapping[str, Any]) -> TableModel:
    if m.coup is None:
        return m
    hand = str(d.get("hand"))
    coup = replace(
        m.coup,
        player=(*m.coup.player, CardView()) if hand == "player" else m.coup.player,
        banker=(*m.coup.banker, CardView()) if hand == "banker" else m.coup.banker,
        stage=f"{hand}_third",
        style=None,
    )
    shoe = m.shoe
    if shoe is not None and isinstance(shoe.get("cards_left"), int):
        shoe = {**shoe, "cards_left": shoe["cards_left"] - 1}
    return _say(replace(m, coup=coup, shoe=shoe), say.third_card(hand))


def _on_result(m: TableModel, d: Mapping[str, Any]) -> TableModel:
    result = dict(d)
    m = replace(m, last_result=result)
    m = _with_coup(m, lambda c: replace(c, result=result))
    return _say(m, say.result_text(d))


def _on_settled(m: TableModel, d: Mapping[str, Any]) -> TableModel:
    coup = m.coup
    mine = coup.bets.get(m.me or "") if coup is not None else None
    if mine:
        m = replace(m, last_bets=dict(mine))
    m = _money(m, d)
    net = d["net"] if isinstance(d.get("net"), int) else None
    outcomes = [
        str(b.get("outcome"))
        for b in d.get("payouts") or []
        if isinstance(b, Mapping) and b.get("player") == m.me
    ]
    text = say.settled(m.last_result, net, outcomes)
    m = replace(
        m,
        last_net=net if net is not None else m.last_net,
        seats={p: replace(s, bets={}, done=False) for p, s in m.seats.items()},
        my_bets={},
        last_coup=coup,
        coup=None,
        phase="settled",
        deadline=None,
        roads_stale=True,
        result_line=text,
        notice="",
    )
    return _say(m, text)


_HANDLERS: dict[str, Callable[[TableModel, Mapping[str, Any]], TableModel]] = {
    "sat": _on_sat,
    "stood": _on_stood,
    "stand_after_coup": _on_stand_after_coup,
    "disconnected": _on_disconnected,
    "reconnected": _on_reconnected,
    "shoe_started": _on_shoe_started,
    "shoe_offered": _on_shoe_offered,
    "shoe_accepted": _on_shoe_accepted,
    "shoe_declined": _on_shoe_declined,
    "shoe_held_by_house": _on_shoe_held_by_house,
    "shoe_passed": _on_shoe_passed,
    "cut_offered": _on_cut_offered,
    "shoe_cut": _on_shoe_cut,
    "contribution_committed": _on_contribution_committed,
    "reveal_opened": _on_reveal_opened,
    "contribution_revealed": _on_contribution_revealed,
    "contributions_closed": _on_contributions_closed,
    "burned": _on_burned,
    "waiting": _on_waiting,
    "stop_card": _on_stop_card,
    "shoe_ended": _on_shoe_ended,
    "closed": _on_closed,
    "betting_opened": _on_betting_opened,
    "betting_timer": _on_betting_timer,
    "betting_waiting": _on_betting_waiting,
    "bets": _on_bets,
    "draining": _on_draining,
    "paused": _on_paused,
    "resumed": _on_resumed,
    "voided": _on_voided,
    "done": _on_done,
    "debiting": _on_debiting,
    "debit_refused": _on_debit_refused,
    "betting_closed": _on_betting_closed,
    "dealt": _on_dealt,
    "turn": _on_turn,
    "squeeze": _on_squeeze,
    "card": _on_card,
    "third_card": _on_third_card,
    "result": _on_result,
    "settled": _on_settled,
}
#: Every event kind the model follows (docs/protocol.md §8).
EVENT_KINDS = frozenset(_HANDLERS)


def _coup_from_view(view: Any) -> CoupView | None:
    if not isinstance(view, Mapping):
        return None
    private: dict[tuple[str, int], str] = {}
    hands: dict[str, tuple[CardView, ...]] = {}
    for hand in ("player", "banker"):
        cards = []
        for i, c in enumerate(view.get(hand) or [], start=1):
            up = bool(c.get("up"))
            card = c.get("card")
            cards.append(CardView(card if up else None, up, c.get("by")))
            if card and not up:
                private[(hand, i)] = str(card)
        hands[hand] = tuple(cards)
    turners = dict(view.get("turners") or {})
    stage = str(view.get("stage") or "player")
    style = view.get("style")
    coup = CoupView(
        round_id=str(view.get("round_id")),
        coup_no=int(view.get("coup_no") or 0),
        player=hands["player"],
        banker=hands["banker"],
        turners=turners,
        bets={str(p): _amounts(b) for p, b in (view.get("bets") or {}).items()},
        stage=stage,
        style=style,
        deadline=view.get("deadline"),
        private=private,
        totals={str(h): int(t) for h, t in (view.get("totals") or {}).items()},
    )
    if style is not None:
        coup = replace(coup, squeezer=turners.get(coup.hand))
    return coup
