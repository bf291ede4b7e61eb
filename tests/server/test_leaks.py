"""Hidden information never leaks: every frame every client received, checked (§4, §6).

Three players and two spectators (JSON and msgpack) play a few whole coups with
squeezes; mid-squeeze a spectator joins (a snapshot), the turner comes back on a new
connection (a snapshot of their own squeeze) and a spectator resumes with ``since``. Then
the operator closes the table, which reveals the shoe's seed: from it (and the cut) the
truth is rebuilt, every card of every coup and the face-down burned cards.

Then, for each client, each card string found in any frame must be attributable to a
place where that card is public *for that client at that frame*: the ``card`` event
that turns it, or later frames (results, snapshots, records); the one exception is the
squeezing turner's own private view (``squeeze`` event ``data.cards``, their snapshot).
A card string anywhere else fails. The seed appears only in ``shoe_ended`` (and the
shoe record asked for after it); the burned cards never appear; every event is exactly
the logged event as that client may see it, and no other player's balance reaches it.
"""

from __future__ import annotations

import json
import random
import re
from typing import Any

from server.engine.shoe import Shoe, verify
from server.gateway.hub import transient
from server.table.views import view_event
from server.vocabulary.events import Event
from tests.kit import BALANCE_KEYS, CARD, Client, Game, table_def, walk

FAST = {"rate_limit": 10_000.0, "rate_burst": 10_000}
Slot = tuple[str, str, int]  # (round_id, hand, index 1-3)


class Truth:
    """Every card of the shoe, from its revealed seed; which slot holds which card."""

    def __init__(self, record: dict[str, Any], round_ids: list[str]) -> None:
        report = verify(record)
        assert report.ok, str(report)
        shoe = Shoe.from_seed(bytes.fromhex(record["seed"]), record["decks"])
        shoe.apply_cut(record["cut"])
        face, count = shoe.burn()
        assert (face, count) == (record["burn_card"], record["burned"])
        self.seed = record["seed"]
        self.burn_card = face
        self.burned = shoe.cards[1 : 1 + count]
        self.slots: dict[Slot, str] = {}
        assert len(round_ids) == len(record["coups"])
        for rid, coup in zip(round_ids, record["coups"], strict=True):
            for hand in ("player", "banker"):
                for i, card in enumerate(coup[hand], start=1):
                    self.slots[(rid, hand, i)] = card
        dealt = set(self.slots.values()) | {face}
        #: burned cards whose string shows nowhere else in this shoe: they must never appear
        self.burned_unique = [c for c in self.burned if c not in dealt]


class Viewer:
    """What one client may have seen so far, frame by frame."""

    def __init__(self, client: Client, truth: Truth, events: list[Event]) -> None:
        self.client = client
        self.truth = truth
        self.public: set[Slot] = set()
        self.private: set[Slot] = set()  # the turner's own squeezed cards
        self.round: str | None = None
        self.seed_out = False
        self.log = {e.seq: e for e in events if not e.transient}
        #: the bends published (transient: no seq of their own), as the hub sends them
        self.bends = [transient("t1", e) for e in events if e.transient]

    def fail(self, index: int, why: str) -> None:
        raise AssertionError(
            f"{self.client.label} frame {index}: {why}: {self.client.frames[index].msg}"
        )

    def seen(self, index: int, slot: Slot, card: str, *, private_ok: bool = False) -> None:
        if self.truth.slots.get(slot) != card:
            self.fail(
                index, f"{card} at {slot} is not the card there ({self.truth.slots.get(slot)})"
            )
        if slot not in self.public and not (private_ok and slot in self.private):
            self.fail(index, f"{card} ({slot}) before it was turned for this client")

    def check(self, index: int, msg: dict[str, Any]) -> None:
        kind = msg.get("type")
        if kind == "event":
            self.check_event(index, msg)
        elif kind == "ok":
            self.check_reply(index, msg)
        else:
            self.check_other(index, msg)
        self.check_seed(index, msg)

    # -- events --------------------------------------------------------------------
    def check_event(self, index: int, msg: dict[str, Any]) -> None:
        event = self.log[msg["seq"]]
        expected = {"type": "event", "table": "t1", **view_event(event, self.client.player)}
        if msg != expected:
            self.fail(index, f"not the event as this client may see it: {expected}")
        data, kind = msg["data"], msg["kind"]
        allowed: set[tuple[Any, ...]] = set()
        if kind == "betting_closed":
            self.round = data["round_id"]
        elif kind == "card":
            slot = (str(self.round), data["hand"], data["index"])
            self.public.add(slot)  # public from this frame on
            self.seen(index, slot, data["card"])
            allowed.add(("data", "card"))
        elif kind == "squeeze" and "cards" in data:
            if data["turner"] != self.client.player:
                self.fail(index, "somebody else's squeezed cards")
            for key, card in data["cards"].items():
                slot = (str(self.round), data["hand"], int(key))
                self.private.add(slot)
                self.seen(index, slot, card, private_ok=True)
                allowed.add(("data", "cards", key))
        elif kind == "result":
            for hand in ("player", "banker"):
                for i, card in enumerate(data[hand], start=1):
                    self.seen(index, (data["round_id"], hand, i), card)
                    allowed.add(("data", hand, i - 1))
        elif kind == "burned":
            assert data["card"] == self.truth.burn_card
            allowed.add(("data", "card"))
        elif kind == "shoe_ended":
            self.seed_out = True
            assert data["burn_card"] == self.truth.burn_card
            allowed.add(("data", "burn_card"))
            for n, coup in enumerate(data["coups"]):
                for hand in ("player", "banker"):
                    for i in range(len(coup[hand])):
                        allowed.add(("data", "coups", n, hand, i))
        self.only_cards_at(index, msg, allowed)

    # -- replies -------------------------------------------------------------------
    def check_reply(self, index: int, msg: dict[str, Any]) -> None:
        allowed: set[tuple[Any, ...]] = set()
        snap = msg.get("snapshot")
        if snap is not None:
            self.check_snapshot(index, snap, allowed)
        if "record" in msg:  # a shoe record: only once the seed is out
            if not self.seed_out:
                self.fail(index, "a shoe record before the shoe ended")
            allowed |= {path for path, _ in walk(msg) if path[:1] == ("record",)}
        if "rounds" in msg:  # history: settled rounds, all public
            for path, value in walk(msg):
                if isinstance(value, str) and CARD.fullmatch(value):
                    rid = msg["rounds"][path[1]]["round_id"]
                    if path[2] in ("player", "banker"):
                        self.seen(index, (rid, path[2], path[3] + 1), value)
                    elif path[2] == "turned_by" and path[-1] == "card":
                        self.seen(index, (rid, path[3], path[4] + 1), value)
                    else:
                        continue
                    allowed.add(path)
        self.only_cards_at(index, msg, allowed)
        # A reply carries no balance but the client's own: at its top, or in "you".
        for path, _value in walk(msg):
            keys = [p for p in path if isinstance(p, str) and p != "<key>"]
            if keys and keys[-1] in BALANCE_KEYS and path[-1] != "<key>":
                if len(keys) == 1 and keys[0] in ("balance", "available"):
                    continue
                if keys[:2] == ["snapshot", "you"]:
                    continue
                if keys[0] == "rounds" and path[2] == "balance":  # history: their own
                    continue
                self.fail(index, f"a balance at {path}")

    def check_snapshot(
        self, index: int, snap: dict[str, Any], allowed: set[tuple[Any, ...]]
    ) -> None:
        assert set(snap.get("you") or {}) <= {
            "player",
            "seat",
            "balance",
            "available",
            "bets",
            "last_bets",
            "actions",  # what they may do now: no card, no one else's money
        }
        if snap["you"]["player"] != self.client.player:
            self.fail(index, "somebody else's 'you'")
        coup = snap["coup"]
        if coup is not None:
            self.round = coup["round_id"]
            squeezer = coup["turners"][coup["hand"]] if coup["style"] else None
            for hand in ("player", "banker"):
                for i, slot_view in enumerate(coup[hand], start=1):
                    card = slot_view["card"]
                    if card is None:
                        continue
                    slot = (coup["round_id"], hand, i)
                    if slot_view["up"]:
                        self.public.add(slot)
                    elif squeezer == self.client.player and hand == coup["hand"]:
                        self.private.add(slot)
                    self.seen(index, slot, card, private_ok=True)
                    allowed.add(("snapshot", "coup", hand, i - 1, "card"))
        last = snap.get("last_result")
        if last is not None:
            for hand in ("player", "banker"):
                for i, card in enumerate(last[hand], start=1):
                    self.seen(index, (last["round_id"], hand, i), card)
                    allowed.add(("snapshot", "last_result", hand, i - 1))
        shoe = snap.get("shoe")
        if shoe is not None and shoe.get("burn"):
            assert shoe["burn"]["card"] == self.truth.burn_card
            allowed.add(("snapshot", "shoe", "burn", "card"))

    def check_other(self, index: int, msg: dict[str, Any]) -> None:
        if msg.get("type") == "progress" and msg not in self.bends:
            self.fail(index, "not a bend the table published")
        elif msg.get("type") not in ("error", "chat", "progress"):
            self.fail(index, "an unknown kind of frame")
        self.only_cards_at(index, msg, set())

    # -- everywhere ----------------------------------------------------------------
    def only_cards_at(self, index: int, msg: dict[str, Any], allowed: set[tuple[Any, ...]]) -> None:
        for path, value in walk(msg):
            if isinstance(value, str):
                if CARD.fullmatch(value) and path not in allowed:
                    self.fail(index, f"a card string {value!r} at {path}")
                for burned in self.truth.burned_unique:
                    if CARD.fullmatch(value) and value == burned:
                        self.fail(index, f"the burned card {burned}")
            elif isinstance(value, bytes) and CARD.fullmatch(value.decode("latin-1")):
                self.fail(index, f"a card in bytes at {path}")

    def check_seed(self, index: int, msg: dict[str, Any]) -> None:
        seed = self.truth.seed
        for path, value in walk(msg):
            if isinstance(value, bytes) and value.hex() == seed:
                self.fail(index, "the seed as bytes")
            if isinstance(value, str) and seed in value.lower():
                ok = (msg.get("kind") == "shoe_ended" and path == ("data", "seed")) or (
                    path == ("record", "seed") and self.seed_out
                )
                if not ok:
                    self.fail(index, f"the seed at {path}")


async def test_no_card_seed_or_balance_reaches_a_client_early(net: Any) -> None:
    server = await net.start(
        **FAST, tables=(table_def("t1", timers={"betting": 30, "squeeze": 30}),)
    )
    published: list[Event] = []  # every event the table published, private parts and all
    server.bus.subscribe("t1", lambda _table, step: published.extend(step))
    sam = await net.guest(server, "msgpack", name="Sam")  # a spectator from the start
    await sam.join("t1")
    tom = await net.player(server, "tom", "json")  # a spectator who will drop and resume
    await tom.join("t1")
    players: dict[str, Client] = {}
    for name, fmt in (("ann", "json"), ("bob", "msgpack"), ("cy", "json")):
        client = await net.player(server, name, fmt)
        await client.join("t1")
        await client.call("sit", table="t1")
        players[name] = client
    clients = [sam, tom, *players.values()]
    rng = random.Random(99)
    game = Game(
        "t1",
        players,
        sam,
        rng=rng,
        style=lambda pid, hand, third: rng.choice(["peek", "side", "quick"]),
    )
    game.progress = True
    events: dict[str, int] = {"late": 0, "turner": 0, "resume": 0}

    async def mid_squeeze(turner: str, hand: str, cards: dict[str, str]) -> None:
        coup = len(game.log)
        if coup == 0 and not events["late"]:  # a newcomer's snapshot: nothing face down
            events["late"] += 1
            lou = await net.guest(server, "json", name="Lou")
            snap = (await lou.join("t1"))["snapshot"]
            assert all(c["card"] is None for c in snap["coup"][hand] if not c["up"])
            clients.append(lou)
        elif coup == 1 and not events["turner"]:  # the turner's own snapshot shows them
            events["turner"] += 1
            reply = await players[turner].reconnect("t1", since=False)
            assert reply is not None
            shown = {
                str(i): c["card"]
                for i, c in enumerate(reply["snapshot"]["coup"][hand], 1)
                if not c["up"]
            }
            assert {k: v for k, v in shown.items() if k in cards} == cards
        elif coup == 2 and not events["resume"]:  # a spectator resumes over the squeeze
            events["resume"] += 1
            await tom.abort()
            await players[turner].call(
                "progress", table="t1", hand=hand, card=int(min(cards)), percent=50
            )
            reply = await tom.reconnect("t1")
            assert reply is not None and reply["resumed"] is True

    game.on_squeeze = mid_squeeze
    areas = ("player", "banker", "tie", "player_pair")
    for n in range(6):
        bets = {pid: {rng.choice(areas): rng.randrange(100, 1_500, 50)} for pid in players}
        await game.play_coup(bets)
        for client in clients:
            await client.call("roads", table="t1")
            if n % 2:
                await client.call("balance")
        if n == 3:
            for client in players.values():
                await client.call("history", limit=5)
    assert all(events.values()), events
    assert any(turner for log in game.log for turner, _, _ in log.squeezed)
    # The operator closes the table: the shoe ends, its seed is revealed.
    op = await net.player(server, "op", "msgpack", roles=("operator",))
    await op.call("close_table", table="t1")
    for client in clients:
        await client.wait_event("closed", table="t1")
    record = (await sam.call("shoe_record", table="t1", shoe=1))["record"]
    truth = Truth(record, [log.round_id for log in game.log])
    assert truth.burned, "the burn put some cards face down"

    for client in clients:
        viewer = Viewer(client, truth, published)
        for frame in client.frames:
            viewer.check(frame.index, frame.msg)
        client.assert_clean()
    # No event's public part carries a balance; private parts go to their owner only.
    for event in published:
        public_keys = {p[-1] for p, _ in walk(view_event(event, None)["data"]) if p}
        assert not public_keys & BALANCE_KEYS, event
        for owner, part in (event.private or {}).items():
            mine = {"balance", "available", "net", "cards", "actions", "own"}  # own: their wager
            assert set(part) <= mine, (owner, part)
            # What the owner may do now (you.actions): never a card, never money but theirs.
            actions = json.dumps(part.get("actions", {}))
            assert not re.search(r'"[A2-9TJQK][shdc]"', actions), (owner, actions)


async def test_history_shows_only_the_players_own_money(net: Any) -> None:
    server = await net.start(**FAST)
    players: dict[str, Client] = {}
    for name, fmt in (("ann", "json"), ("bob", "msgpack")):
        client = await net.player(server, name, fmt)
        await client.join("t1")
        await client.call("sit", table="t1")
        players[name] = client
    log = await Game("t1", players, players["ann"]).play_coup(
        {"ann": {"player": 500}, "bob": {"banker": 700}}
    )
    for pid, client in players.items():
        record = (await client.call("history"))["rounds"][0]
        assert record["round_id"] == log.round_id
        assert [b["player"] for b in record["bets"]] == [pid]
        assert "balances" not in record and "players" not in record
        assert record["balance"]["after"] == await client.balance()
        assert record["player"] == log.player_cards and record["banker"] == log.banker_cards
