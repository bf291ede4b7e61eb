"""The crash and drain tests' table: three players over a server subprocess, and what
the database must hold once the server stopped.

- :data:`CONFIG` is one table, :data:`TABLE`, with long timers (a test decides when
  anything happens), and the secret the players' tokens are made with; start it with
  ``ServerProcess(tmp_path, CONFIG, *flags)`` (:mod:`.launch`).
- :class:`Table` seats :data:`PLAYERS` (token players, so the same ids come back after a
  restart), drives the table with the kit's :class:`~.game.Game` to betting, places
  :data:`BETS`, and turns the cards (PEEK, then TOSS), remembering every card a turner
  saw or turned (:attr:`Table.known`); it can stop in a squeeze, or hand the coup's last
  TOSS to the test (to kill the server right after it is sent).
- :class:`CrashServer` is that server on SQLite (its file) or, given ``store``, on a
  Redis the test started (``--store``, a one-process cluster with a short lease, so a
  restart after ``kill -9`` takes the table over quickly); :attr:`CrashServer.store_url`
  names where it keeps everything.
- :func:`table_state`, :func:`check_money` and the others read the store the stopped
  server left (a SQLite file, or the Redis): the stored table, and a ledger that sums to
  zero with exactly one hold and one outcome per bet (GAME_RULES §8: nothing is paid
  twice). :func:`check_books` is the same check of any open store, for tests whose
  server still runs.
- :meth:`Table.rejoin` brings the players back after a restart; given the last ``seq``
  each had seen, they resume with the events they missed (stored with each step), not
  a snapshot (:func:`resume`).

This module must never read a SQLite file while a server runs on it.
"""

from __future__ import annotations

import asyncio
import itertools
import os
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from server.engine.cards import card_value, hand_total
from server.engine.coup import banker_draws, is_natural, player_draws, resolve_coup
from server.engine.shoe import Shoe
from server.store import Store, open_store

from .client import Client, open_player
from .game import Game
from .launch import ServerProcess
from .timing import scaled

#: Refusals that mean "try again" (the table moved to another process, or timed out).
_SQUEEZES = itertools.count(1)  # squeeze ids, never used twice in a process

__all__ = [
    "BETS",
    "CONFIG",
    "FUNDS",
    "LEASE",
    "PLAYERS",
    "SECRET",
    "STEP",
    "TABLE",
    "CrashServer",
    "ServerProcess",
    "Table",
    "check_books",
    "check_money",
    "check_resume",
    "connect_player",
    "coup_cards",
    "join_table",
    "max_seq",
    "next_coup",
    "read_db",
    "record_cards",
    "resume",
    "table_state",
]

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
jwt_secret = "{SECRET}"

[[tables]]
id = "{TABLE}"
name = "Crash"
tier = "1-100"
timers = {{ betting = 60, squeeze = 60, third_card = 60, shoe_offer = 60, cut = 60, grace = 120 }}
"""
STEP = scaled(15.0)  # seconds any one step may take before a test fails
#: The lease (seconds) of a server on Redis: after a ``kill -9`` the restarted process
#: takes the table over once the dead one's lease has run out.
LEASE = scaled(1.5)


class CrashServer(ServerProcess):
    """The crash tests' server: ``CONFIG`` (or ``config``) on the SQLite file in ``home``,
    or with ``store`` (a ``redis://`` URL of a Redis the test started) on that Redis, as
    a one-process cluster with a short lease. ``args`` are more ``chemmy-server`` flags."""

    def __init__(
        self, home: Path, store: str | None = None, *args: str, config: str = CONFIG
    ) -> None:
        extra = [] if store is None else ["--store", store, "--lease", str(LEASE)]
        super().__init__(home, config, *extra, *args)
        #: Where the server keeps everything: the Redis URL, or the SQLite file.
        self.store_url = store or str(self.db)


# ---------------------------------------------------------------------- the players
async def connect_player(url: str, name: str) -> Client:
    """One token-authenticated connection of player ``name`` (any of :data:`PLAYERS`, or
    a spectator), with :data:`STEP` as its timeout."""
    client = await open_player(url, name, secret=SECRET, timeout=STEP)
    assert client.player == name
    return client


async def join_table(client: Client, **fields: Any) -> dict[str, Any]:
    """``join`` :data:`TABLE`, asserted ok. Right after a restart on Redis the table has
    no owner until the dead process's lease runs out: the server answers ``unavailable``
    (try again) meanwhile, and so this tries again, for at most :data:`STEP` seconds."""
    async with asyncio.timeout(STEP):
        while True:
            reply = await client.rpc("join", table=TABLE, **fields)
            if reply["type"] != "error" or reply["code"] != "unavailable":
                break
            await asyncio.sleep(0.05)
    assert reply["type"] == "ok", reply
    return reply


def max_seq(client: Client) -> int:
    """The highest event seq of :data:`TABLE` this client received (0: none)."""
    return max((e["seq"] for e in client.events(TABLE)), default=0)


class Table:
    """The three players at the table; the first one's event stream drives play.

    :meth:`next_event` and :meth:`wait_for` read the first player's events in order,
    each once (a cursor); the kit's :class:`~.game.Game` answers offers and cuts.
    """

    def __init__(self, players: dict[str, Client], snapshots: dict[str, dict[str, Any]]) -> None:
        self.players = players
        self.snapshots = snapshots
        self.joined = dict(snapshots)  # every player's join snapshot, kept
        self.obs = players[PLAYERS[0]]
        self.cursor = 0  # the index of the first player's next frame to read
        self.game = Game(TABLE, players, self.obs)
        # What is known of the current coup: (hand, index 1-3) -> card, seen or turned.
        self.known: dict[tuple[str, int], str] = {}
        self.turners: dict[str, str | None] = {}  # the coup's turners, from "dealt"
        #: After :meth:`rejoin` with ``since``: the events each player was sent again.
        self.replayed: dict[str, list[dict[str, Any]]] = {}

    @classmethod
    async def seat(cls, url: str) -> Table:
        players: dict[str, Client] = {}
        joined: dict[str, dict[str, Any]] = {}
        for name in PLAYERS:
            players[name] = p = await connect_player(url, name)
            joined[name] = (await p.call("join", table=TABLE))["snapshot"]
            await p.call("sit", table=TABLE)
        table = cls(players, {})
        table.joined = joined
        return table

    @classmethod
    async def rejoin(cls, url: str, since: Mapping[str, int] | None = None) -> Table:
        """After a restart: the same players on new connections, and a snapshot of what
        each may see now (:attr:`snapshots`).

        Without ``since``, each joins afresh (a snapshot). With ``since`` (player -> the
        last seq that player saw before the restart) each resumes: the events missed
        since come, stored with each step, without a gap and without a snapshot
        (:func:`resume`); the snapshot is then a second, short-lived connection's, and
        the first player's stream is read on from the first event after the replay.
        """
        players: dict[str, Client] = {}
        snapshots: dict[str, dict[str, Any]] = {}
        replayed: dict[str, list[dict[str, Any]]] = {}
        after: dict[str, int] = {}
        for name in PLAYERS:
            players[name] = p = await connect_player(url, name)
            if since is None:
                reply = await join_table(p)
                assert reply["resumed"] is False and "snapshot" in reply, reply
                snapshots[name] = reply["snapshot"]
                continue
            replayed[name], after[name] = await resume(p, since[name])
            peek = await connect_player(url, name)
            try:
                snapshots[name] = (await join_table(peek))["snapshot"]
            finally:
                await peek.close()
        table = cls(players, snapshots)
        table.replayed = replayed
        if since is not None:
            obs = table.obs
            obs.snapshots[TABLE], obs.snapshot_at[TABLE] = snapshots[PLAYERS[0]], 0
            last = after[PLAYERS[0]]
            table.cursor = next(
                (
                    f.index
                    for f in obs.frames
                    if f.msg.get("type") == "event" and f.msg["seq"] > last
                ),
                len(obs.frames),
            )
        return table

    def __getitem__(self, name: str) -> Client:
        return self.players[name]

    @property
    def max_seq(self) -> int:
        return max(max_seq(p) for p in self.players.values())

    async def close(self) -> None:
        for p in self.players.values():
            await p.close()

    # -- reading the first player's events in order ------------------------------------
    async def next_event(self) -> dict[str, Any]:
        """The first player's next event of the table not read yet (waiting for it)."""
        frame = await self.obs.next_frame(
            lambda m: m.get("type") == "event" and m.get("table") == TABLE,
            start=self.cursor,
            what="an event",
        )
        self.cursor = frame.index + 1
        return frame.msg

    async def wait_for(self, kind: str) -> dict[str, Any]:
        """Read on to the next event ``kind``."""
        while True:
            event = await self.next_event()
            if event["kind"] == kind:
                return event

    # -- moving the table on ---------------------------------------------------------
    async def to_betting(self) -> None:
        """Accept the shoe and cut when asked, until betting is open for a new coup (the
        kit's driver); what came before is read."""
        await self.game.to_betting()
        self.snapshots.pop(PLAYERS[0], None)
        self.cursor = len(self.obs.frames)

    async def place_bets(self) -> None:
        for name, bets in BETS.items():
            for area, amount in bets.items():
                await self[name].call("bet", table=TABLE, area=area, amount=amount)

    async def press_done(self) -> str:
        """DONE for everyone: betting closes, four cards are dealt. Returns the round id."""
        for name in PLAYERS:
            await self[name].call("done", table=TABLE)
        closed = await self.wait_for("betting_closed")
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
            return (
                is_natural(pt) or is_natural(bt) or not (player_draws(pt) or banker_draws(bt, None))
            )
        if hand == "player":
            return not banker_draws(bt, card_value(player[2]))
        return True

    async def _squeeze(self, turner: Client, hand: str) -> None:
        """The turner squeezes (PEEK): only they are shown the face-down cards. A refusal
        that says "try again" (the table moved: a failover) is tried again with the same
        id, so the squeeze is applied once."""
        mid = f"squeeze-{hand}-{next(_SQUEEZES)}"  # (a player's ids outlive a restart)
        reply = await turner.call_patiently(
            "squeeze", msg_id=mid, timeout=20, table=TABLE, hand=hand, style="peek"
        )
        (event,) = [e for e in turner.events(TABLE) if e["seq"] == reply["seq"]]
        assert event["kind"] == "squeeze"
        for index, card in event["data"]["cards"].items():
            self._learn(hand, int(index), card)

    async def play_turns(
        self,
        *,
        stop_at_squeeze: bool = False,
        on_final: Callable[[Client, str], Awaitable[None]] | None = None,
    ) -> dict[str, Any] | None:
        """Turn every stage (squeeze, then TOSS) until ``settled``, which is returned.

        ``stop_at_squeeze``: return None once the first turner is squeezing.
        ``on_final``: called instead of the last TOSS (the coup's last cards); returns None.
        """
        while True:
            event = await self.next_event()
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
            await self.game.act(data["turner"], "toss", hand=hand)

    async def to_last_toss(self) -> tuple[Client, str]:
        """Turn every stage but the coup's last: the turner and hand whose TOSS is due."""
        last: list[tuple[Client, str]] = []

        async def before_last_toss(turner: Client, hand: str) -> None:
            last.append((turner, hand))

        assert await self.play_turns(on_final=before_last_toss) is None
        return last[0]

    async def resume_coup(self, snap: dict[str, Any]) -> dict[str, Any]:
        """After a restart in the middle of a coup: the turner named by the snapshot goes on."""
        coup = snap["coup"]
        assert coup is not None
        hand = coup["hand"]
        await self.game.act(coup["turners"][hand], "toss", hand=hand)
        settled = await self.play_turns()
        assert settled is not None
        return settled


# ---------------------------------------------------------------------- the database
Where = str | os.PathLike[str]  # a SQLite file, or a store URL (``CrashServer.store_url``)


async def read_db(where: Where) -> tuple[dict[str, Any], Store]:
    """The stored state of :data:`TABLE`, and the store, open (the caller closes it)."""
    store = await open_store(where)
    (row,) = [r for r in await store.load_tables() if r.table_id == TABLE]
    assert row.state is not None
    return row.state, store


async def table_state(where: Where) -> dict[str, Any]:
    state, store = await read_db(where)
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


async def check_money(where: Where, *, settled_all: bool = True) -> dict[str, Any]:
    """The ledger after the server stopped (see :func:`check_books`): the three players
    were funded :data:`FUNDS` each, and nothing else came in."""
    store = await open_store(where)
    try:
        return await check_books(
            store, PLAYERS, funded=FUNDS * len(PLAYERS), settled_all=settled_all
        )
    finally:
        await store.close()


async def check_books(
    store: Store,
    players: Iterable[str],
    *,
    funded: int | None = None,
    settled_all: bool = True,
    round_ids: Iterable[str] = (),
) -> dict[str, Any]:
    """The books of ``store``: conserved, matched, every hold accounted for, nothing
    doubled, and every recorded round of ``players`` (their last 100 each, and
    ``round_ids``) paid as its record says.

    - ``audit()``: the sum is 0, every balance is its ledger sum, every hold has exactly
      one outcome (and a held account holds exactly its open holds);
    - no ledger key twice; players, the house, held wagers and stakes add up to what the
      cashier paid out and a seamless wallet's mirrors (``wallet:<id>``) brought in
      (``funded``, when given);
    - with ``settled_all``, nothing is held or staked (no coup open, no chips placed) and
      no coup dealt (its wagers held) is without a record;
    - each recorded round: one hold and one outcome per bet (a ``win`` when it won; a
      voided coup's outcome is its ``void``, a round voided before its cards has none), the
      chips moved to the table's stake are what was held, and each player's balance
      moved by the round's net.

    Returns ``{"rounds", "balances", "audit", "entries"}`` for more checks."""
    audit = await store.audit()
    assert audit["sum"] == 0, audit
    assert audit["ledger_matches"], audit
    assert audit["holds_ok"] and not audit["problems"], audit["problems"]
    entries = await store.ledger(limit=10_000_000)
    assert len(entries) == audit["entries"]
    keys = Counter(e.key for e in entries)
    assert max(keys.values(), default=1) == 1, [k for k, n in keys.items() if n > 1]
    balances = await store.load_balances()
    # What came in from outside: the cashier's play money, and a seamless wallet's
    # mirrors (``wallet:<player>``, the operator's balances as Chemmy sees them).
    outside = ("cashier", *(a for a in balances if a.startswith("wallet:")))
    paid_out = sum(e.amount for e in entries if e.src in outside) - sum(
        e.amount for e in entries if e.dst in outside
    )
    in_players = sum(v for a, v in balances.items() if a.startswith("player:"))
    held = sum(v for a, v in balances.items() if a.startswith("held:"))
    staked = sum(v for a, v in balances.items() if a.startswith("stake:"))
    house = balances.get("house", 0)
    from_outside = -sum(balances.get(a, 0) for a in outside)
    assert in_players + house + held + staked == paid_out == from_outside, (
        in_players,
        house,
        held,
        staked,
        paid_out,
    )
    if funded is not None:
        assert paid_out == funded, (paid_out, funded)
    if settled_all:
        assert held == 0 and staked == 0, balances
    # Every bet of every recorded round: one hold, one outcome, a win when it won.
    by_round: dict[str, list[Any]] = {}
    for e in entries:
        if e.round_id is not None:
            by_round.setdefault(e.round_id, []).append(e)
    rounds = {}
    for name in players:
        for record in await store.history(name, 100):
            rounds[record["round_id"]] = record
    for rid in round_ids:
        found = await store.round_record(rid)
        assert found is not None, f"round {rid} was not recorded"
        rounds[rid] = found
    for rid, record in rounds.items():
        expected: Counter[tuple[str, int]] = Counter()
        # A void (issue 21): a dealt coup's holds each come back as ``void``; a round
        # voided before its cards held nothing (its chips went back as unstakes).
        void = record.get("void", False)
        held_any = not void or record.get("voided_in") == "turn"
        for bet in record["bets"] if held_any else ():
            key = f"{rid}:{bet['player']}:{bet['area']}"
            expected[(f"{key}:hold", bet["stake"])] += 1
            if void:
                expected[(f"{key}:void", bet["stake"])] += 1
            elif bet["returned"] == 0:
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
            held_stakes = sum(
                x["stake"] for x in record["bets"] if x["player"] == name and held_any
            )
            assert moved == held_stakes, (rid, name, moved, held_stakes)
        for name, b in record["balances"].items():
            net = sum(x["returned"] - x["stake"] for x in record["bets"] if x["player"] == name)
            assert b["after"] - b["before"] == net, (rid, name, b, net)
    # (Chips placed and taken back before a coup was dealt leave stake entries only.)
    dealt = {rid for rid, es in by_round.items() if any(e.kind not in STAKE_KINDS for e in es)}
    unrecorded = dealt - set(rounds)
    if settled_all:
        assert not unrecorded, unrecorded
    return {"rounds": rounds, "balances": balances, "audit": audit, "entries": entries}


STAKE_KINDS = ("stake", "unstake")  # placing and removing chips (the table's stakes)


def record_cards(record: dict[str, Any]) -> dict[str, list[str]]:
    return {"player": record["player"], "banker": record["banker"]}


async def resume(
    client: Client, since: int, *, back: bool = True
) -> tuple[list[dict[str, Any]], int]:
    """``client`` joins :data:`TABLE` with ``since`` after a restart: the server answers
    ``resumed`` (no snapshot) and sends the events after ``since`` up to the reply's
    ``seq`` without a gap or a duplicate; among them, with ``back``, the restart's
    ``disconnected`` of this player and then their ``reconnected``. Returns the replayed
    events and the reply's seq."""
    start = len(client.frames)
    reply = await join_table(client, since=since)
    assert reply["resumed"] is True and "snapshot" not in reply, reply
    seq = int(reply["seq"])
    await client.wait_seq(TABLE, seq)
    events = [e for e in client.events(TABLE, start=start) if e["seq"] <= seq]
    assert [e["seq"] for e in events] == list(range(since + 1, seq + 1)), (since, seq, events)
    client.assert_clean()
    if back:
        who = [(e["kind"], e["data"].get("player")) for e in events]
        away, here = ("disconnected", client.player), ("reconnected", client.player)
        assert away in who and here in who and who.index(away) < who.index(here), who
    return events, seq


async def check_resume(url: str, name: str, since: int) -> None:
    """A second connection of ``name`` resuming from the last seq it saw before the
    restart gets exactly the events it missed (stored with each step), not a snapshot."""
    extra = await connect_player(url, name)
    try:
        await resume(extra, since)
    finally:
        await extra.close()
