"""The lobby over real sockets: tables, operators, chat, money, and the HTTP endpoints.

- the tables list; an operator (a token with the ``operator`` role, or a player named
  in ``operator_players``) creates and closes tables, anybody else is refused;
- closing a table mid-round refunds the held wagers (§8), and frees placed chips;
- chat reaches everyone at the table (both formats, spectators too) and nobody else;
- ``/healthz``, ``/readyz`` (503 while draining) and ``/metrics`` on the same port;
- balance and deposits (idempotent by command id).
"""

from __future__ import annotations

from typing import Any

from server.gateway.server import ChemmyServer
from tests.kit import Client, Game, http_get, table_def, without_actions

FAST = {"rate_limit": 10_000.0, "rate_burst": 10_000}


async def seated(
    net: Any, server: ChemmyServer, table: str, *names_fmts: tuple[str, str]
) -> dict[str, Client]:
    clients = {}
    for name, fmt in names_fmts:
        client = await net.player(server, name, fmt)
        await client.join(table)
        await client.call("sit", table=table)
        clients[name] = client
    return clients


async def test_tables_list(net: Any) -> None:
    server = await net.start(
        tables=(table_def("t1"), table_def("t2", tier="10-1000", decks=6, seats=7))
    )
    guest = await net.guest(server, "msgpack", name="Lobby")
    tables = {t["table"]: t for t in (await guest.call("tables"))["tables"]}
    assert set(tables) == {"t1", "t2"}
    assert tables["t1"]["limits"] == {
        "min": 100,
        "max": 10_000,
        "tie_max": 1_500,
        "side_max": 1_500,
    }
    assert tables["t2"]["limits"] == {
        "min": 1_000,
        "max": 100_000,
        "tie_max": 15_000,
        "side_max": 15_000,
    }
    assert (tables["t2"]["tier"], tables["t2"]["seats"], tables["t2"]["name"]) == (
        "10-1000",
        7,
        "Test t2",
    )
    assert tables["t1"]["seated"] == 0 and tables["t1"]["phase"] == "waiting"
    await seated(net, server, "t1", ("ann", "json"))
    watcher = await net.guest(server, "json")
    await watcher.join("t1")
    tables = {t["table"]: t for t in (await guest.call("tables"))["tables"]}
    assert (tables["t1"]["seated"], tables["t1"]["spectators"]) == (1, 1)
    assert tables["t1"]["phase"] == "shoe_offer" and tables["t1"]["shoe_no"] == 1
    snapshot = watcher.snapshots["t1"]
    assert snapshot["options"]["decks"] == 8 and snapshot["options"]["commission"] is True


async def test_operators_create_and_close_tables(net: Any) -> None:
    server = await net.start(**FAST, operator_players=("boss",))
    op = await net.player(server, "root", "msgpack", roles=("operator",))
    boss = await net.player(server, "boss", "json")  # an operator by the server's config
    assert (await boss.call("ping"))["type"] == "ok" and boss.hello_reply["roles"] == ["operator"]
    ann = await net.player(server, "ann", "json")
    guest = await net.guest(server, "msgpack")

    options = {"name": "High Rollers", "tier": "10-1000", "decks": 6, "timers": {"betting": 5}}
    for outsider in (ann, guest):
        await outsider.refused("not_allowed", "create_table", table="vip", options=options)
        await outsider.refused("not_allowed", "close_table", table="t1")
    created = (await op.call("create_table", table="vip", options=options))["table"]
    assert (
        created["table"] == "vip"
        and created["name"] == "High Rollers"
        and created["tier"] == "10-1000"
    )
    assert "vip" in {t["table"] for t in (await ann.call("tables"))["tables"]}
    await op.refused("table_exists", "create_table", table="vip")
    await op.refused("bad_options", "create_table", table="bad1", options={"decks": 7})
    await op.refused("bad_options", "create_table", table="bad2", options={"colour": "red"})
    await op.refused("bad_options", "create_table", table="bad3", options={"super6": True})
    # names are shown on every screen: the one text check of player names and chat
    for i, name in enumerate(["Evil\u202eemaN", "zero\u200bwidth", "bell\x07", ""]):
        await op.refused(
            "bad_options", "create_table", table=f"bad-name{i}", options={"name": name}
        )
    await op.refused("bad_message", "create_table", table="no spaces")
    await op.refused("bad_message", "create_table", table="x" * 33)
    await boss.call("create_table", table="boss-1")
    # Players play at the new table.
    players = await seated(net, server, "vip", ("ann", "json"), ("bea", "msgpack"))
    log = await Game("vip", players, players["ann"]).play_coup(
        {"ann": {"player": 1_000}, "bea": {"banker": 2_000}}
    )
    assert log.result["outcome"] in ("player", "banker", "tie")
    # Closing it: the lobby forgets it, its players are told, commands find no table.
    await boss.refused("no_table", "close_table", table="nope")
    reply = await boss.call("close_table", table="vip")
    assert reply == {**reply, "table": "vip", "closed": True}
    for client in players.values():
        closed = await client.wait_event("closed", table="vip")
        assert without_actions(closed["data"]) == {"refunded": False}
        await client.refused("no_table", "bet", table="vip", area="player", amount=1_000)
    assert "vip" not in {t["table"] for t in (await ann.call("tables"))["tables"]}
    # The shoe was cut short: its seed is revealed all the same.
    record = (await ann.call("shoe_record", table="vip"))["record"]
    assert record["complete"] is False and record["coups"] == [
        {"player": log.player_cards, "banker": log.banker_cards}
    ]
    # A restart keeps the tables created (and not the ones closed).
    await net.stop(server)
    server2 = await net.start(**FAST, operator_players=("boss",))
    assert set(server2.actors) == {"t1", "boss-1"}


async def test_close_mid_round_refunds_held_wagers(net: Any) -> None:
    server = await net.start(**FAST, tables=(table_def("t1", timers={"squeeze": 60}),))
    op = await net.player(server, "root", "json", roles=("operator",))
    players = await seated(net, server, "t1", ("ann", "json"), ("bob", "msgpack"), ("cy", "json"))
    game = Game("t1", {"ann": players["ann"], "bob": players["bob"]}, players["cy"])
    game.players["cy"] = players["cy"]
    await game.to_betting()
    before = {pid: await c.balance() for pid, c in players.items()}
    await game.act("ann", "bet", area="banker", amount=1_500)
    await game.act("ann", "bet", area="tie", amount=200)
    await game.act("bob", "bet", area="player", amount=3_000)
    await game.act("cy", "bet", area="player_pair", amount=100)
    for pid in ("ann", "bob", "cy"):
        await game.act(pid, "done")
    assert game.prompt()["kind"] == "turn"  # cards dealt, waiting for bob's squeeze
    held = await server.store.balances(["held:t1"])
    assert held["held:t1"] == 1_500 + 200 + 3_000 + 100
    assert await players["bob"].balance() == before["bob"] - 3_000
    await op.call("close_table", table="t1")
    for client in players.values():
        closed = await client.wait_event("closed", table="t1")
        assert without_actions(closed["data"]) == {"refunded": True}
        ended = [e for e in client.events("t1", "shoe_ended")]
        assert ended and ended[-1]["data"]["complete"] is False
    for pid, client in players.items():
        reply = await client.call("balance")
        assert reply["balance"] == reply["available"] == before[pid]
        assert (await client.call("history"))["rounds"] == []  # no coup was settled
    books = await server.store.balances(["held:t1", "house"])
    assert books == {"held:t1": 0, "house": 0}
    refunds = [e for e in await server.store.ledger() if e.kind == "refund"]
    assert sorted((e.dst, e.amount) for e in refunds) == [
        ("player:ann", 200),
        ("player:ann", 1_500),
        ("player:bob", 3_000),
        ("player:cy", 100),
    ]
    audit = await server.store.audit()
    assert audit["sum"] == 0 and audit["ledger_matches"]


async def test_close_during_betting_frees_placed_chips(net: Any) -> None:
    server = await net.start(**FAST)
    op = await net.player(server, "root", "msgpack", roles=("operator",))
    players = await seated(net, server, "t1", ("ann", "json"))
    await Game("t1", players, players["ann"]).to_betting()
    await players["ann"].call("bet", table="t1", area="banker", amount=2_500)
    assert (await players["ann"].call("balance"))["available"] == 100_000 - 2_500
    await op.call("close_table", table="t1")
    closed = await players["ann"].wait_event("closed", table="t1")
    assert without_actions(closed["data"]) == {"refunded": False}
    assert (await players["ann"].call("balance"))["available"] == 100_000


async def test_create_table_without_an_id_after_a_close(net: Any) -> None:
    server = await net.start(tables=(table_def("t1"), table_def("t2")))
    op = await net.player(server, "root", "msgpack", roles=("operator",))
    assert (await op.call("create_table"))["table"]["table"] == "t3"
    await op.call("close_table", table="t2")
    created = await op.call("create_table")
    assert created["table"]["table"] not in ("t1", "t3")


async def test_a_table_created_again_under_a_closed_id_takes_the_wagers(net: Any) -> None:
    server = await net.start(**FAST)
    op = await net.player(server, "root", "msgpack", roles=("operator",))
    await op.call("create_table", table="t9")
    players = await seated(net, server, "t9", ("ann", "json"))
    await Game("t9", players, players["ann"]).play_coup({"ann": {"banker": 1_000}})
    await op.call("close_table", table="t9")
    await op.call("create_table", table="t9")
    ann = players["ann"]
    await ann.join("t9")
    await ann.call("sit", table="t9")
    game = Game("t9", players, ann)
    await game.to_betting()
    balance = await ann.balance()
    await game.act("ann", "bet", area="banker", amount=1_000)
    await game.act("ann", "done")
    closed = ann.events("t9", "betting_closed")[-1]["data"]
    assert closed["balance"] == balance - 1_000  # the wager is held from the balance
    assert (await server.store.balances(["held:t9"]))["held:t9"] == 1_000


async def test_create_table_with_binary_junk_in_options_is_answered(net: Any) -> None:
    server = await net.start()
    op = await net.player(server, "root", "msgpack", roles=("operator",))
    reply = await op.rpc("create_table", table="bin", options={"limits": {"note": b"\x00"}})
    assert reply["type"] == "error" and reply["code"] == "bad_options"
    assert not op.closed


async def test_chat_reaches_everyone_at_the_table_only(net: Any) -> None:
    server = await net.start(tables=(table_def("t1"), table_def("t2")))
    players = await seated(net, server, "t1", ("ann", "json"), ("bob", "msgpack"))
    watcher = await net.guest(server, "msgpack", name="Rail")
    await watcher.join("t1")
    elsewhere = await net.guest(server, "json", name="Away")
    await elsewhere.join("t2")
    lobby = await net.guest(server, "json", name="Lobby")  # joined no table
    await players["ann"].call("chat", table="t1", text="bonne chance, messieurs")
    await watcher.call("chat", table="t1", text="  from   the rail ")
    for client in (players["ann"], players["bob"], watcher):
        await client.wait_frame(lambda m, c=client: len(c.chats()) >= 2)
        first, second = client.chats()
        assert first == {
            **first,
            "table": "t1",
            "player": "ann",
            "name": "ann",
            "text": "bonne chance, messieurs",
        }
        assert second == {
            **second,
            "player": watcher.player,
            "name": "Rail",
            "text": "from the rail",
        }
        assert isinstance(first["time"], float | int)
    await elsewhere.call("chat", table="t2", text="anyone?")
    await elsewhere.wait_frame(lambda m: m.get("type") == "chat")
    await lobby.call("ping")
    for client in (elsewhere, lobby):
        assert all(c["table"] == "t2" for c in client.chats())
    assert all(c["table"] == "t1" for c in players["ann"].chats())
    await lobby.refused("not_joined", "chat", table="t1", text="let me in")


def _metrics(text: str) -> dict[str, float]:
    """``/metrics``' samples: name (with labels) -> value."""
    return {
        line.split(" ")[0]: float(line.split(" ")[-1])
        for line in text.splitlines()
        if line and not line.startswith("#")
    }


async def test_health_ready_and_metrics_over_http(net: Any) -> None:
    server = await net.start(**FAST)
    status, headers, body = await http_get(server.port, "/healthz")
    assert (status, body) == (200, b"ok\n")
    status, _, body = await http_get(server.port, "/readyz")
    assert (status, body) == (200, b"ready\n")
    status, _, _ = await http_get(server.port, "/nowhere")
    assert status == 404
    # Before any coup: the coups and the money settled are there already, at 0 (a
    # dashboard's rate needs a first point; docs/protocol.md §15).
    status, _, body = await http_get(server.port, "/metrics")
    early = _metrics(body.decode())
    assert early["chemmy_coups_total"] == 0
    for kind in ("staked", "returned", "commission"):
        assert early[f'chemmy_settled_minor_units_total{{kind="{kind}"}}'] == 0
    players = await seated(net, server, "t1", ("ann", "json"), ("bob", "msgpack"))
    await Game("t1", players, players["bob"]).play_coup(
        {"ann": {"player": 1_000}, "bob": {"tie": 100}}
    )
    await players["ann"].refused("wrong_phase", "toss", table="t1", hand="player")
    status, headers, body = await http_get(server.port, "/metrics")
    assert status == 200 and headers["content-type"].startswith("text/plain")
    text = body.decode()
    metrics = _metrics(text)
    assert metrics["chemmy_connections"] == 2
    assert metrics["chemmy_tables"] == 1
    assert metrics["chemmy_coups_total"] == 1
    assert metrics['chemmy_commands_total{type="bet"}'] == 2
    assert metrics['chemmy_refused_total{code="wrong_phase"}'] == 1
    assert metrics['chemmy_settled_minor_units_total{kind="staked"}'] == 1_100
    assert "ann" not in text and "bob" not in text  # no player's data in metrics
    # Draining: not ready any more, and no new WebSocket connections.
    await server.drain(timeout=0)
    status, _, body = await http_get(server.port, "/readyz")
    assert (status, body) == (503, b"draining\n")
    status, _, _ = await http_get(server.port, "/healthz")
    assert status == 200
    status, _, _ = await http_get(
        server.port,
        "/",
        {
            "Upgrade": "websocket",
            "Connection": "Upgrade",
            "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==",
            "Sec-WebSocket-Version": "13",
        },
    )
    assert status == 503
    # Connected players may not bet any more while the server drains.
    await players["ann"].refused("draining", "bet", table="t1", area="banker", amount=100)


async def test_balance_and_idempotent_deposits(net: Any) -> None:
    server = await net.start(**FAST)
    ann = await net.player(server, "ann", "msgpack")
    start = ann.hello_reply["balance"]
    assert start == server.config.guest_balance
    reply = await ann.call("balance")
    assert reply["balance"] == reply["available"] == start
    first = await ann.call("deposit", msg_id="top-up-1", amount=25_000)
    assert (first["balance"], first["duplicate"]) == (start + 25_000, False)
    again = await ann.call("deposit", msg_id="top-up-1", amount=25_000)
    assert (again["balance"], again["duplicate"]) == (start + 25_000, True)
    # The same id for another amount is not "that deposit again": refused, nothing moved.
    await ann.refused("id_reused", "deposit", msg_id="top-up-1", amount=99)
    assert await ann.balance() == start + 25_000
    # The same id from another connection of the same player, and after a restart.
    again2 = await net.player(server, "ann", "json")
    assert (await again2.call("deposit", msg_id="top-up-1", amount=25_000))["duplicate"] is True
    second = await ann.call("deposit", msg_id="top-up-2", amount=5_000)
    assert second["balance"] == start + 30_000
    # Ids belong to the player: bob's "top-up-1" is his own deposit.
    bob = await net.player(server, "bob", "json")
    assert (await bob.call("deposit", msg_id="top-up-1", amount=1_000))["duplicate"] is False
    # Ledger keys cannot collide between players: "a" depositing with id "b:c" and
    # "a:b" depositing with id "c" are two deposits (both credited).
    a = await net.player(server, "a", "json")
    ab = await net.player(server, "a:b", "json")
    assert (await a.call("deposit", msg_id="b:c", amount=700))["duplicate"] is False
    assert (await ab.call("deposit", msg_id="c", amount=900))["duplicate"] is False
    assert await a.balance() == start + 700 and await ab.balance() == start + 900
    await net.stop(server)
    server2 = await net.start(**FAST)
    ann.url = f"ws://127.0.0.1:{server2.port}/"
    await ann.reconnect()
    assert (await ann.call("deposit", msg_id="top-up-2", amount=5_000))["duplicate"] is True
    assert await ann.balance() == start + 30_000
    # Placed chips count against what is available, not against the balance (§7).
    await ann.join("t1")
    await ann.call("sit", table="t1")
    await Game("t1", {"ann": ann}, ann).to_betting()
    await ann.call("bet", table="t1", area="player", amount=4_000)
    reply = await ann.call("balance")
    assert (reply["balance"], reply["available"]) == (start + 30_000, start + 26_000)
    audit = await server2.store.audit()
    assert audit["sum"] == 0 and audit["ledger_matches"]
    # The placed chips are ann's stake at t1 (the table's account), still hers.
    accounts = ["cashier", "stake:t1:ann", *(f"player:{p}" for p in ("ann", "bob", "a", "a:b"))]
    books = await server2.store.balances(accounts)
    assert books["stake:t1:ann"] == 4_000
    assert -books["cashier"] == sum(v for k, v in books.items() if k != "cashier")
