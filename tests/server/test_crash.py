"""Crash tests: ``kill -9`` a real server mid-round, restart it on the same database.

GAME_RULES §8: whatever stops a round midway, it resumes from its last recorded step with
the same cards and the same held wagers. The croupier stores every step before its events
are sent, so what a client saw before the crash is always in the database, and nothing is
paid twice.

Each test runs ``python -m server.net.main`` as a subprocess on a temporary SQLite file
with one table, plays with three token-authenticated players over real websockets,
SIGKILLs the server at a chosen point (betting open with chips placed; a squeeze in
progress; right after the final card's TOSS is sent), checks what the dead server left in
the file, restarts it on the same file and port, reconnects the same players, finishes
the round and checks the cards, the records and the money:

- the table row's ``seq`` is at least every event ``seq`` a client saw (stored before sent);
- the cards dealt after the restart are the ones the stored shoe and coup held, and the
  ones the turner had already seen squeezing;
- ``audit()`` sums to 0 and every balance matches its ledger; players + house + held
  tables add up to what was funded; the held account is empty once rounds are settled;
- every bet of every recorded round has exactly one ``hold`` entry and exactly one of
  ``lose`` / ``return`` (plus one ``win`` when it won), with the amounts of the record.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path
from typing import Any

import pytest
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from server.engine.cards import card_value, hand_total
from server.engine.coup import banker_draws, is_natural, player_draws, resolve_coup
from server.engine.shoe import Shoe
from server.net.auth import make_token
from server.store.sqlite import SQLiteStore

ROOT = Path(__file__).resolve().parents[2]
SECRET = "crash-test-secret-" + "0123456789abcdef" * 2
TABLE = "c1"
PLAYERS = ("alice", "bob", "carol")
FUNDS = 100_000
# Bob always has the highest Player bet, so a player (never the croupier) turns each hand.
BETS: dict[str, dict[str, int]] = {
    "alice": {"banker": 1_000},
    "bob": {"player": 2_000, "player_pair": 100},
    "carol": {"player": 500, "tie": 100},
}
CONFIG = f"""
[[tables]]
id = "{TABLE}"
name = "Crash"
tier = "1-100"
timers = {{ betting = 60, squeeze = 60, third_card = 60, shoe_offer = 60, cut = 60, grace = 120 }}
"""
STEP = 15.0  # seconds any one step may take before a test fails


# ---------------------------------------------------------------------- the server
def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class ServerProcess:
    """``python -m server.net.main`` on one database file and port, restartable."""

    def __init__(self, tmp: Path, config: str = CONFIG, *args: str) -> None:
        self.db = tmp / "chemmy.sqlite3"
        self.config = tmp / "chemmy.toml"
        self.config.write_text(config)
        self.port = free_port()
        self.args = args
        self.proc: subprocess.Popen[bytes] | None = None
        self.log: list[str] = []
        self.starts = 0

    @property
    def url(self) -> str:
        return f"ws://127.0.0.1:{self.port}"

    def start(self) -> None:
        assert self.proc is None or self.proc.poll() is not None
        env = {**os.environ, "CHEMMY_JWT_SECRET": SECRET, "CHEMMY_LOG_FORMAT": "text"}
        env.pop("CHEMMY_CONFIG", None)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "server.net.main", "--port", str(self.port),
             "--db", str(self.db), "--config", str(self.config), *self.args],
            cwd=ROOT, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        self.starts += 1
        ready = threading.Event()
        proc = self.proc

        def pump() -> None:
            assert proc.stderr is not None
            with proc.stderr:
                for raw in proc.stderr:
                    line = raw.decode("utf-8", "replace").rstrip()
                    self.log.append(line)
                    if "chemmy-server listening on" in line:
                        ready.set()
            ready.set()

        self.pump = threading.Thread(target=pump, daemon=True)
        self.pump.start()
        if not ready.wait(STEP) or proc.poll() is not None:
            self.stop_now()
            raise AssertionError("the server did not start:\n" + "\n".join(self.log[-30:]))

    def wait_exit(self, timeout: float = STEP) -> int:
        """Wait for the process to exit; its exit status."""
        assert self.proc is not None
        code = self.proc.wait(timeout)
        self.pump.join(STEP)
        return code

    def kill(self) -> None:
        """``kill -9``: no drain, no close, no flush."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.wait_exit(STEP)

    def terminate(self, timeout: float = STEP) -> int:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)
        return self.wait_exit(timeout)

    def stop_now(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.wait_exit(STEP)


@pytest.fixture
def server(tmp_path: Path) -> Iterable[ServerProcess]:
    made = ServerProcess(tmp_path)
    made.start()
    yield made
    made.stop_now()


# ---------------------------------------------------------------------- a player
class Player:
    """One token-authenticated connection: replies by id, events in order."""

    _ids = itertools.count(1)

    def __init__(self, name: str, ws: ClientConnection) -> None:
        self.name = name
        self.ws = ws
        self.events: list[dict[str, Any]] = []
        self.cursor = 0
        self.pending: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self.arrived = asyncio.Event()
        self.reader = asyncio.create_task(self._read())

    @classmethod
    async def connect(cls, url: str, name: str) -> Player:
        ws = await connect(url, subprotocols=["chemmy.v1.json"], open_timeout=STEP)  # type: ignore[list-item]
        player = cls(name, ws)
        reply = await player.ok("hello", token=make_token(SECRET, name))
        assert reply["player"] == name
        return player

    async def _read(self) -> None:
        try:
            async for frame in self.ws:
                message = json.loads(frame)
                if message.get("type") == "event":
                    self.events.append(message)
                    self.arrived.set()
                elif message.get("type") in ("ok", "error"):
                    future = self.pending.pop(str(message.get("id")), None)
                    if future is not None and not future.done():
                        future.set_result(message)
        except ConnectionClosed:
            pass
        finally:
            for future in self.pending.values():
                if not future.done():
                    future.set_exception(ConnectionError(f"{self.name}: connection lost"))
            self.pending.clear()
            self.arrived.set()

    async def send(self, kind: str, **fields: Any) -> asyncio.Future[dict[str, Any]]:
        """Send a command; the future is its reply. Ids are unique across restarts."""
        mid = f"{self.name}-{next(self._ids)}-{secrets.token_hex(3)}"
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self.pending[mid] = future
        await self.ws.send(json.dumps({"type": kind, "id": mid, **fields}))
        return future

    async def cmd(self, kind: str, **fields: Any) -> dict[str, Any]:
        return await asyncio.wait_for(await self.send(kind, **fields), STEP)

    async def ok(self, kind: str, **fields: Any) -> dict[str, Any]:
        reply = await self.cmd(kind, **fields)
        assert reply["type"] == "ok", f"{self.name} {kind} {fields}: {reply}"
        return reply

    async def next_event(self) -> dict[str, Any]:
        deadline = time.monotonic() + STEP
        while self.cursor >= len(self.events):
            if self.reader.done():
                raise ConnectionError(f"{self.name}: connection lost")
            self.arrived.clear()
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"{self.name}: no event in {STEP} s")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.arrived.wait(), left)
        self.cursor += 1
        return self.events[self.cursor - 1]

    async def wait_for(self, kind: str) -> dict[str, Any]:
        while True:
            event = await self.next_event()
            if event["kind"] == kind:
                return event

    def seen(self, kind: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e["kind"] == kind]

    @property
    def max_seq(self) -> int:
        return max((e["seq"] for e in self.events), default=0)

    async def close(self) -> None:
        with contextlib.suppress(Exception):
            await self.ws.close()
        with contextlib.suppress(Exception):
            await self.reader


class Table:
    """The three players at the table; the first one's event stream drives play."""

    def __init__(self, players: dict[str, Player], snapshots: dict[str, dict[str, Any]]) -> None:
        self.players = players
        self.snapshots = snapshots
        self.joined = dict(snapshots)  # every player's join snapshot, kept
        self.obs = players[PLAYERS[0]]
        # What is known of the current coup: (hand, index 1-3) -> card, seen or turned.
        self.known: dict[tuple[str, int], str] = {}
        self.turners: dict[str, str | None] = {}  # the coup's turners, from "dealt"

    @classmethod
    async def seat(cls, url: str) -> Table:
        players: dict[str, Player] = {}
        joined: dict[str, dict[str, Any]] = {}
        for name in PLAYERS:
            players[name] = p = await Player.connect(url, name)
            joined[name] = (await p.ok("join", table=TABLE))["snapshot"]
            await p.ok("sit", table=TABLE)
        table = cls(players, {})
        table.joined = joined
        return table

    @classmethod
    async def rejoin(cls, url: str) -> Table:
        """After a restart: the same players, new connections, a snapshot each."""
        players: dict[str, Player] = {}
        snapshots: dict[str, dict[str, Any]] = {}
        for name in PLAYERS:
            players[name] = p = await Player.connect(url, name)
            reply = await p.ok("join", table=TABLE)
            assert reply["resumed"] is False and "snapshot" in reply, reply
            snapshots[name] = reply["snapshot"]
        return cls(players, snapshots)

    def __getitem__(self, name: str) -> Player:
        return self.players[name]

    @property
    def max_seq(self) -> int:
        return max(p.max_seq for p in self.players.values())

    async def close(self) -> None:
        for p in self.players.values():
            await p.close()

    # -- moving the table on ---------------------------------------------------------
    async def _answer(self, event: dict[str, Any]) -> None:
        kind, data = event["kind"], event["data"]
        if kind == "shoe_offered":
            await self[data["player"]].ok("accept_shoe", table=TABLE)
        elif kind == "cut_offered":
            await self[data["player"]].ok("cut", table=TABLE, position=200)

    async def to_betting(self) -> None:
        """Accept the shoe and cut when asked, until betting is open for a new coup."""
        snap = self.snapshots.get(self.obs.name)
        if snap is not None:
            self.snapshots.pop(self.obs.name)
            if snap["phase"] == "betting" and snap["coup"] is None:
                return
            if snap["phase"] == "shoe_offer":
                await self[snap["offer"]["player"]].ok("accept_shoe", table=TABLE)
            elif snap["phase"] == "cut":
                await self[snap["cutter"]].ok("cut", table=TABLE, position=200)
        while True:
            event = await self.obs.next_event()
            if event["kind"] == "betting_opened":
                return
            await self._answer(event)

    async def place_bets(self) -> None:
        for name, bets in BETS.items():
            for area, amount in bets.items():
                await self[name].ok("bet", table=TABLE, area=area, amount=amount)

    async def press_done(self) -> str:
        """DONE for everyone: betting closes, four cards are dealt. Returns the round id."""
        for name in PLAYERS:
            await self[name].ok("done", table=TABLE)
        closed = await self.obs.wait_for("betting_closed")
        self.known, self.turners = {}, {}
        return str(closed["data"]["round_id"])

    def _note_cards(self, events: Iterable[dict[str, Any]]) -> None:
        for e in events:
            if e["kind"] == "card":
                self._learn(e["data"]["hand"], e["data"]["index"], e["data"]["card"])

    def _learn(self, hand: str, index: int, card: str) -> None:
        old = self.known.setdefault((hand, int(index)), card)
        assert old == card, f"{hand} card {index} was {old}, now {card}"

    def _hand(self, hand: str) -> list[str]:
        return [self.known[(hand, i)] for i in (1, 2, 3) if (hand, i) in self.known]

    def _final_stage(self, hand: str, third: bool) -> bool:
        """Whether this stage's cards are the coup's last ones (the turner has seen them).
        With the house holding the shoe (a restart during an offer: nobody there to
        answer it, GAME_RULES §5) the croupier turns Banker at once: the Player stage is
        the last a player turns."""
        if self.turners.get("banker", "?") is None:
            return hand == "player"
        if hand == "player" and not third:
            return False
        player, banker = self._hand("player"), self._hand("banker")
        pt, bt = hand_total(player[:2]), hand_total(banker[:2])
        if not third:
            return is_natural(pt) or is_natural(bt) or not (player_draws(pt) or banker_draws(bt, None))
        if hand == "player":
            return not banker_draws(bt, card_value(player[2]))
        return True

    async def _squeeze(self, turner: Player, hand: str) -> None:
        """The turner squeezes (PEEK): only they are shown the face-down cards."""
        reply = await turner.ok("squeeze", table=TABLE, hand=hand, style="peek")
        (event,) = [e for e in turner.events if e["seq"] == reply["seq"]]
        assert event["kind"] == "squeeze"
        for index, card in event["data"]["cards"].items():
            self._learn(hand, int(index), card)

    async def play_turns(
        self,
        *,
        stop_at_squeeze: bool = False,
        on_final: Callable[[Player, str], Awaitable[None]] | None = None,
    ) -> dict[str, Any] | None:
        """Turn every stage (squeeze, then TOSS) until ``settled``, which is returned.

        ``stop_at_squeeze``: return None once the first turner is squeezing.
        ``on_final``: called instead of the last TOSS (the coup's last cards); returns None.
        """
        while True:
            event = await self.obs.next_event()
            self._note_cards([event])
            kind, data = event["kind"], event["data"]
            if kind == "settled":
                return event
            if kind == "dealt":
                self.turners = dict(data["turners"])
            if kind != "turn":
                continue
            turner, hand = self[data["turner"]], data["hand"]
            await self._squeeze(turner, hand)
            if stop_at_squeeze:
                return None
            if on_final is not None and self._final_stage(hand, data["third"]):
                await on_final(turner, hand)
                return None
            await turner.ok("toss", table=TABLE, hand=hand)

    async def resume_coup(self, snap: dict[str, Any]) -> dict[str, Any]:
        """After a restart in the middle of a coup: the turner named by the snapshot goes on."""
        coup = snap["coup"]
        assert coup is not None
        hand = coup["hand"]
        turner = self[coup["turners"][hand]]
        await turner.ok("toss", table=TABLE, hand=hand)
        settled = await self.play_turns()
        assert settled is not None
        return settled


# ---------------------------------------------------------------------- the database
async def read_db(path: Path) -> tuple[dict[str, Any], SQLiteStore]:
    store = SQLiteStore(path)
    await store.open()
    (row,) = [r for r in await store.load_tables() if r.table_id == TABLE]
    assert row.state is not None
    return row.state, store


async def table_state(path: Path) -> dict[str, Any]:
    state, store = await read_db(path)
    await store.close()
    return state


def coup_cards(state: dict[str, Any]) -> dict[str, list[str]]:
    coup = state["coup"]
    return {hand: [slot["card"] for slot in coup[hand]] for hand in ("player", "banker")}


def next_coup(state: dict[str, Any]) -> dict[str, list[str]]:
    """The coup the stored shoe will deal next (its next six cards are enough)."""
    shoe = Shoe.from_dict(state["shoe"])
    coup = resolve_coup(shoe.cards[shoe.position : shoe.position + 6])
    return {"player": list(coup.player), "banker": list(coup.banker)}


async def check_money(path: Path, *, settled_all: bool = True) -> dict[str, Any]:
    """The ledger after the server stopped: conserved, matched, nothing doubled."""
    store = SQLiteStore(path)
    await store.open()
    try:
        audit = await store.audit()
        assert audit["sum"] == 0, audit
        assert audit["ledger_matches"], audit
        entries = await store.ledger(limit=1_000_000)
        assert len(entries) == audit["entries"]
        keys = Counter(e.key for e in entries)
        assert max(keys.values()) == 1, [k for k, n in keys.items() if n > 1]
        balances = await store.load_balances()
        funded = sum(e.amount for e in entries if e.src == "cashier")
        players = sum(v for a, v in balances.items() if a.startswith("player:"))
        held = sum(v for a, v in balances.items() if a.startswith("held:"))
        staked = sum(v for a, v in balances.items() if a.startswith("stake:"))
        house = balances.get("house", 0)
        assert players + house + held + staked == funded == FUNDS * len(PLAYERS), (
            players, house, held, staked, funded)
        if settled_all:
            assert held == 0 and staked == 0, balances
        # Every bet of every recorded round: one hold, one outcome, a win when it won.
        by_round: dict[str, list[Any]] = {}
        for e in entries:
            if e.round_id is not None:
                by_round.setdefault(e.round_id, []).append(e)
        rounds = {}
        for name in PLAYERS:
            for record in await store.history(name, 100):
                rounds[record["round_id"]] = record
        for rid, record in rounds.items():
            expected: Counter[tuple[str, int]] = Counter()
            for bet in record["bets"]:
                key = f"{rid}:{bet['player']}:{bet['area']}"
                expected[(f"{key}:hold", bet["stake"])] += 1
                if bet["returned"] == 0:
                    expected[(f"{key}:lose", bet["stake"])] += 1
                else:
                    expected[(f"{key}:return", bet["stake"])] += 1
                    if bet["win"]:
                        expected[(f"{key}:win", bet["win"])] += 1
            entries_of = by_round.get(rid, [])
            got = Counter((e.key, e.amount) for e in entries_of if e.kind not in STAKE_KINDS)
            assert got == expected, (rid, got, expected)
            # Chips placed moved player -> stake, removed ones back, and every chip left
            # on the felt was held: per player, staked less unstaked is what was held.
            for name in {e.key.split(":")[1] for e in entries_of if e.kind in STAKE_KINDS}:
                moved = sum(
                    e.amount if e.kind == "stake" else -e.amount
                    for e in entries_of
                    if e.kind in STAKE_KINDS and e.key.split(":")[1] == name
                )
                held_stakes = sum(x["stake"] for x in record["bets"] if x["player"] == name)
                assert moved == held_stakes, (rid, name, moved, held_stakes)
            for name, b in record["balances"].items():
                net = sum(x["returned"] - x["stake"] for x in record["bets"] if x["player"] == name)
                assert b["after"] - b["before"] == net, (rid, name, b, net)
        unrecorded = set(by_round) - set(rounds)
        if settled_all:
            assert not unrecorded, unrecorded
        return {"rounds": rounds, "balances": balances, "audit": audit}
    finally:
        await store.close()


STAKE_KINDS = ("stake", "unstake")  # placing and removing chips (the table's stakes)


def record_cards(record: dict[str, Any]) -> dict[str, list[str]]:
    return {"player": record["player"], "banker": record["banker"]}


async def check_resume(url: str, name: str, since: int) -> str:
    """A second connection resuming from the last seq it saw: the events it missed come
    without a gap, or (when the server no longer keeps them) a full snapshot instead."""
    extra = await Player.connect(url, name)
    try:
        reply = await extra.ok("join", table=TABLE, since=since)
        if reply["resumed"]:
            await extra.ok("ping")  # the replayed events were written before this reply
            seqs = [e["seq"] for e in extra.events]
            assert seqs[: reply["seq"] - since] == list(range(since + 1, reply["seq"] + 1)), (
                since, reply, seqs)
            return "replayed"
        assert reply["snapshot"]["seq"] == reply["seq"] >= since
        return "snapshot"
    finally:
        await extra.close()


# ---------------------------------------------------------------------- the tests
async def test_kill_during_betting_keeps_the_chips_and_deals_the_stored_shoe(
    server: ServerProcess,
) -> None:
    table = await Table.seat(server.url)
    await table.to_betting()
    await table.place_bets()
    for name in PLAYERS[:2]:  # two of three pressed DONE: betting still open
        await table[name].ok("done", table=TABLE)
    seen = table.max_seq
    commitment = table.joined[PLAYERS[0]]["shoe"]["commitment"]
    server.kill()
    await table.close()

    state = await table_state(server.db)
    assert state["seq"] >= seen, "an event was sent before its step was stored"
    assert state["phase"] == "betting" and state["coup"] is None
    placed = {p["id"]: p["bets"] for p in state["players"]}
    assert placed == BETS
    expected = next_coup(state)

    server.start()
    table = await Table.rejoin(server.url)
    for name in PLAYERS:
        snap = table.snapshots[name]
        assert snap["phase"] == "betting" and snap["coup"] is None
        assert snap["shoe"]["commitment"] == commitment
        you = snap["you"]
        assert you["bets"] == BETS[name]
        assert you["balance"] == FUNDS
        assert you["available"] == FUNDS - sum(BETS[name].values())
        assert {s["player"]: s["bets"] for s in snap["seats"]} == BETS
        assert {s["player"]: s["done"] for s in snap["seats"]} == {"alice": True, "bob": True, "carol": False}
    # The placed chips are the table's stakes in the ledger: the restart keeps them.
    for name in PLAYERS:
        wallet = await table[name].ok("balance")
        assert wallet["balance"] == FUNDS
        assert wallet["available"] == FUNDS - sum(BETS[name].values())
    await table["carol"].ok("done", table=TABLE)
    closed = await table.obs.wait_for("betting_closed")
    assert closed["data"]["bets"] == BETS
    settled = await table.play_turns()
    assert settled is not None
    rid = closed["data"]["round_id"]
    history = await table["bob"].ok("history", limit=5)
    (record,) = [r for r in history["rounds"] if r["round_id"] == rid]
    assert record_cards(record) == expected, "the restarted table dealt other cards"
    assert table.known == {
        (h, i + 1): c for h, cards in expected.items() for i, c in enumerate(cards)
    }
    await table.close()
    assert server.terminate() == 0
    money = await check_money(server.db)
    assert list(money["rounds"]) == [rid]


async def test_kill_during_a_squeeze_resumes_with_the_same_cards(server: ServerProcess) -> None:
    table = await Table.seat(server.url)
    await table.to_betting()
    await table.place_bets()
    rid = await table.press_done()
    assert await table.play_turns(stop_at_squeeze=True) is None
    squeezed = dict(table.known)  # Bob saw the Player's two cards, face down to the rest
    assert set(squeezed) == {("player", 1), ("player", 2)}
    seen = table.max_seq
    server.kill()
    await table.close()

    state = await table_state(server.db)
    assert state["seq"] >= seen, "an event was sent before its step was stored"
    assert state["phase"] == "turn" and state["coup"]["round_id"] == rid
    assert state["coup"]["style"] == "peek" and state["coup"]["stage"] == "player"
    stored = coup_cards(state)
    assert stored["player"][:2] == [squeezed[("player", 1)], squeezed[("player", 2)]]
    held = {pid: bets for pid, bets in state["coup"]["held"].items()}
    assert held == BETS

    server.start()
    table = await Table.rejoin(server.url)
    for name in PLAYERS:
        coup = table.snapshots[name]["coup"]
        assert coup is not None and coup["round_id"] == rid and coup["stage"] == "player"
        assert coup["bets"] == BETS
        faces = [slot["card"] for slot in coup["player"]]
        if name == "bob":  # still squeezing: he alone still sees the two cards
            assert faces == stored["player"][:2]
        else:
            assert faces == [None, None]
        assert [slot["card"] for slot in coup["banker"]] == [None, None]
        assert table.snapshots[name]["you"]["balance"] == FUNDS - sum(BETS[name].values())
    # Bob turns the squeezed cards one at a time: the same cards come up.
    bob = table["bob"]
    for index in (1, 2):
        await bob.ok("turn", table=TABLE, hand="player", card=index)
    table._note_cards(bob.events)
    settled = await table.play_turns()
    assert settled is not None and settled["data"]["round_id"] == rid
    full = {h: table._hand(h) for h in ("player", "banker")}
    assert full["player"][:2] == stored["player"][:2]
    assert full["banker"][:2] == stored["banker"][:2]
    history = await table["alice"].ok("history", limit=5)
    (record,) = [r for r in history["rounds"] if r["round_id"] == rid]
    assert record_cards(record) == full
    await table.close()
    assert server.terminate() == 0
    money = await check_money(server.db)
    assert list(money["rounds"]) == [rid]


# Seconds between sending the last TOSS and the kill: blocking (nothing read meanwhile),
# then a negative one: wait for the settlement's events to reach the players first.
DELAYS = (0.0, 0.0, 0.0002, 0.0005, 0.001, 0.002, 0.004, -0.05)


async def test_kill_at_settlement_is_all_or_nothing(server: ServerProcess) -> None:
    """Kill right after the coup's last TOSS is sent, at several delays: either the
    settlement was stored (and maybe sent) or not (and not sent); never half, never twice."""
    outcomes: list[str] = []
    table = await Table.seat(server.url)
    rounds: list[tuple[str, dict[str, list[str]]]] = []
    for delay in DELAYS:
        await table.to_betting()
        await table.place_bets()
        rid = await table.press_done()

        async def kill_after_toss(
            turner: Player, hand: str, delay: float = delay, table: Table = table
        ) -> None:
            await turner.send("toss", table=TABLE, hand=hand)
            if delay > 0:
                time.sleep(delay)  # not asyncio: nothing more is read before the kill
            elif delay < 0:
                # With the house holding, a Player third card may still follow: toss it.
                while (event := await table.obs.next_event())["kind"] != "settled":
                    if event["kind"] == "turn":
                        turn = event["data"]
                        await table[turn["turner"]].ok("toss", table=TABLE, hand=turn["hand"])
                await asyncio.sleep(-delay)
            server.kill()

        assert await table.play_turns(on_final=kill_after_toss) is None
        seen_settled = any(
            e["data"].get("round_id") == rid for p in table.players.values() for e in p.seen("settled")
        )
        seen = table.max_seq
        seen_by = {name: p.max_seq for name, p in table.players.items()}
        known, turners = dict(table.known), dict(table.turners)
        await table.close()

        state = await table_state(server.db)
        assert state["seq"] >= seen, "an event was sent before its step was stored"
        store = SQLiteStore(server.db)
        await store.open()
        record = await store.round_record(rid)
        await store.close()
        if state["coup"] is not None:
            assert not seen_settled, "settled was sent but not stored"
            assert record is None
            assert state["coup"]["round_id"] == rid
            stored = coup_cards(state)
            outcomes.append("before")
        else:
            assert record is not None, "the coup is gone but its round was not recorded"
            stored = record_cards(record)
            outcomes.append("after+sent" if seen_settled else "after")
        for (hand, index), card in known.items():
            assert stored[hand][index - 1] == card, (hand, index, stored)

        server.start()
        table = await Table.rejoin(server.url)
        snap = table.snapshots[PLAYERS[0]]
        if state["coup"] is not None:
            assert snap["coup"] is not None and snap["coup"]["round_id"] == rid
            settled = await table.resume_coup(snap)
            assert settled["data"]["round_id"] == rid
            history = await table["bob"].ok("history", limit=5)
            (record,) = [r for r in history["rounds"] if r["round_id"] == rid]
        else:
            assert snap["coup"] is None and snap["last_result"]["round_id"] == rid
        final = record_cards(record)
        # The restarted table went on with the same cards (with the house holding, the
        # croupier may have dealt a third card after the last card a player turned).
        assert {h: final[h][: len(cards)] for h, cards in stored.items()} == stored
        if turners.get("banker", "?") is not None:
            assert final == stored
        outcomes[-1] += "/" + await check_resume(server.url, "carol", seen_by["carol"])
        rounds.append((rid, final))
    await table.close()
    assert server.terminate() == 0
    money = await check_money(server.db)
    assert sorted(money["rounds"]) == sorted(rid for rid, _ in rounds)
    for rid, cards in rounds:
        assert record_cards(money["rounds"][rid]) == cards
    for name in PLAYERS:
        net = sum(
            b["returned"] - b["stake"]
            for record in money["rounds"].values()
            for b in record["bets"]
            if b["player"] == name
        )
        assert money["balances"][f"player:{name}"] == FUNDS + net
    print("settlement kill outcomes:", outcomes)


TIMED_CONFIG = CONFIG.replace("squeeze = 60, third_card = 60", "squeeze = 3, third_card = 1")


async def test_timers_that_ran_out_while_down_are_done_on_the_turners_behalf(
    tmp_path: Path,
) -> None:
    """Killed mid-squeeze and restarted after the squeeze timer expired: the croupier turns
    the cards the turner was squeezing (the same ones) on their behalf, then the rest."""
    server = ServerProcess(tmp_path, TIMED_CONFIG)
    server.start()
    try:
        table = await Table.seat(server.url)
        await table.to_betting()
        await table.place_bets()
        rid = await table.press_done()
        await table.play_turns(stop_at_squeeze=True)
        squeezed = dict(table.known)
        server.kill()
        await table.close()

        state = await table_state(server.db)
        assert state["coup"]["stage"] == "player" and state["coup"]["style"] == "peek"
        stored = coup_cards(state)
        deadline = state["coup"]["deadline"]
        await asyncio.sleep(max(0.0, deadline - time.time()) + 0.2)

        server.start()
        table = await Table.rejoin(server.url)
        snap = table.snapshots["bob"]
        if snap["coup"] is not None:  # the restart's first tick turned the Player's cards
            assert [s["card"] for s in snap["coup"]["player"][:2]] == stored["player"][:2]
            assert all(s["up"] and s["by"] == "croupier" for s in snap["coup"]["player"][:2])
        # Nobody acts: every later step times out and is done on the turner's behalf.
        settled = await table.obs.wait_for("settled")
        assert settled["data"]["round_id"] == rid
        history = await table["bob"].ok("history", limit=5)
        (record,) = [r for r in history["rounds"] if r["round_id"] == rid]
        assert record["player"][:2] == stored["player"][:2] == [squeezed[("player", 1)], squeezed[("player", 2)]]
        assert record["banker"][:2] == stored["banker"][:2]
        steps = {(x["step"], x["player"]) for x in record["on_behalf"]}
        assert {("turn player card 1", "bob"), ("turn player card 2", "bob")} <= steps
        for slot in record["turned_by"]["player"][:2]:
            assert slot == {"card": slot["card"], "by": "croupier", "on_behalf": "bob"}
        await table.close()
        assert server.terminate() == 0
        money = await check_money(server.db)
        assert list(money["rounds"]) == [rid]
    finally:
        server.stop_now()


async def test_spectators_coming_back_on_several_tabs_at_once_join_on_all(
    server: ServerProcess,
) -> None:
    """Spectators watching when the server died are removed at the restart (their seats
    are not held); each comes back on several tabs at once, and every tab is let in.

    Regression: the server used to choose Join or Reconnect outside the table's actor, so
    all but one of a player's simultaneous first joins were refused with already_joined.
    """
    names = ("erin", "frank", "gina", "hugo", "iris", "jack")
    watchers = [await Player.connect(server.url, name) for name in names]
    for watcher in watchers:
        await watcher.ok("join", table=TABLE)
    server.kill()
    for watcher in watchers:
        await watcher.close()

    server.start()
    tabs = [await Player.connect(server.url, name) for name in names for _ in range(5)]
    replies = await asyncio.gather(*(tab.cmd("join", table=TABLE) for tab in tabs))
    for tab in tabs:
        await tab.close()
    refused = [r for r in replies if r["type"] != "ok"]
    assert refused == []
