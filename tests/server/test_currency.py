"""Currencies over real sockets (issue "Currency"): a table plays in one currency (or
play money), a player in theirs (their token's ``currency``; a guest, play money).

- ``hello`` tells the client its currency and the digits of its minor units;
- the lobby shows a player only the tables of their currency, guests only play money's;
- ``join`` and ``sit`` at a table of another currency are refused ``wrong_currency``;
- lobby lines and snapshots carry the table's ``currency`` and ``decimals``;
- an operator's ``create_table`` takes a currency, checked as the config file's.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from server.gateway.server import ChemmyServer
from server.process.auth import make_token
from tests.kit import SECRET, Client, ServerProcess, scaled, table_def
from tests.kit.launch import ROOT

TABLES = (
    table_def("play"),
    table_def("euro", currency="EUR"),
    table_def("yen", currency="JPY", min=100, max=100_000, tie_max=15_000, side_max=15_000),
    table_def("dinar", currency="KWD"),
)


async def player(net: Any, server: ChemmyServer, pid: str, **claims: Any) -> Client:
    client: Client = await net.connect(server, "json", label=pid)
    await client.hello(token=make_token(SECRET, pid, **claims))
    return client


async def lobby(client: Client) -> dict[str, dict[str, Any]]:
    return {line["table"]: line for line in (await client.call("tables"))["tables"]}


async def test_hello_tells_the_currency_and_its_decimals(net: Any) -> None:
    server = await net.start(tables=TABLES, wallet="transfer")
    for code, decimals in (("EUR", 2), ("JPY", 0), ("KWD", 3)):
        client = await player(net, server, f"p-{code.lower()}", currency=code)
        assert client.hello_reply is not None
        assert (client.hello_reply["currency"], client.hello_reply["decimals"]) == (code, decimals)
    plain = await player(net, server, "plain")
    guest = await net.guest(server, "msgpack")
    for client in (plain, guest):
        assert client.hello_reply is not None
        assert (client.hello_reply["currency"], client.hello_reply["decimals"]) == (None, 2)


async def test_the_lobby_shows_only_the_players_currency(net: Any) -> None:
    server = await net.start(tables=TABLES, wallet="transfer")
    eve = await player(net, server, "eve", currency="EUR")
    ken = await player(net, server, "ken", currency="JPY")
    ann = await player(net, server, "ann")
    guest = await net.guest(server, "json")
    assert set(await lobby(eve)) == {"euro"}
    assert set(await lobby(ken)) == {"yen"}
    assert set(await lobby(ann)) == set(await lobby(guest)) == {"play"}
    line = (await lobby(ken))["yen"]
    assert (line["currency"], line["decimals"], line["limits"]["min"]) == ("JPY", 0, 100)
    assert {k: (await lobby(guest))["play"][k] for k in ("currency", "decimals")} == {
        "currency": None,
        "decimals": 2,
    }
    nobody = await player(net, server, "chf", currency="CHF")  # no table in francs
    assert await lobby(nobody) == {}


async def test_join_and_sit_elsewhere_are_refused_wrong_currency(net: Any) -> None:
    server = await net.start(tables=TABLES, wallet="transfer")
    eve = await player(net, server, "eve", currency="EUR")
    ann = await player(net, server, "ann")
    guest = await net.guest(server, "json")
    for table in ("play", "yen", "dinar"):
        reply = await eve.refused("wrong_currency", "join", table=table)
        assert "EUR" in reply["message"] and table in reply["message"]
        await eve.refused("wrong_currency", "sit", table=table)
    for client in (ann, guest):
        reply = await client.refused("wrong_currency", "join", table="euro")
        assert "EUR" in reply["message"] and "play money" in reply["message"]
        await client.refused("wrong_currency", "sit", table="euro", seat=1)
    await eve.refused("no_table", "join", table="nowhere")
    # At their own currency's table, all goes as before; the snapshot says the currency.
    await eve.join("euro")
    options = eve.snapshots["euro"]["options"]
    assert (options["currency"], options["decimals"]) == ("EUR", 2)
    await eve.call("sit", table="euro")
    await guest.join("play")
    assert guest.snapshots["play"]["options"]["currency"] is None
    await guest.call("sit", table="play")


async def test_operators_create_tables_in_a_currency(net: Any) -> None:
    server = await net.start(
        tables=TABLES, wallet="transfer", rate_limit=10_000.0, rate_burst=10_000
    )
    op = await player(net, server, "root", roles=("operator",))
    ken = await player(net, server, "ken", currency="JPY")
    reply = await op.refused(
        "bad_options", "create_table", table="gold", options={"currency": "GOLD"}
    )
    assert "currency" in reply["message"] and "ISO 4217" in reply["message"]
    created = (await op.call("create_table", table="yen2", options={"currency": "JPY"}))["table"]
    assert (created["currency"], created["decimals"]) == ("JPY", 0)
    assert set(await lobby(ken)) == {"yen", "yen2"}
    assert "yen2" not in await lobby(op)  # the operator plays with play money
    await ken.join("yen2")


@pytest.mark.slow
def test_a_currency_table_on_play_money_stops_the_server_at_start(tmp_path: Path) -> None:
    """Issue 34 §7: with the default internal wallet, EUR/JPY/KWD tables handed out play
    money in euros and offered Deposit. chemmy-server now refuses to start with such a
    table, saying why in one line; with the operator's money it starts."""
    config = tmp_path / "chemmy.toml"
    config.write_text(f'jwt_secret = "{SECRET}"\n\n[[tables]]\nid = "euro"\ncurrency = "EUR"\n')
    command = [sys.executable, "-m", "server.process.main", "--host", "127.0.0.1", "--port", "0"]
    command += ["--db", str(tmp_path / "chemmy.sqlite3"), "--config", str(config)]
    run = subprocess.run(
        command, capture_output=True, text=True, timeout=scaled(60), cwd=ROOT, check=False
    )
    lines = run.stderr.strip().splitlines()
    assert run.returncode == 2 and len(lines) == 1, run.stderr
    assert lines[0].startswith("chemmy-server: error: table 'euro' is in EUR"), lines
    assert "internal wallet" in lines[0] and "wallet transfer or seamless" in lines[0], lines
    with ServerProcess(tmp_path / "ok", config.read_text(), "--wallet", "transfer") as server:
        assert server.port > 0  # the operator's money: it serves
