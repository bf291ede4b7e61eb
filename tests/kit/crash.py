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
- :func:`table_state`, :func:`check_money` and the others read the SQLite file the
  stopped server left: the stored table, and a ledger that sums to zero with exactly one
  hold and one outcome per bet (GAME_RULES §8: nothing is paid twice).

This module must never read the database while a server runs on it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path
from typing import Any

from server.engine.cards import card_value, hand_total
from server.engine.coup import banker_draws, is_natural, player_draws, resolve_coup
from server.engine.shoe import Shoe
from server.store.sqlite import SQLiteStore

from .client import Client, open_player
from .game import Game
from .launch import ServerProcess
from .timing import scaled

__all__ = [
    "BETS",
    "CONFIG",
    "FUNDS",
    "PLAYERS",
    "SECRET",
    "STEP",
    "TABLE",
    "ServerProcess",
    "Table",
    "check_money",
    "check_resume",
    "connect_player",
    "coup_cards",
    "max_seq",
    "next_coup",
    "read_db",
    "record_cards",
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


# ---------------------------------------------------------------------- the players
async def connect_player(url: str, name: str) -> Client:
    """One token-authenticated connection of player ``name`` (any of :data:`PLAYERS`, or
    a spectator), with :data:`STEP` as its timeout."""
    client = await open_player(url, name, secret=SECRET, timeout=STEP)
    assert client.player == name
    return client


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
    async def rejoin(cls, url: str) -> Table:
        """After a restart: the same players, new connections, a snapshot each."""
        players: dict[str, Client] = {}
        snapshots: dict[str, dict[str, Any]] = {}
        for name in PLAYERS:
            players[name] = p = await connect_player(url, name)
            reply = await p.call("join", table=TABLE)
            assert reply["resumed"] is False and "snapshot" in reply, reply
            snapshots[name] = reply["snapshot"]
        return cls(players, snapshots)

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
        """The turner squeezes (PEEK): only they are shown the face-down cards."""
        reply = await turner.call("squeeze", table=TABLE, hand=hand, style="peek")
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
            players,
            house,
            held,
            staked,
            funded,
        )
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
    extra = await connect_player(url, name)
    try:
        reply = await extra.call("join", table=TABLE, since=since)
        if reply["resumed"]:
            await extra.call("ping")  # the replayed events were written before this reply
            seqs = [e["seq"] for e in extra.events(TABLE)]
            assert seqs[: reply["seq"] - since] == list(range(since + 1, reply["seq"] + 1)), (
                since,
                reply,
                seqs,
            )
            return "replayed"
        assert reply["snapshot"]["seq"] == reply["seq"] >= since
        return "snapshot"
    finally:
        await extra.close()
