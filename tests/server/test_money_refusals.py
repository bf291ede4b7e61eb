"""Money when the store refuses commits on cue (issue 8, defects 0 and 1; issue 10).

A real server (in this process, on real sockets) on SQLite or on a real Redis
(``[redis]``: the server a one-process cluster) whose store's ``commit`` is wrapped by
:class:`Cue`: it refuses commits on cue, before anything is written, as a store that is
down or full would (``StoreUnavailable`` and ``StoreError`` in turn). Three players play
two whole shoes through the kit's driver, which retries every refused command with
the same id (:class:`Patient`). The cue refuses every kind of step (each kind of event,
each kind of ledger entry, the first time it comes) and then every few commits, so
bets, DONE and the holds, each turn of the cards, the settlements, the shoe's end, the
next shoe's start and its cut, and deposits are all refused at least once.

The same cue in its other mode (``kept``) lets each such commit run and then fails it
with ``StoreUnavailable``, as Redis does when the reply to a commit it ran is lost: the
server cannot tell, so it undoes the step, answers ``store_unavailable``, and before its
next step reads the stored row: the step was kept, so the table takes it up again and
its events go out then, once and in order; the retry is answered ``duplicate: true``.

After each refusal (:meth:`Refusals.check`):

- nothing of the refused step was sent, and the store has exactly what the players saw
  (the stored ``seq`` is the last one sent);
- ``audit()``: the sum is 0, every balance is its ledger sum, every hold has exactly one
  outcome (a retried step posts each entry exactly once); no ledger key is there twice;
- every player's ``balance`` is what the settled payouts made (less a wager held in the
  coup) and ``available`` is that less the chips on the felt: a refused bet leaves no
  reservation behind (defect 1);
- the retry of the refused command is applied (``duplicate: false``: the refusal left
  no trace of its id), and sending it once more is answered ``duplicate: true`` with
  nothing sent.

At the end every coup was checked against the rules oracle and every balance against
the settled payouts, the books of every recorded round (:func:`tests.kit.crash.check_books`),
each revealed shoe against its commitment, and every stored event against the one the
spectator was sent (the store holds exactly what went out, nothing of a refused step). :func:`test_a_refused_bet_leaves_the_balance_whole`
is defect 1's own regression: after a refused ``bet`` the player's available balance is
whole again, and stays so after they stand and leave.
"""

from __future__ import annotations

import itertools
import random
from collections import Counter
from typing import Any

import pytest

from server.engine.shoe import verify
from server.gateway.server import ChemmyServer
from server.protocol.errors import StoreError, StoreUnavailable
from server.store.base import CommitResult
from server.table.views import view_event
from server.vocabulary.events import Event
from tests.kit import Client, Game, table_def
from tests.kit.checks import check_coup, random_bets
from tests.kit.crash import check_books

#: The codes a command the store did not keep is answered with.
STORE_CODES = {StoreUnavailable: "store_unavailable", StoreError: "store_failed"}
FAST = {"rate_limit": 10_000.0, "rate_burst": 10_000}  # the driver sends as fast as it can
#: Nothing happens on a timer: every step is a player's command, retried when refused.
LONG = dict.fromkeys(("betting", "squeeze", "third_card", "shoe_offer", "cut", "grace"), 600)
PLAYERS = ("ann", "bob", "cat")
WELCOME = 2_000_000
DEPOSIT = 25_000
#: Two: the first shoe meets every kind of step (each refused the first time it comes),
#: its end and the next shoe's start and cut; a third only met them again.
SHOES = 2
_ids = itertools.count(1)


@pytest.fixture(params=["sqlite", "redis"])
def store(request: pytest.FixtureRequest) -> dict[str, Any]:
    """``net.start`` settings: the default SQLite file, or the test's Redis (with a lease
    no busy machine outlasts: the cue would refuse the step of a table taken up again,
    which no command of the test sent, and nothing here is about leases)."""
    if request.param == "redis":
        return {"store": str(request.getfixturevalue("redis_url")), "lease": 30.0}
    return {}


class Cue:
    """A store's ``commit`` that refuses on cue, writing nothing: the first commit with a
    kind of event or entry not refused yet, and every ``every``-th commit; raising
    :class:`StoreUnavailable` and :class:`StoreError` in turn. With ``kept``, the commit
    runs, and then :class:`StoreUnavailable` is raised (its reply was lost)."""

    def __init__(
        self, monkeypatch: pytest.MonkeyPatch, store: Any, every: int, *, kept: bool = False
    ) -> None:
        self.real = store.commit
        self.every = every
        self.kept = kept
        self.on = True
        self.commits = 0
        self.refused: Counter[str] = Counter()  # kinds of event and entry refused
        self.refusals: list[type[StoreError]] = []
        monkeypatch.setattr(store, "commit", self.commit)

    async def commit(self, **step: Any) -> CommitResult:
        kinds = [e["kind"] for e in step.get("events", ())]
        kinds += [f"entry:{e.kind}" for e in step.get("entries", ())]
        if self.on:
            self.commits += 1
            if self.commits % self.every == 0 or any(k not in self.refused for k in kinds):
                self.refused.update(kinds)
                error = StoreUnavailable if self.kept or len(self.refusals) % 2 == 0 else StoreError
                self.refusals.append(error)
                if self.kept:
                    await self.real(**step)
                    raise error(f"kept, but the reply was lost ({len(self.refusals)})")
                raise error(f"refused on cue ({len(self.refusals)})")
        result = await self.real(**step)
        assert isinstance(result, CommitResult)
        return result


class Refusals:
    """What must hold after each refused command (see the module docstring)."""

    def __init__(
        self, server: ChemmyServer, cue: Cue, watcher: Client, players: dict[str, Client]
    ) -> None:
        self.server = server
        self.cue = cue
        self.watcher = watcher
        self.players = players
        #: Each player's balance as the settled payouts (and deposits) made it.
        self.balances = dict.fromkeys(players, WELCOME)
        self.checked = 0

    def on_felt(self) -> tuple[dict[str, int], dict[str, int]]:
        """From what the watcher saw: each player's chips placed now (betting open), and
        each one's wager held in the coup being dealt."""
        placed: dict[str, int] = {}
        held: dict[str, int] = {}
        for e in self.watcher.events("t1"):
            kind, data = e["kind"], e["data"]
            if kind == "betting_opened":
                placed = {}
            elif kind == "bets":
                placed[data["player"]] = sum(data["bets"].values())
            elif kind == "betting_closed":
                placed, held = {}, {p: sum(b.values()) for p, b in data["bets"].items()}
            elif kind == "settled":
                held = {}
        return placed, held

    async def check(self, client: Client, kind: str, reply: dict[str, Any]) -> None:
        self.checked += 1
        assert reply["code"] == STORE_CODES[self.cue.refusals[-1]], reply
        # Nothing of the step went out: the watcher's stream has stopped where the store is
        # (a step kept after all goes out with the next step).
        await self.watcher.call("ping")  # anything sent before now has arrived
        (row,) = [r for r in await self.server.store.load_tables() if r.table_id == "t1"]
        sent = self.watcher.last_seq["t1"]
        assert row.seq >= sent if self.cue.kept else row.seq == sent, (kind, row.seq, sent)
        audit = await self.server.store.audit()
        assert audit["sum"] == 0 and audit["ledger_matches"], audit
        assert audit["holds_ok"], (kind, audit["problems"])
        keys = Counter(e.key for e in await self.server.store.ledger(limit=10_000_000))
        assert len(keys) == audit["entries"] and max(keys.values(), default=1) == 1
        if self.cue.kept:
            return  # the balances are a step ahead of what the players were told
        placed, held = self.on_felt()
        for pid, player in self.players.items():
            money = await player.call("balance")
            expected = self.balances[pid] - held.get(pid, 0)
            assert money["balance"] == expected, (kind, pid, money, expected, held)
            assert money["available"] == expected - placed.get(pid, 0), (kind, pid, money)


async def patiently(client: Client, kind: str, refusals: Refusals, **fields: Any) -> dict[str, Any]:
    """Send a command; while the store refuses it, check, and send it again with the same
    id. A command that was refused is then sent once more: a duplicate, changing nothing."""
    mid = f"{client.player}-{next(_ids)}"
    refused = 0
    while True:
        reply = await client.rpc(kind, msg_id=mid, **fields)
        if reply["type"] != "error" or reply["code"] not in STORE_CODES.values():
            break
        refused += 1
        assert refused < 10, reply
        await refusals.check(client, kind, reply)
    assert reply["type"] == "ok", reply
    if refused and "duplicate" in reply:
        # Refused, nothing of it (its id included) was kept: the retry is applied. Kept
        # after all: the retry is a duplicate of what the table took up again.
        assert reply["duplicate"] is refusals.cue.kept, reply
        cue_on, refusals.cue.on = refusals.cue.on, False  # (a deposit commits even so)
        try:
            again = await client.call(kind, msg_id=mid, **fields)
        finally:
            refusals.cue.on = cue_on
        assert again["duplicate"] is True, again
        if "seq" in reply:
            assert again["seq"] == reply["seq"], (reply, again)
        if "balance" in reply:
            assert again["balance"] == reply["balance"], (reply, again)
    return reply


class Patient(Game):
    """The kit's driver, sending each command :func:`patiently`."""

    def __init__(self, *args: Any, refusals: Refusals, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.refusals = refusals

    async def act(self, pid: str, kind: str, **fields: Any) -> dict[str, Any]:
        client = self.players[pid]
        reply = await patiently(client, kind, self.refusals, table=self.table, **fields)
        await self.watcher.wait_seq(self.table, reply["seq"])
        return reply


async def play_shoes(
    net: Any, monkeypatch: pytest.MonkeyPatch, store: dict[str, Any], shoes: int, *, kept: bool
) -> None:
    """Three players play ``shoes`` whole shoes (and a deposit after each) while the store
    refuses commits on cue (:class:`Cue`); then the books."""
    server = await net.start(
        **FAST,
        **store,
        guest_balance=WELCOME,
        tables=(table_def("t1", decks=6, stop_offset=100, timers=LONG),),
    )
    watcher = await net.guest(server, "msgpack", name="Watcher")  # a guest: never stored
    await watcher.join("t1")
    formats = dict(zip(PLAYERS, ("json", "msgpack", "json"), strict=True))
    players = {pid: await net.player(server, pid, fmt) for pid, fmt in formats.items()}
    cue = Cue(monkeypatch, server.store, every=5, kept=kept)
    refusals = Refusals(server, cue, watcher, players)
    for client in players.values():
        await patiently(client, "join", refusals, table="t1")
        await patiently(client, "sit", refusals, table="t1")
    rng = random.Random(20260101)
    game = Patient("t1", players, watcher, rng=rng, refusals=refusals)
    deposits = 0
    while len(watcher.events("t1", "shoe_ended")) < shoes:
        ended = len(watcher.events("t1", "shoe_ended"))
        check_coup(await game.play_coup(random_bets(rng, list(players))), refusals.balances)
        if len(watcher.events("t1", "shoe_ended")) > ended:  # a shoe ended: a deposit
            pid = PLAYERS[ended % len(PLAYERS)]
            reply = await patiently(players[pid], "deposit", refusals, amount=DEPOSIT)
            refusals.balances[pid] += DEPOSIT
            deposits += DEPOSIT
            assert reply["balance"] == refusals.balances[pid]
    cue.on = False

    # Every kind of step was refused at least once, and the money checked after each.
    kinds = {"sat", "shoe_accepted", "shoe_cut", "bets", "done", "betting_closed", "squeeze"}
    kinds |= {"card", "settled", "shoe_ended", "shoe_started", "entry:deposit"}
    kinds |= {f"entry:{kind}" for kind in ("stake", "hold", "lose", "return", "win")}
    assert kinds <= set(cue.refused), kinds - set(cue.refused)
    assert refusals.checked == len(cue.refusals) > 20 * shoes
    print(f"{len(game.log)} coups, {cue.commits} commits, {len(cue.refusals)} refused")

    # The books: every balance is what the payouts made, every round paid as recorded.
    for pid, client in players.items():
        money = await client.call("balance")
        assert money["balance"] == money["available"] == refusals.balances[pid]
    books = await check_books(
        server.store,
        PLAYERS,
        funded=WELCOME * len(PLAYERS) + deposits,
        round_ids=[log.round_id for log in game.log],
    )
    for pid in PLAYERS:
        assert books["balances"][f"player:{pid}"] == refusals.balances[pid]
    assert sorted(books["rounds"]) == sorted(log.round_id for log in game.log)
    # Each revealed shoe deals exactly what the clients saw (the refused cuts and starts
    # were dealt again from the same stored shoe).
    for ended in watcher.events("t1", "shoe_ended"):
        record = await server.store.shoe_record("t1", ended["data"]["shoe_no"])
        assert record is not None and record["seed"] == ended["data"]["seed"]
        report = verify(record)
        assert report.ok, str(report)
    # The store holds exactly the events that went out, each once and in order.
    watcher.assert_clean()
    first = watcher.events("t1")[0]["seq"]
    stored = await server.store.events_after("t1", first - 1)
    assert stored is not None
    assert [view_event(Event.from_dict(e), watcher.player) for e in stored] == [
        {k: v for k, v in e.items() if k not in ("type", "table")} for e in watcher.events("t1")
    ]


@pytest.mark.slow
async def test_commits_refused_through_whole_shoes_lose_and_make_no_money(
    net: Any, monkeypatch: pytest.MonkeyPatch, store: dict[str, Any]
) -> None:
    await play_shoes(net, monkeypatch, store, SHOES, kept=False)


@pytest.mark.slow
async def test_commits_kept_though_their_replies_were_lost_count_once(
    net: Any, monkeypatch: pytest.MonkeyPatch, store: dict[str, Any]
) -> None:
    await play_shoes(net, monkeypatch, store, 1, kept=True)


async def test_a_refused_bet_leaves_the_balance_whole(
    net: Any, monkeypatch: pytest.MonkeyPatch, store: dict[str, Any]
) -> None:
    """Defect 1: after a refused ``bet`` (its commit refused, the step undone) the
    player's available balance is whole again at once, and after they stand and leave."""
    server = await net.start(**store, tables=(table_def("t1", timers=LONG),))
    ann = await net.player(server, "ann")
    welcome = server.config.guest_balance
    cue = Cue(monkeypatch, server.store, every=10**9)
    cue.on = False

    async def refused_bet(amount: int) -> None:
        cue.on, cue.commits, cue.refused = True, 0, Counter()  # the next commit is refused
        reply = await ann.rpc("bet", table="t1", area="banker", amount=amount)
        cue.on = False
        assert reply["type"] == "error", reply
        assert reply["code"] == STORE_CODES[cue.refusals[-1]], reply

    async def money() -> tuple[int, int, int]:
        """(balance, available) as the player is told, and what a new join shows."""
        told = await ann.call("balance")
        peek = await net.player(server, "ann")
        you = (await peek.join("t1"))["snapshot"]["you"]
        await peek.close()
        assert (you["balance"], you["available"]) == (told["balance"], told["available"])
        return told["balance"], told["available"], you["bets"].get("banker", 0)

    async def bet(amount: int, available: int) -> None:
        """A bet the store keeps: the table tells ann what it holds of her (from its own
        wallet, with no fresh read of the store in between)."""
        reply = await ann.call("bet", table="t1", area="banker", amount=amount)
        (event,) = [e for e in ann.events("t1", "bets") if e["seq"] == reply["seq"]]
        assert event["data"]["available"] == available, event

    await ann.join("t1")
    await ann.call("sit", table="t1")
    await Game("t1", {"ann": ann}, ann).to_betting()
    await refused_bet(500)
    await bet(300, welcome - 300)  # not short by the 500 refused
    assert await money() == (welcome, welcome - 300, 300)
    await refused_bet(200)  # on top of chips on the felt: not added to them
    await bet(100, welcome - 400)
    assert await money() == (welcome, welcome - 400, 400)
    await ann.call("stand", table="t1")  # the chips come back
    await ann.call("leave", table="t1")
    assert await money() == (welcome, welcome, 0)

    # The defect as it was seen: a refused bet, then stand and leave.
    await ann.join("t1")
    await ann.call("sit", table="t1")
    await Game("t1", {"ann": ann}, ann).to_betting()
    await refused_bet(500)
    await ann.call("stand", table="t1")
    await ann.call("leave", table="t1")
    assert await money() == (welcome, welcome, 0)
    books = await check_books(server.store, ["ann"], funded=welcome)
    assert books["balances"]["player:ann"] == welcome
    assert books["balances"].get("stake:t1:ann", 0) == 0
