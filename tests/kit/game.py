"""The one table driver: play a table through real clients, from what a watcher receives.

:class:`Game` reads what the table waits for from the events a watching client has
received (or, right after a join, from its snapshot), and answers it through the seated
players' clients: :meth:`Game.to_betting` accepts offered shoes and cuts until betting is
open (the one "play until betting opens" driver of the tests and the benchmarks);
:meth:`Game.play_coup` places bets, presses DONE, turns the cards (squeezing card by
card, or tossing) and returns a :class:`CoupLog` per coup. Every command it sends waits
until the watcher has the command's events (:meth:`Game.act`), so what it reads next is
never stale.

This module must never decide a rule for the server: it answers the prompts the server
sends and checks the outcome against the oracle (:mod:`.oracle`) in the tests.
"""

from __future__ import annotations

import hashlib
import random
import secrets
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

from .client import Client

PROMPTS = frozenset(
    {"shoe_offered", "cut_offered", "reveal_opened", "betting_opened", "turn", "waiting"}
)


@dataclass
class CoupLog:
    round_id: str
    coup_no: int
    holder: str | None
    bets: dict[str, dict[str, int]]
    turners: dict[str, str | None] = field(default_factory=dict)
    cards: dict[str, dict[int, str]] = field(default_factory=lambda: {"player": {}, "banker": {}})
    squeezed: list[tuple[str, str, dict[str, str]]] = field(default_factory=list)
    result: dict[str, Any] = field(default_factory=dict)
    payouts: list[dict[str, Any]] = field(default_factory=list)
    private: dict[str, dict[str, Any]] = field(default_factory=dict)
    first_seq: int = 0  # betting_closed
    last_seq: int = 0  # settled

    @property
    def player_cards(self) -> list[str]:
        return [self.cards["player"][i] for i in sorted(self.cards["player"])]

    @property
    def banker_cards(self) -> list[str]:
        return [self.cards["banker"][i] for i in sorted(self.cards["banker"])]


StylePolicy = Callable[[str, str, bool], str | None]


class Game:
    """Drive one table through real clients, reading what to do from a watcher's events.

    ``players`` maps player id -> Client (each seated); ``bettors`` the same for
    bettors without a seat (GAME_RULES §5: they bet and turn, never press DONE nor hold
    the shoe); ``watcher`` is any client at the table (it may be one of the players).
    ``style(pid, hand, third)`` picks a squeeze style (None: TOSS); ``accept(pid)``
    whether an offered shoe is accepted.
    """

    def __init__(
        self,
        table: str,
        players: Mapping[str, Client],
        watcher: Client,
        *,
        rng: random.Random | None = None,
        style: StylePolicy | None = None,
        accept: Callable[[str], bool] | None = None,
        progress: bool = False,
        contributors: tuple[str, ...] = (),
        bettors: Mapping[str, Client] | None = None,
    ) -> None:
        self.table = table
        self.players = dict(players)
        self.bettors = dict(bettors or {})
        self.watcher = watcher
        self.rng = rng or random.Random(1234)
        self.style = style or (
            lambda pid, hand, third: self.rng.choice([None, "peek", "side", "quick"])
        )
        self.accept = accept or (lambda pid: True)
        self.progress = progress
        #: awaited after each squeeze, once the turner has the cards: (turner, hand, cards)
        self.on_squeeze: Callable[[str, str, dict[str, str]], Awaitable[None]] | None = None
        self.cuts: list[int] = []
        self.log: list[CoupLog] = []
        #: Players who contribute to every shoe (docs/fairness.md §9): they commit before
        #: the cut and reveal at ``reveal_opened``. Their values, by (player, shoe_no).
        self.contributors = contributors
        self.values: dict[tuple[str, int], bytes] = {}
        #: Seconds each command is sent again (the same id) while refused as transient,
        #: after a failover (a table may move between processes): 0, never.
        self.patience = 0.0

    async def act(self, pid: str, kind: str, **fields: Any) -> dict[str, Any]:
        """One player's command, asserted ok (sent again while refused as transient, with
        :attr:`patience`); then wait until the watcher has its events."""
        client = self.client(pid)
        reply: dict[str, Any]
        if self.patience:
            reply = await client.call_patiently(
                kind, timeout=self.patience, table=self.table, **fields
            )
        else:
            reply = await client.call(kind, table=self.table, **fields)
        await self.watcher.wait_seq(self.table, reply["seq"])
        return reply

    def client(self, pid: str) -> Client:
        """A seated player's client, or a bettor's without a seat."""
        return self.players[pid] if pid in self.players else self.bettors[pid]

    def prompt(self) -> dict[str, Any]:
        """What the table waits for: the last prompt event, or the watcher's snapshot."""
        since = self.watcher.snapshot_at.get(self.table, 0)
        for event in reversed(self.watcher.events(self.table, start=since)):
            if event["kind"] in PROMPTS:
                return cast(dict[str, Any], event)
        snap = self.watcher.snapshots.get(self.table)
        assert snap is not None, "the watcher has no snapshot and saw no prompt"
        phase, coup = snap["phase"], snap["coup"]
        if phase == "shoe_offer":
            return {"kind": "shoe_offered", "data": {"player": snap["offer"]["player"]}}
        if phase == "cut":
            return {"kind": "cut_offered", "data": {"player": snap["cutter"]}}
        if phase == "betting":
            rid = f"{self.table}-{snap['shoe']['no']}-{snap['coup_no']}"
            return {"kind": "betting_opened", "data": {"coup_no": snap["coup_no"], "round_id": rid}}
        if phase == "turn":
            hand = coup["hand"]
            data = {
                "hand": hand,
                "turner": coup["turners"][hand],
                "third": coup["stage"].endswith("third"),
            }
            return {"kind": "turn", "data": data}
        return {"kind": phase, "data": {}}

    def shoe_size(self) -> int:
        started = self.watcher.events(self.table, "shoe_started")
        if started:
            return int(started[-1]["data"]["cards"])
        shoe = self.watcher.snapshots[self.table]["shoe"]
        assert shoe["cut"] is None, shoe
        return int(shoe["cards_left"])

    async def to_betting(self) -> dict[str, Any]:
        """Answer offers and cuts until betting is open; return the betting_opened event."""
        for _ in range(100):
            prompt = self.prompt()
            kind, data = prompt["kind"], prompt["data"]
            if kind == "betting_opened":
                return prompt
            if kind == "shoe_offered":
                pid = data["player"]
                await self.act(pid, "accept_shoe" if self.accept(pid) else "decline_shoe")
            elif kind == "reveal_opened":
                await self.reveal(prompt)
            elif kind == "cut_offered":
                await self.commit()
                size = self.shoe_size()
                position = self.rng.randint(10, size - 10)
                self.cuts.append(position)
                await self.act(data["player"], "cut", position=position)
            else:
                raise AssertionError(f"expected an offer, a cut or betting, got {prompt}")
        raise AssertionError("the table never opened betting")

    def shoe_no(self) -> int:
        started = self.watcher.events(self.table, "shoe_started")
        if started:
            return int(started[-1]["data"]["shoe_no"])
        return int(self.watcher.snapshots[self.table]["shoe"]["no"])

    async def commit(self) -> None:
        """Every contributor not yet committed to this shoe commits to a fresh value."""
        shoe = self.shoe_no()
        for pid in self.contributors:
            if (pid, shoe) not in self.values:
                value = secrets.token_bytes(32)
                self.values[pid, shoe] = value
                await self.act(pid, "contribute", commitment=hashlib.sha256(value).hexdigest())

    async def reveal(self, opened: dict[str, Any]) -> None:
        """Each contributor named by ``reveal_opened`` reveals; then wait for the close."""
        shoe = self.shoe_no()
        revealed = {
            e["data"]["player"]
            for e in self.watcher.events(self.table, "contribution_revealed")
            if e["seq"] > opened["seq"]
        }
        for pid in opened["data"]["players"]:
            value = self.values.get((pid, shoe))
            if value is not None and pid in self.players and pid not in revealed:
                await self.act(pid, "contribute", value=value.hex())
        await self.watcher.wait_event("contributions_closed", table=self.table, after=opened["seq"])

    async def turn_stage(self, turn: dict[str, Any], log: CoupLog) -> None:
        """The turner reveals the stage's cards: TOSS, or a squeeze card by card."""
        data = turn["data"]
        hand, turner, third = data["hand"], data["turner"], data["third"]
        client = self.client(turner)
        style = self.style(turner, hand, third)
        if style is None:
            await self.act(turner, "toss", hand=hand)
            return
        reply = await self.act(turner, "squeeze", hand=hand, style=style)
        squeeze = await client.wait_event("squeeze", table=self.table, after=reply["seq"] - 1)
        assert squeeze["seq"] == reply["seq"], (squeeze, reply)
        assert squeeze["data"] == {
            **squeeze["data"],
            "hand": hand,
            "style": style,
            "turner": turner,
        }
        cards = squeeze["data"]["cards"]
        log.squeezed.append((turner, hand, dict(cards)))
        if self.on_squeeze is not None:
            await self.on_squeeze(turner, hand, dict(cards))
        slots = [3] if third else [1, 2]
        assert sorted(int(k) for k in cards) == slots, cards
        if self.progress:
            await self.act(
                turner, "progress", hand=hand, card=slots[0], percent=self.rng.randint(0, 100)
            )
        await self.act(turner, "turn", hand=hand, card=slots[0])
        if len(slots) == 2:
            if self.rng.random() < 0.5:
                await self.act(turner, "turn", hand=hand, card=2)
            else:
                await self.act(turner, "toss", hand=hand)

    async def play_coup(self, bets: Mapping[str, Mapping[str, int]]) -> CoupLog:
        """One whole coup: bets, DONE from every player, the turns, the settlement."""
        opened = await self.to_betting()
        rid = opened["data"]["round_id"]
        holder = self.holder()
        start = len(self.watcher.frames)
        for pid, areas in bets.items():
            for area, amount in areas.items():
                await self.act(pid, "bet", area=area, amount=amount)
        for pid in self.players:  # (bettors without a seat never hold the betting open)
            await self.act(pid, "done")
        log = CoupLog(
            rid, opened["data"]["coup_no"], holder, {p: dict(b) for p, b in bets.items() if b}
        )
        return await self.settle(log, start)

    async def settle(self, log: CoupLog, start: int) -> CoupLog:
        """The rest of ``log``'s coup once its betting closed: the turns until it is
        settled, then what every player saw of it (from the watcher's frame ``start``)."""
        rid = log.round_id
        for _ in range(20):
            settled = [
                e
                for e in self.watcher.events(self.table, "settled", start=start)
                if e["data"]["round_id"] == rid
            ]
            if settled:
                break
            prompt = self.prompt()
            assert prompt["kind"] == "turn", f"expected a turn, got {prompt}"
            await self.turn_stage(prompt, log)
        else:
            raise AssertionError(f"round {rid} never settled")
        self._collect(log, start)
        for client in [*self.players.values(), *self.bettors.values()]:  # each one's own
            await client.wait_seq(self.table, log.last_seq)  # (another process may be later)
        self._collect_private(log)
        self.log.append(log)
        return log

    def holder(self) -> str | None:
        """The shoe holder as the events tell it (None: the house or nobody)."""
        since = self.watcher.snapshot_at.get(self.table, 0)
        snap = self.watcher.snapshots.get(self.table)
        holder = snap["holder"] if snap is not None else None
        for event in self.watcher.events(self.table, start=since):
            if event["kind"] == "shoe_accepted":
                holder = event["data"]["player"]
            elif event["kind"] in ("shoe_passed", "shoe_held_by_house") or (
                event["kind"] == "stood" and event["data"]["player"] == holder
            ):
                holder = None
        return holder

    def _collect(self, log: CoupLog, start: int) -> None:
        rid = log.round_id
        in_round = False
        for event in self.watcher.events(self.table, start=start):
            kind, data = event["kind"], event["data"]
            if kind == "betting_closed" and data["round_id"] == rid:
                in_round = True
                log.first_seq = event["seq"]
                if log.bets:  # placed by this driver, in this order: the seated players'
                    # and the turner's are public, a bettor's without a seat are not (§5)
                    assert data["bets"].items() <= log.bets.items(), (data["bets"], log.bets)
                    seated = {p: b for p, b in log.bets.items() if p in self.players}
                    assert seated.items() <= data["bets"].items(), (data["bets"], log.bets)
                    totals: dict[str, int] = {}
                    for bets in log.bets.values():
                        for area, amount in bets.items():
                            totals[area] = totals.get(area, 0) + amount
                    assert data["totals"] == totals, (data["totals"], totals)
                else:  # placed before (by the test itself)
                    log.bets = {p: dict(b) for p, b in data["bets"].items()}
            elif kind == "dealt" and in_round:
                log.turners = dict(data["turners"])
            elif kind == "card" and in_round:
                log.cards[data["hand"]][data["index"]] = data["card"]
            elif kind == "result" and data["round_id"] == rid:
                log.result = dict(data)
            elif kind == "settled" and data["round_id"] == rid:
                log.payouts = list(data["payouts"])
                log.last_seq = event["seq"]
                break

    def _collect_private(self, log: CoupLog) -> None:
        for pid, client in [*self.players.items(), *self.bettors.items()]:
            for event in client.events(self.table, "settled", start=0):
                if event["data"]["round_id"] == log.round_id:
                    log.private[pid] = event["data"]
                    # A bettor without a seat's payouts are theirs alone (§5): their own
                    # copy has them (``own``), unless they turned (then public already).
                    public = {(p["player"], p["area"]) for p in log.payouts}
                    own = event["data"].get("own", [])
                    log.payouts += [p for p in own if (p["player"], p["area"]) not in public]
