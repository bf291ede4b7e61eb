"""Real-socket test helpers: a recording WebSocket client, a table driver and a rules oracle.

conftest.py loads this module under the unique name ``server_helpers`` (another test
folder has its own ``helpers.py``); test modules ``from server_helpers import ...``.

- :class:`Client` speaks the Chemmy protocol over a real ``websockets`` connection, in
  JSON (text frames) or msgpack (binary frames). A reader task records **every** frame
  received (:attr:`Client.frames`), routes replies to the command that asked, checks
  that event ``seq`` numbers continue without a gap or a duplicate per table, and wakes
  whoever waits for a frame. It survives reconnections (:meth:`Client.reconnect`), so a
  resumed stream is checked against what came before the drop.
- :class:`Game` drives one table through its clients, from the events a watching client
  receives: answers shoe offers and cuts, places bets, presses DONE and turns the cards
  (squeezing card by card, or tossing), and returns a :class:`CoupLog` per coup.
- :func:`expected_payout` and :func:`baccarat` are an independent oracle of GAME_RULES
  §2-§3 (written from the rules, not from the engine) to check payouts and draws.

No sleeps: everything waits for a frame, with a timeout scaled by
``CHEMMY_TESTS_TIMEOUT_FACTOR`` (as websockets' own tests do) for slow machines.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import random
import re
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import msgpack
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

JSON = "chemmy.v1.json"
MSGPACK = "chemmy.v1.msgpack"
FORMATS = {"json": JSON, "msgpack": MSGPACK}

#: Multiply every timeout and table timer by this on a slow machine.
TIMEOUT_FACTOR = float(os.environ.get("CHEMMY_TESTS_TIMEOUT_FACTOR", "1"))

SECRET = "chemmy-tests-hs256-secret-0123456789abcdef"  # >= 32 bytes
OTHER_SECRET = "not-the-servers-secret-0123456789abcdefgh"

CARD = re.compile(r"[A2-9TJQK][shdc]")
PROMPTS = frozenset({"shoe_offered", "cut_offered", "betting_opened", "turn", "waiting"})
BALANCE_KEYS = frozenset({"balance", "available", "net", "balances", "before", "after"})

_ids = itertools.count(1)


def scaled(seconds: float) -> float:
    """A timeout or a table timer, scaled for slow machines."""
    return seconds * TIMEOUT_FACTOR


def timers(**over: float) -> dict[str, float]:
    """Table timers (seconds, scaled): short enough for tests, long enough not to fire
    while a test drives the table itself."""
    base = {"betting": 5, "squeeze": 5, "third_card": 5, "shoe_offer": 5, "cut": 5, "grace": 5}
    base.update(over)
    return {k: scaled(v) for k, v in base.items()}


def table_def(table_id: str = "t1", **over: Any) -> dict[str, Any]:
    """A table definition for ServerConfig.tables (tier 1-100: bets of 100-10,000)."""
    definition: dict[str, Any] = {"id": table_id, "name": f"Test {table_id}", "tier": "1-100"}
    definition["timers"] = timers(**over.pop("timers", {}))
    definition.update(over)
    return definition


class ProtocolProblem(AssertionError):
    """The server broke the protocol (a wrong frame type, a seq gap, a duplicate...)."""


@dataclass(frozen=True, slots=True)
class Frame:
    index: int
    conn: int  # which connection of this client (0, 1, ... after reconnects)
    raw: str | bytes
    msg: dict[str, Any]
    at: float


def decode_frame(raw: str | bytes, fmt: str) -> dict[str, Any]:
    if fmt == JSON:
        if not isinstance(raw, str):
            raise ProtocolProblem("a binary frame on a JSON connection")
        value = json.loads(raw)
    else:
        if not isinstance(raw, bytes):
            raise ProtocolProblem("a text frame on a msgpack connection")
        value = msgpack.unpackb(raw, raw=False)
    if not isinstance(value, dict):
        raise ProtocolProblem(f"a frame that is not a map: {value!r}")
    return value


def encode_frame(message: Mapping[str, Any], fmt: str) -> str | bytes:
    if fmt == JSON:
        return json.dumps(message, separators=(",", ":"))
    return msgpack.packb(dict(message), use_bin_type=True)


class Client:
    """One player's (or spectator's) connection(s) to a live server, recording everything."""

    def __init__(self, url: str, fmt: str = "json", *, label: str = "client") -> None:
        self.url = url
        self.fmt = FORMATS.get(fmt, fmt)
        self.label = label
        self.ws: ClientConnection | None = None
        self.frames: list[Frame] = []
        self.problems: list[str] = []
        self.last_seq: dict[str, int] = {}
        self.snapshots: dict[str, dict[str, Any]] = {}  # the last snapshot per table
        self.snapshot_at: dict[str, int] = {}  # ... and the index of its frame
        self.player: str | None = None
        self.name: str | None = None
        self.token: str | None = None
        self.hello_reply: dict[str, Any] | None = None
        self.conn_no = -1
        self.close_codes: list[int | None] = []
        self._reader: asyncio.Task[None] | None = None
        self._waiters: list[
            tuple[Callable[[dict[str, Any]], bool], asyncio.Future[dict[str, Any]]]
        ] = []
        self._closed = asyncio.Event()
        self._resumes: dict[str, int] = {}  # join id -> since

    def __repr__(self) -> str:
        return f"Client({self.label!r}, {self.fmt}, player={self.player!r})"

    # -- connection ------------------------------------------------------------------
    async def open(self, **kwargs: Any) -> Client:
        kwargs.setdefault("subprotocols", [self.fmt])
        self.ws = await connect(
            self.url,
            proxy=None,
            compression=None,
            max_size=None,
            open_timeout=scaled(10),
            close_timeout=scaled(5),
            ping_interval=None,
            **kwargs,
        )
        if self.ws.subprotocol != self.fmt:
            raise ProtocolProblem(f"asked for {self.fmt}, got {self.ws.subprotocol}")
        self.conn_no += 1
        self._closed = asyncio.Event()
        self._reader = asyncio.create_task(
            self._read(self.ws, self.conn_no), name=f"reader-{self.label}"
        )
        return self

    async def _read(self, ws: ClientConnection, conn_no: int) -> None:
        try:
            async for raw in ws:
                self._on_frame(raw, conn_no)
        except ConnectionClosed:
            pass
        finally:
            self.close_codes.append(ws.close_code)
            self._closed.set()
            for _pred, fut in self._waiters:
                if not fut.done():
                    fut.set_exception(
                        ConnectionError(
                            f"{self.label}: connection closed ({ws.close_code} {ws.close_reason!r})"
                        )
                    )

    def _on_frame(self, raw: str | bytes, conn_no: int) -> None:
        try:
            msg = decode_frame(raw, self.fmt)
        except (ProtocolProblem, ValueError) as exc:
            self.problems.append(f"{self.label}: undecodable frame {raw[:80]!r}: {exc}")
            return
        frame = Frame(len(self.frames), conn_no, raw, msg, time.monotonic())
        self.frames.append(frame)
        kind = msg.get("type")
        if kind == "event":
            table, seq = msg.get("table"), msg.get("seq")
            if not isinstance(table, str) or not isinstance(seq, int):
                self.problems.append(f"{self.label}: an event without table/seq: {msg}")
            else:
                last = self.last_seq.get(table)
                if last is not None and seq != last + 1:
                    what = "duplicate" if seq <= last else "gap"
                    self.problems.append(f"{self.label}: {what}: seq {seq} after {last} on {table}")
                self.last_seq[table] = max(seq, last or 0)
        elif kind == "ok" and msg.get("resumed") is True and repr(msg.get("id")) in self._resumes:
            self.last_seq[str(msg["table"])] = self._resumes.pop(repr(msg.get("id")))
        elif kind == "ok" and isinstance(msg.get("snapshot"), dict):
            self.last_seq[str(msg["table"])] = int(msg["snapshot"]["seq"])
            self.snapshots[str(msg["table"])] = msg["snapshot"]
            self.snapshot_at[str(msg["table"])] = frame.index
        for pred, fut in list(self._waiters):
            if not fut.done() and pred(msg):
                fut.set_result(msg)

    @property
    def closed(self) -> bool:
        return self._closed.is_set()

    async def wait_closed(self, timeout: float | None = None) -> int | None:
        """Wait for the server to close this connection; return the close code."""
        async with asyncio.timeout(timeout or scaled(5)):
            await self._closed.wait()
        assert self._reader is not None
        await self._reader
        return self.close_codes[-1]

    async def close(self) -> None:
        if self.ws is not None:
            with contextlib.suppress(Exception):
                await self.ws.close()
        if self._reader is not None:
            with contextlib.suppress(Exception):
                async with asyncio.timeout(scaled(5)):
                    await self._reader

    async def abort(self) -> None:
        """Drop the connection abruptly (no closing handshake), as a lost network does."""
        assert self.ws is not None and self.ws.transport is not None
        self.ws.transport.abort()
        assert self._reader is not None
        with contextlib.suppress(Exception):
            await self._reader

    async def reconnect(
        self, table: str | None = None, *, since: int | bool | None = True
    ) -> dict[str, Any] | None:
        """A new connection for the same player (same token): hello, then join ``table``
        with ``since`` = the last seq received (``since=False``: ask for a snapshot)."""
        if self.ws is not None and not self.closed:
            await self.abort()
        await self.open()
        assert self.token is not None, "only a token player can come back as the same player"
        await self.hello(token=self.token)
        if table is None:
            return None
        if since is True:
            since = self.last_seq.get(table)
        return await self.call(
            "join", table=table, **({} if since in (None, False) else {"since": since})
        )

    # -- sending ---------------------------------------------------------------------
    async def send_raw(self, frame: str | bytes) -> int:
        """Send one frame as it is; return the frame index replies will come after."""
        assert self.ws is not None
        self._note_resume(frame)
        start = len(self.frames)
        await self.ws.send(frame)
        return start

    def _note_resume(self, frame: str | bytes) -> None:
        """A join with ``since`` asks for the events after it again: remember it, so the
        replay that follows the ok is not taken for duplicates."""
        try:
            msg = decode_frame(frame, self.fmt)
        except Exception:
            return
        since, mid = msg.get("since"), msg.get("id")
        if msg.get("type") == "join" and isinstance(since, int) and not isinstance(since, bool):
            self._resumes[repr(mid)] = since

    async def send(self, message: Mapping[str, Any]) -> int:
        return await self.send_raw(encode_frame(message, self.fmt))

    async def rpc(
        self, kind: str, /, *, timeout: float | None = None, msg_id: Any = None, **fields: Any
    ) -> dict[str, Any]:
        """Send a command with a fresh id (or ``msg_id``); return its reply (events keep
        being recorded meanwhile)."""
        mid = next(_ids) if msg_id is None else msg_id
        start = await self.send({"type": kind, "id": mid, **fields})
        return await self.wait_frame(
            lambda m: m.get("type") in ("ok", "error") and m.get("id") == mid,
            start=start,
            timeout=timeout,
            what=f"reply to {kind}",
        )

    async def call(self, kind: str, /, *, msg_id: Any = None, **fields: Any) -> dict[str, Any]:
        """:meth:`rpc`, asserting the reply is ok."""
        reply = await self.rpc(kind, msg_id=msg_id, **fields)
        assert reply["type"] == "ok", f"{self.label}: {kind} {fields} refused: {reply}"
        return reply

    async def refused(
        self, code: str, kind: str, /, *, msg_id: Any = None, **fields: Any
    ) -> dict[str, Any]:
        """:meth:`rpc`, asserting the reply is an error with ``code``."""
        reply = await self.rpc(kind, msg_id=msg_id, **fields)
        assert reply["type"] == "error", f"{self.label}: {kind} {fields} was accepted: {reply}"
        assert reply["code"] == code, f"{self.label}: {kind} {fields}: {reply}"
        assert isinstance(reply["message"], str) and reply["message"]
        return reply

    async def hello(
        self, *, token: str | None = None, name: str | None = None, guest: bool | None = None
    ) -> dict[str, Any]:
        fields: dict[str, Any] = {}
        if token is not None:
            fields["token"] = token
        else:
            fields["guest"] = True if guest is None else guest
            if name is not None:
                fields["name"] = name
        reply = await self.call("hello", **fields)
        self.player, self.name, self.token = reply["player"], reply["name"], token
        self.hello_reply = reply
        return reply

    async def join(self, table: str = "t1", **fields: Any) -> dict[str, Any]:
        return await self.call("join", table=table, **fields)

    async def balance(self) -> int:
        return int((await self.call("balance"))["balance"])

    # -- waiting ---------------------------------------------------------------------
    async def wait_frame(
        self,
        pred: Callable[[dict[str, Any]], bool],
        *,
        start: int = 0,
        timeout: float | None = None,
        what: str = "frame",
    ) -> dict[str, Any]:
        """The first frame from index ``start`` on that matches ``pred``, waiting for it."""
        for frame in self.frames[start:]:
            if pred(frame.msg):
                return frame.msg
        if self.closed:
            raise AssertionError(f"{self.label}: waiting for {what} on a closed connection")
        fut: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        entry = (pred, fut)
        self._waiters.append(entry)
        try:
            async with asyncio.timeout(timeout if timeout is not None else scaled(5)):
                return await fut
        except TimeoutError:
            recent = [f.msg for f in self.frames[-5:]]
            raise AssertionError(
                f"{self.label}: no {what} in time; last frames: {recent}"
            ) from None
        finally:
            self._waiters.remove(entry)

    async def wait_event(
        self,
        kind: str,
        pred: Callable[[dict[str, Any]], bool] | None = None,
        *,
        table: str | None = None,
        after: int | None = None,
        start: int = 0,
        timeout: float | None = None,
    ) -> dict[str, Any]:
        """The first event ``kind`` (with seq > ``after``, matching ``pred``) received."""

        def match(m: dict[str, Any]) -> bool:
            return (
                m.get("type") == "event"
                and m.get("kind") == kind
                and (table is None or m.get("table") == table)
                and (after is None or m.get("seq", 0) > after)
                and (pred is None or pred(m))
            )

        return await self.wait_frame(match, start=start, timeout=timeout, what=f"event {kind}")

    async def wait_seq(self, table: str, seq: int, timeout: float | None = None) -> None:
        """Wait until every event of ``table`` up to ``seq`` has been received."""
        if self.last_seq.get(table, -1) >= seq:
            return
        await self.wait_frame(
            lambda m: (
                m.get("type") == "event" and m.get("table") == table and m.get("seq", 0) >= seq
            ),
            timeout=timeout,
            what=f"seq {seq} of {table}",
        )

    # -- reading what came -----------------------------------------------------------
    def events(
        self, table: str | None = None, kind: str | None = None, *, start: int = 0
    ) -> list[dict[str, Any]]:
        return [
            f.msg
            for f in self.frames[start:]
            if f.msg.get("type") == "event"
            and (table is None or f.msg.get("table") == table)
            and (kind is None or f.msg.get("kind") == kind)
        ]

    def replies(self, start: int = 0) -> list[dict[str, Any]]:
        return [f.msg for f in self.frames[start:] if f.msg.get("type") in ("ok", "error")]

    async def next_reply(self, start: int, timeout: float | None = None) -> dict[str, Any]:
        """The first reply (ok or error, whatever its id) from frame index ``start`` on."""
        return await self.wait_frame(
            lambda m: m.get("type") in ("ok", "error"), start=start, timeout=timeout, what="a reply"
        )

    def chats(self) -> list[dict[str, Any]]:
        return [f.msg for f in self.frames if f.msg.get("type") == "chat"]

    def assert_clean(self) -> None:
        assert not self.problems, self.problems


# ---------------------------------------------------------------------- the rules oracle
def card_points(card: str) -> int:
    """§1: A = 1, 2-9 face value, T J Q K = 0."""
    rank = card[0]
    if rank == "A":
        return 1
    if rank in "TJQK":
        return 0
    return int(rank)


def total(cards: Iterable[str]) -> int:
    return sum(card_points(c) for c in cards) % 10


def baccarat(player: list[str], banker: list[str]) -> str:
    """Check the draws of §2 on two complete hands and return the outcome."""
    p2, b2 = total(player[:2]), total(banker[:2])
    if p2 >= 8 or b2 >= 8:
        assert len(player) == 2 and len(banker) == 2, (player, banker)
    else:
        assert len(player) == (3 if p2 <= 5 else 2), (player, banker)
        if len(player) == 2:
            assert len(banker) == (3 if b2 <= 5 else 2), (player, banker)
        else:
            p3 = card_points(player[2])
            draws = {
                0: True,
                1: True,
                2: True,
                3: p3 != 8,
                4: 2 <= p3 <= 7,
                5: 4 <= p3 <= 7,
                6: p3 in (6, 7),
                7: False,
            }
            assert len(banker) == (3 if draws[b2] else 2), (player, banker)
    pt, bt = total(player), total(banker)
    return "player" if pt > bt else "banker" if bt > pt else "tie"


def expected_payout(area: str, stake: int, player: list[str], banker: list[str]) -> tuple[int, int]:
    """(returned, commission) of one bet at a commission table with pairs (§3)."""
    outcome = baccarat(player, banker)
    if area == "player":
        return (2 * stake if outcome == "player" else stake if outcome == "tie" else 0), 0
    if area == "banker":
        if outcome == "tie":
            return stake, 0
        if outcome == "banker":
            win = stake * 95 // 100
            return stake + win, stake - win
        return 0, 0
    if area == "tie":
        return (9 * stake if outcome == "tie" else 0), 0
    if area == "player_pair":
        return (12 * stake if player[0][0] == player[1][0] else 0), 0
    if area == "banker_pair":
        return (12 * stake if banker[0][0] == banker[1][0] else 0), 0
    raise AssertionError(f"no oracle for {area}")


# ---------------------------------------------------------------------- the table driver
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

    ``players`` maps player id -> Client (each seated); ``watcher`` is any client at the
    table (it may be one of the players). ``style(pid, hand, third)`` picks a squeeze
    style (None: TOSS); ``accept(pid)`` whether an offered shoe is accepted.
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
    ) -> None:
        self.table = table
        self.players = dict(players)
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

    async def act(self, pid: str, kind: str, **fields: Any) -> dict[str, Any]:
        """One player's command, asserted ok; then wait until the watcher has its events."""
        reply = await self.players[pid].call(kind, table=self.table, **fields)
        await self.watcher.wait_seq(self.table, reply["seq"])
        return reply

    def prompt(self) -> dict[str, Any]:
        """What the table waits for: the last prompt event, or the watcher's snapshot."""
        since = self.watcher.snapshot_at.get(self.table, 0)
        for event in reversed(self.watcher.events(self.table, start=since)):
            if event["kind"] in PROMPTS:
                return event
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
            elif kind == "cut_offered":
                size = self.shoe_size()
                position = self.rng.randint(10, size - 10)
                self.cuts.append(position)
                await self.act(data["player"], "cut", position=position)
            else:
                raise AssertionError(f"expected an offer, a cut or betting, got {prompt}")
        raise AssertionError("the table never opened betting")

    async def turn_stage(self, turn: dict[str, Any], log: CoupLog) -> None:
        """The turner reveals the stage's cards: TOSS, or a squeeze card by card."""
        data = turn["data"]
        hand, turner, third = data["hand"], data["turner"], data["third"]
        client = self.players[turner]
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
        for pid in self.players:
            await self.act(pid, "done")
        log = CoupLog(
            rid, opened["data"]["coup_no"], holder, {p: dict(b) for p, b in bets.items() if b}
        )
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
                if log.bets:  # placed by this driver, in this order
                    assert data["bets"] == log.bets, (data["bets"], log.bets)
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
        for pid, client in self.players.items():
            for event in client.events(self.table, "settled", start=0):
                if event["data"]["round_id"] == rid:
                    log.private[pid] = event["data"]


def without_actions(data: Mapping[str, Any]) -> dict[str, Any]:
    """An event's data less the ``actions`` overlay a seated player's copy may carry."""
    return {k: v for k, v in data.items() if k != "actions"}


def walk(value: Any, path: tuple[Any, ...] = ()) -> Iterable[tuple[tuple[Any, ...], Any]]:
    """Every (path, leaf or key) in a decoded frame; dict keys are yielded as leaves too."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield (*path, "<key>"), key
            yield from walk(item, (*path, key))
    elif isinstance(value, list | tuple):
        for i, item in enumerate(value):
            yield from walk(item, (*path, i))
    else:
        yield path, value


async def http_get(
    port: int, path: str, headers: Mapping[str, str] | None = None
) -> tuple[int, dict[str, str], bytes]:
    """A plain HTTP/1.1 GET over asyncio streams: (status, headers, body)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        lines = [f"GET {path} HTTP/1.1", f"Host: 127.0.0.1:{port}", "Connection: close"]
        lines += [f"{k}: {v}" for k, v in (headers or {}).items()]
        writer.write(("\r\n".join(lines) + "\r\n\r\n").encode())
        await writer.drain()
        async with asyncio.timeout(scaled(5)):
            head = await reader.readuntil(b"\r\n\r\n")
            status_line, *header_lines = head.decode("latin-1").split("\r\n")
            status = int(status_line.split()[1])
            hdrs = {}
            for line in header_lines:
                if ":" in line:
                    k, v = line.split(":", 1)
                    hdrs[k.strip().lower()] = v.strip()
            length = int(hdrs.get("content-length", "0"))
            body = await reader.readexactly(length) if length else await reader.read()
        return status, hdrs, body
    finally:
        writer.close()
        with contextlib.suppress(Exception):
            await writer.wait_closed()
