"""deploy/nginx in front of chemmy-server, for real: nginx (Debian's), one process on
SQLite or two sharing a real Redis, players over ``wss://`` through nginx.

- The front door: the page and the game share ``/``; nginx serves what a process serves
  (the web page, when there is one); ``/healthz`` and ``/readyz`` pass; ``/metrics`` is
  closed; plain HTTP redirects to HTTPS; only WebSocket upgrades are rate-limited.
- The operator's door: ``/operator/`` (the back office and its API) passes from
  loopback (a signed call through nginx is made once by its ``Idempotency-Key``) and is
  refused ``403`` from any address outside the private ranges (a client on a Unix
  socket nginx also listens on, here: no IP address at all), while the page stays
  public.
- A table's connections on one process: the upgrades that name their table
  (``?table=``, as the web page and ``chemmy play --table`` make them) go by a
  consistent hash of the table, all of one table's to one process and the tables to
  both; the lobby's (no table) are still spread by ``least_conn``.
- The default deployment, one process (SQLite) behind nginx, restarted for an upgrade
  while chips are down: players come back through nginx and the round goes on with
  their chips; balances exact.
- A round through nginx with players landing on both processes (``least_conn``), then a
  drain (SIGTERM) of the table's owner while players bet: its clients, closed with 1001,
  reconnect through nginx to the other process and resume from their last ``seq``; every
  bet acknowledged (retried with the same id when the reply was lost) is in the coup,
  the round settles, and nobody sees a gap or a duplicate event. (A strict xfail until
  the cluster's known problems are fixed: docs/operations.md §9.)

nginx's config is deploy/'s, with the listening ports, the certificate paths and the
upstream servers substituted, nothing else (``test_front_config_is_deploys_own``).
"""

from __future__ import annotations

import asyncio
import json
import re
import signal
import socket
import ssl
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
import redis.asyncio as aioredis
from deploy_files import DEPLOY, upstream_blocks
from deploy_helpers import (
    ROOT,
    Front,
    MakeFront,
    cluster_script,
    metric,
    server_helpers,
    tls_client_class,
)
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed, InvalidStatus

from client_cli.common import table_url
from server.process.auth import make_token
from server.wallet.signing import signature_header
from tests.kit import ServerProcess, scaled
from tests.kit.operator import KEY as OPERATOR_KEY

H = server_helpers()
COMPOSE_UPSTREAM = DEPLOY / "compose" / "chemmy-upstream.conf"
TABLE = "t1"
STEP = 100  # one chip: the table's minimum bet (tier 1-100, in minor units)
#: Refusals that say "not now" (the table is moving, the owner is busy or gone): a
#: client retries them with the same id. Any other refusal fails the test.
TRANSIENT = frozenset({"unavailable", "busy", "draining", "store_unavailable"})


def config(betting: float = 30) -> str:
    t = {k: round(scaled(v), 2) for k, v in dict(squeeze=20, third_card=20, cut=20).items()}
    timers = ", ".join(f"{k} = {v}" for k, v in t.items())
    return (
        "[[tables]]\n"
        f'id = "{TABLE}"\n'
        'name = "Deploy test"\n'
        'tier = "1-100"\n'
        f"timers = {{ betting = {round(scaled(betting), 2)}, shoe_offer = {t['cut']}, "
        f"grace = {round(scaled(60), 2)}, {timers} }}\n"
    )


def get(
    url: str, tls: ssl.SSLContext | None = None, **headers: str
) -> tuple[int, dict[str, str], bytes]:
    """A GET that follows no redirect: (status, headers, body)."""

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args: Any, **kwargs: Any) -> None:
            return None

    opener = urllib.request.build_opener(NoRedirect, urllib.request.HTTPSHandler(context=tls))
    request = urllib.request.Request(url, headers=headers)
    try:
        with opener.open(request, timeout=scaled(10)) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as exc:
        with exc:
            return exc.code, dict(exc.headers), exc.read()


async def aget(
    url: str, tls: ssl.SSLContext | None = None, **headers: str
) -> tuple[int, dict[str, str], bytes]:
    return await asyncio.to_thread(get, url, tls, **headers)


async def player(front: Front, pid: str, fmt: str) -> Any:
    """A player with a token, connected through nginx, who said hello."""
    client = tls_client_class(front.nginx.tls)(front.url, fmt, label=pid)
    front.clients.append(client)
    await client.open()
    await client.hello(token=make_token(H.SECRET, pid, name=pid.capitalize()))
    return client


async def owner_pid(front: Front) -> int:
    """The pid of the process holding the table's lease (node names are host-pid-random)."""
    assert front.store is not None
    r = aioredis.Redis.from_url(front.store)
    try:
        node = await r.get(f"chemmy:{{{TABLE}}}:lease")
    finally:
        await r.aclose()
    assert node is not None, "nobody owns the table"
    return int(node.decode().rsplit("-", 2)[1])


# ------------------------------------------------------------------------ the front door
def test_front_config_is_deploys_own() -> None:
    """What the tests and scripts/cluster run is deploy/nginx/chemmy.conf with the two
    listen lines and the two certificate paths changed, and no other line."""
    script = cluster_script()
    original = (ROOT / "deploy/nginx/chemmy.conf").read_text().splitlines()
    rendered = script.render_site(
        "\n".join(original), https_port=1443, http_port=1080,
        cert=ROOT / "x.pem", key=ROOT / "x.key",
    ).splitlines()  # fmt: skip
    assert len(rendered) == len(original)
    changed = [(a.strip(), b.strip()) for a, b in zip(original, rendered, strict=True) if a != b]
    assert [a.split()[0] for a, _b in changed] == [
        "listen", "listen", "ssl_certificate", "ssl_certificate_key",
    ]  # fmt: skip
    assert [b for _a, b in changed] == [
        "listen 127.0.0.1:1080;",
        "listen 127.0.0.1:1443 ssl;",
        f"ssl_certificate     {ROOT / 'x.pem'};",
        f"ssl_certificate_key {ROOT / 'x.key'};",
    ]
    upstream = (ROOT / "deploy/nginx/chemmy-upstream.conf").read_text()
    servers = script.render_upstream(upstream, ["127.0.0.1:1", "127.0.0.1:2"])
    kept = [line for line in upstream.splitlines() if not line.strip().startswith("server ")]
    assert [line for line in servers.splitlines() if not line.strip().startswith("server ")] == kept
    # Both blocks (the lobby's and the tables') list the addresses given.
    assert re.findall(r"server (\S+) max_fails=1 fail_timeout=10s;", servers) == [
        "127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:1", "127.0.0.1:2",
    ]  # fmt: skip


def test_front_timeouts_outlast_the_servers_keepalive() -> None:
    """A WebSocket is idle between pings: nginx must not cut it before the server's
    ping (every ``ping_interval``) and its wait for the pong (``ping_timeout``)."""
    source = (ROOT / "server/gateway/server.py").read_text()
    interval = int(re.search(r"ping_interval=(\d+)", source)[1])  # type: ignore[index]
    timeout = int(re.search(r"ping_timeout=(\d+)", source)[1])  # type: ignore[index]
    site = (ROOT / "deploy/nginx/chemmy.conf").read_text()
    # (The players' location; /operator/'s plain requests are answered within 10 s.)
    blocks = re.findall(r"^    location / \{(.*?)^    \}", site, re.MULTILINE | re.DOTALL)
    (players,) = [block for block in blocks if "proxy_pass" in block]
    for directive in ("proxy_read_timeout", "proxy_send_timeout"):
        (value,) = re.findall(rf"^\s*{directive} (\d+)s;", players, re.MULTILINE)
        assert int(value) > interval + timeout, directive
    upstream = (ROOT / "deploy/nginx/chemmy-upstream.conf").read_text()
    assert re.search(r"^\s*least_conn;", upstream, re.MULTILINE)


@pytest.mark.slow
async def test_front_door_page_health_metrics_redirect_and_upgrade_rate(
    make_front: MakeFront,
) -> None:
    front = await make_front(2, config())
    tls = front.nginx.tls
    direct = f"http://127.0.0.1:{front.servers[0].port}"
    # The page and its files are the processes' own, passed through as they are.
    for path in ("/", "/index.html", "/chemmy.js"):
        via, _headers, body = await aget(front.https + path, tls)
        mine, _h, own = await aget(direct + path)
        assert (via, body) == (mine, own), path
    assert await aget(front.https + "/healthz", tls) == (200, _any(), b"ok\n")
    status, headers, body = await aget(front.https + "/readyz", tls)
    assert (status, body) == (200, b"ready\n")
    assert "max-age" in headers.get("Strict-Transport-Security", "")
    # Metrics are each process's, scraped from inside; never through the front.
    assert (await aget(front.https + "/metrics", tls))[0] == 403
    assert (await aget(direct + "/metrics"))[0] == 200
    # Plain HTTP goes to HTTPS.
    status, headers, _body = await aget(f"http://127.0.0.1:{front.nginx.http_port}/readyz")
    assert status == 301
    assert headers["Location"] == "https://127.0.0.1/readyz"
    # A player connects through nginx.
    client = await player(front, "ann", "msgpack")
    assert (await client.call("ping"))["type"] == "ok"

    # Upgrades are rate-limited per address (5/s, 20 at once); page loads are not.
    async def upgrade() -> int:
        try:
            async with connect(
                front.url, ssl=tls, subprotocols=["chemmy.v1.json"],  # type: ignore[list-item]
                open_timeout=scaled(10), proxy=None,
            ):  # fmt: skip
                return 101
        except InvalidStatus as exc:
            return int(exc.response.status_code)

    statuses = await asyncio.gather(*(upgrade() for _ in range(40)))
    assert set(statuses) == {101, 429}, statuses
    assert statuses.count(101) >= 20, statuses  # the burst, and what refilled meanwhile
    pages = await asyncio.gather(*(aget(front.https + "/healthz", tls) for _ in range(30)))
    assert {status for status, _h, _b in pages} == {200}, front.nginx.error_log[-3000:]
    # The player already connected was never affected.
    assert (await client.call("ping"))["type"] == "ok"
    client.assert_clean()


class _any(dict):  # type: ignore[type-arg]
    """Equal to any headers."""

    def __eq__(self, other: object) -> bool:
        return isinstance(other, dict)

    __hash__ = None  # type: ignore[assignment]


def over_unix(path: Path, tls: ssl.SSLContext, target: str) -> tuple[int, bytes]:
    """A GET of ``target`` to nginx over TLS on the Unix socket ``path``: (status, body)."""
    with socket.socket(socket.AF_UNIX) as raw:
        raw.settimeout(scaled(10))
        raw.connect(str(path))
        with tls.wrap_socket(raw, server_hostname="127.0.0.1") as conn:
            conn.sendall(f"GET {target} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
            data = b""
            while chunk := conn.recv(65536):
                data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split(b" ", 2)[1]), body


def post(
    url: str, tls: ssl.SSLContext, headers: dict[str, str], body: bytes
) -> tuple[int, dict[str, str], bytes]:
    request = urllib.request.Request(url, data=body, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=scaled(10), context=tls) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as exc:
        with exc:
            return exc.code, dict(exc.headers), exc.read()


@pytest.mark.slow
async def test_the_operator_paths_pass_only_from_private_networks(make_front: MakeFront) -> None:
    front = await make_front(1, config(), "--operator-key", OPERATOR_KEY, store=False)
    tls = front.nginx.tls
    # From loopback: the back office's page and a signed call, made once by its key.
    status, headers, _body = await aget(front.https + "/operator/", tls)
    assert status == 200 and headers["X-Frame-Options"] == "DENY"
    raw = b"{}"
    signed = {
        "Content-Type": "application/json",
        "Chemmy-Signature": signature_header(
            OPERATOR_KEY.encode(), time.time(), "POST", "/operator/v1/tables", raw
        ),
        "Idempotency-Key": "through-nginx",
    }
    url = front.https + "/operator/v1/tables"
    first = await asyncio.to_thread(post, url, tls, signed, raw)
    assert first[0] == 200, first
    again = await asyncio.to_thread(post, url, tls, signed, raw)
    assert again[0] == 200 and again[2] == first[2]
    assert again[1]["Idempotent-Replayed"] == "true"
    made = json.loads(first[2])["table"]["table"]
    # From elsewhere: nginx also listens on a Unix socket, whose clients have no address
    # in the allowed ranges (as a client on the internet has none).
    sock = front.nginx.folder / "outside.sock"
    site = front.nginx.folder / "chemmy.conf"
    text = site.read_text()
    listen = re.search(r"^(\s*)listen 127\.0\.0\.1:\d+ ssl;$", text, re.MULTILINE)
    assert listen is not None
    site.write_text(text.replace(listen[0], f"{listen[0]}\n{listen[1]}listen unix:{sock} ssl;", 1))
    front.nginx.child.send_signal(signal.SIGHUP)  # reload
    for _ in range(100):
        if sock.exists():
            break
        await asyncio.sleep(0.05)
    for target in ("/operator/", "/operator/v1/tables", "/operator/static/backoffice.js"):
        status, _body = await asyncio.to_thread(over_unix, sock, tls, target)
        assert status == 403, target
    assert (await asyncio.to_thread(over_unix, sock, tls, "/healthz"))[0] == 200  # the rest
    # Nothing reached the server from there: still the one table made from loopback.
    direct = f"http://127.0.0.1:{front.servers[0].port}"
    reads = {
        "Chemmy-Signature": signature_header(
            OPERATOR_KEY.encode(), time.time(), "GET", "/operator/v1/tables", b""
        )
    }
    status, _headers, body = await aget(direct + "/operator/v1/tables", None, **reads)
    assert status == 200
    assert sorted(line["table"] for line in json.loads(body)["tables"]) == sorted([TABLE, made])


def test_the_front_config_restricts_the_operator_paths() -> None:
    """deploy/nginx lets /operator/ through from loopback and the private ranges only,
    as docs/operations.md says, and no comment says the server takes GETs only."""
    site = (ROOT / "deploy/nginx/chemmy.conf").read_text()
    block = re.search(r"location /operator/ \{(.*?)\n    \}", site, re.DOTALL)
    assert block is not None
    rules = re.findall(r"^\s*(allow|deny) ([^;]+);", block[1], re.MULTILINE)
    assert rules == [
        ("allow", "127.0.0.0/8"), ("allow", "::1"), ("allow", "10.0.0.0/8"),
        ("allow", "172.16.0.0/12"), ("allow", "192.168.0.0/16"), ("allow", "fc00::/7"),
        ("deny", "all"),
    ]  # fmt: skip
    assert "GETs and WebSocket frames only" not in site


# ----------------------------------------------------------- a table's connections
def test_front_config_routes_a_tables_connections_by_its_id() -> None:
    """deploy/'s nginx (both upstream files): an upgrade naming its table (``?table=``)
    goes to ``chemmy_tables``, a consistent hash of the table over the same processes;
    every other request (the page, the lobby's connections, health, the operator's) to
    ``chemmy``, the fewest connections first."""
    for path in (DEPLOY / "nginx" / "chemmy-upstream.conf", COMPOSE_UPSTREAM):
        blocks = upstream_blocks(path)
        assert list(blocks) == ["chemmy", "chemmy_tables"], path
        assert blocks["chemmy"] == blocks["chemmy_tables"], path
        text = path.read_text()
        lobby, tables = re.findall(r"^upstream \S+ \{(.*?)^\}", text, re.M | re.S)
        assert re.search(r"^\s*least_conn;", lobby, re.M), path
        assert not re.search(r"^\s*hash ", lobby, re.M), path
        assert re.search(r"^\s*hash \$arg_table consistent;", tables, re.M), path
        assert not re.search(r"^\s*least_conn;", tables, re.M), path
        assert re.search(r"^\s*zone chemmy_tables ", tables, re.M), path
    site = (ROOT / "deploy/nginx/chemmy.conf").read_text()
    maps = dict(re.findall(r"^map \$\w+ \$(\w+) \{(.*?)^\}", site, re.M | re.S))
    entries = {
        name: dict(re.findall(r"^\s*(\S+)\s+(\S+);", body, re.M)) for name, body in maps.items()
    }
    assert entries["chemmy_table"] == {"default": "$arg_table", '""': '""'}
    assert entries["chemmy_upstream"] == {"default": "chemmy_tables", '""': "chemmy"}
    assert re.search(r"^map \$http_upgrade \$chemmy_table \{", site, re.M)
    assert re.search(r"^map \$chemmy_table \$chemmy_upstream \{", site, re.M)
    passes = re.findall(r"^\s*location ([^{]+?) \{.*?proxy_pass (\S+);", site, re.M | re.S)
    assert dict(passes) == {
        "/": "http://$chemmy_upstream",
        "/operator/": "http://chemmy",
        "= /readyz": "http://chemmy",
    }


async def test_a_tables_connections_land_on_one_process_and_the_lobbys_spread(
    make_front: MakeFront,
) -> None:
    """Two processes behind deploy/'s nginx: the connections that name one table (as the
    web page opened for it, or ``chemmy play --table``, make them) all reach one process,
    whatever else their query says; the tables, many, land on both; connections without
    a table are spread by ``least_conn``. Each connection comes from a loopback address
    of its own (nginx limits upgrades per address), and the process it reached is the one
    whose ``chemmy_connections`` it raised."""
    front = await make_front(2, config())
    sources = (f"127.0.1.{n}" for n in range(1, 255))
    opened: list[Any] = []

    async def held() -> list[int]:
        """Each process's connections, once they add up to the ones open."""
        async with asyncio.timeout(scaled(10)):
            while True:
                counts = [
                    int(await asyncio.to_thread(metric, s.port, "chemmy_connections"))
                    for s in front.servers
                ]
                if sum(counts) == len(opened):
                    return counts
                await asyncio.sleep(0.02)

    async def landed(urls: list[str]) -> list[int]:
        """Open a connection to each URL: how many each process took."""
        before = await held()
        for url in urls:
            opened.append(
                await connect(
                    url, ssl=front.nginx.tls, proxy=None,
                    subprotocols=["chemmy.v1.json"],  # type: ignore[list-item]
                    open_timeout=scaled(10), local_addr=(next(sources), 0),
                )
            )  # fmt: skip
        return [after - b for after, b in zip(await held(), before, strict=True)]

    try:
        # One table's connections, the page's and a client's with more in its query.
        queries = ["?table=salon"] * 4 + ["?lang=fr&table=salon", "?table=salon&x=1"]
        assert sorted(await landed([front.url + q for q in queries])) == [0, 6]
        # Many tables: each one's connections on one process, the tables on both.
        where = set()
        for n in range(20):
            took = await landed([table_url(front.url, f"t{n}")] * 3)
            assert sorted(took) == [0, 3], (n, took)
            where.add(took.index(3))
        assert where == {0, 1}
        # The lobby's connections (no table): the fewest first, two each, whatever the
        # tables' connections hold (least_conn counts its own block's).
        assert await landed([front.url] * 4) == [2, 2]
    finally:
        await asyncio.gather(*(c.close() for c in opened))


# ------------------------------------------------------------------ a round and a drain
async def rejoin(client: Any) -> None:
    """Back through nginx after a close: a new connection, hello, join with ``since``
    (tried again while nginx finds no process: 502)."""
    for _attempt in range(int(scaled(50))):
        try:
            await client.reconnect(TABLE)
            return
        except (OSError, AssertionError, ConnectionError, ConnectionClosed, InvalidStatus):
            await asyncio.sleep(0.1)
    raise AssertionError(f"{client.label} could not come back")


async def bet_chips(client: Any, pid: str, area: str, count: int, first: asyncio.Event) -> int:
    """Place ``count`` chips, each with its own id; a chip whose reply was lost (closed
    connection, no reply in time, a transient refusal) is sent again with the same id
    after coming back. Returns what was acknowledged."""
    for n in range(count):
        mid = f"{pid}-chip-{n}"
        while True:
            if client.closed:
                await rejoin(client)
            try:
                reply = await client.rpc(
                    "bet", msg_id=mid, table=TABLE, area=area, amount=STEP, timeout=scaled(5)
                )
            except (AssertionError, ConnectionError, ConnectionClosed):
                if not client.closed:
                    await client.abort()
                continue
            if reply["type"] == "ok":
                break
            assert reply["code"] in TRANSIENT, f"{pid}: {reply}"
            await asyncio.sleep(0.1)
        first.set()
        await asyncio.sleep(0.2)  # a player's pace: the drain comes between chips
    return count * STEP


@pytest.mark.slow
async def test_one_process_behind_nginx_restarts_for_an_upgrade_without_losing_a_bet(
    make_front: MakeFront,
) -> None:
    """The default deployment: one process (SQLite) behind nginx. An upgrade restarts it:
    SIGTERM while chips are down (no new bets; the process exits 0, its clients closed
    with 1001), the same database on the same port, the players back through nginx:
    the round goes on with their chips, and balances come out exact."""
    port = cluster_script().free_port()
    front = await make_front(1, config(), "--port", str(port), store=False)
    (server,) = front.servers
    pids = ["eve", "fay"]
    formats = ["json", "msgpack"]
    players = {pid: await player(front, pid, f) for pid, f in zip(pids, formats, strict=True)}
    balances = {pid: int(c.hello_reply["balance"]) for pid, c in players.items()}
    for client in players.values():
        await client.join(TABLE)
    for client in players.values():
        await client.call("sit", table=TABLE)
    game = H.Game(TABLE, players, players["eve"])
    bets1 = {"eve": {"banker": 400}, "fay": {"player": 300}}
    log1 = await game.play_coup(bets1)
    check_payouts(log1, bets1)

    opened = await game.to_betting()
    rid = opened["data"]["round_id"]
    bets2 = {"eve": {"player": 200}, "fay": {"tie": 100}}
    for pid, areas in bets2.items():
        for area, amount in areas.items():
            await game.act(pid, "bet", area=area, amount=amount)
    assert await asyncio.to_thread(server.terminate, scaled(30)) == 0, server.log_text()
    for client in players.values():
        assert await client.wait_closed() == 1001
    await asyncio.to_thread(server.start)  # the new version, same database and port
    assert server.port == port
    for client in players.values():
        await rejoin(client)
    log2 = await finish_coup(game, rid, bets2, len(game.watcher.frames))
    check_payouts(log2, bets2)
    for pid, client in players.items():
        net = sum(
            p["returned"] - p["stake"]
            for log in (log1, log2)
            for p in log.payouts
            if p["player"] == pid
        )
        assert await client.balance() == balances[pid] + net, pid
        client.assert_clean()


class BalanceNotShared(Exception):
    """A balance is not what the rounds' results make it."""


async def known_players(tmp_path: Path, store: str, pids: list[str]) -> None:
    """Players who have played before: their accounts are in the store before the
    cluster starts (made by one process on the same store, then stopped)."""
    first = ServerProcess(
        tmp_path / "before", config(), "--store", store, "--log-level", "warning",
        env={"CHEMMY_JWT_SECRET": H.SECRET},
    )  # fmt: skip
    await asyncio.to_thread(first.start)
    try:
        for pid in pids:
            client = H.Client(first.url + "/", "json", label=pid)
            await client.open()
            await client.hello(token=make_token(H.SECRET, pid, name=pid.capitalize()))
            await client.close()
    finally:
        await asyncio.to_thread(first.stop, scaled(5))


@pytest.mark.slow
async def test_round_through_nginx_on_both_processes_then_a_drain_loses_no_bet(
    make_front: MakeFront, redis_url: str, tmp_path: Path
) -> None:
    pids = ["ann", "ben", "cat", "dan"]
    await known_players(tmp_path, redis_url, pids)
    front = await make_front(2, config())
    await front.settled([TABLE])
    players = {
        pid: await player(front, pid, fmt)
        for pid, fmt in zip(pids, ["json", "msgpack"] * 2, strict=True)
    }
    # least_conn spread them: each process holds two of the four.
    held = [metric(s.port, "chemmy_connections") for s in front.servers]
    assert held == [2, 2], held
    balances = {pid: int(c.hello_reply["balance"]) for pid, c in players.items()}
    for client in players.values():
        await client.join(TABLE)
    for client in players.values():
        await client.call("sit", table=TABLE)
    # Every player sees every seat taken, whichever process they are on.
    for client in players.values():
        for pid in pids:
            await client.wait_event("sat", lambda e, p=pid: e["data"]["player"] == p, table=TABLE)
    game = H.Game(TABLE, players, players["ann"])

    # A whole round, with players on both processes.
    bets1 = {
        "ann": {"player": 500},
        "ben": {"banker": 300},
        "cat": {"player": 200},
        "dan": {"tie": 100},
    }
    log1 = await game.play_coup(bets1)
    check_payouts(log1, bets1)

    # The next round: chips go down, and the table's owner is drained meanwhile.
    opened = await game.to_betting()
    rid = opened["data"]["round_id"]
    start = len(game.watcher.frames)
    owner = await owner_pid(front)
    (drained,) = [s for s in front.servers if s.pid == owner]
    (survivor,) = [s for s in front.servers if s.pid != owner]
    areas = {"ann": "player", "ben": "banker", "cat": "banker", "dan": "player"}
    firsts = {pid: asyncio.Event() for pid in pids}
    betting = [
        asyncio.create_task(bet_chips(players[pid], pid, areas[pid], 6, firsts[pid]))
        for pid in pids
    ]
    await asyncio.gather(*(e.wait() for e in firsts.values()))
    drained.send_signal(signal.SIGTERM)
    placed = dict(zip(pids, await asyncio.gather(*betting), strict=True))

    # The drained process left: it holds no table and takes no connection, and it
    # exits cleanly; everyone is on the survivor, which owns the table.
    await refused(drained.port)
    assert await asyncio.to_thread(drained.wait_exit, scaled(15)) == 0
    assert await owner_pid(front) == survivor.pid
    assert metric(survivor.port, "chemmy_connections") == len(pids)
    moved = [pid for pid, c in players.items() if c.conn_no > 0]
    assert moved, "nobody was on the drained process"
    for pid in moved:
        assert players[pid].close_codes[0] == 1001, (pid, players[pid].close_codes)
    status, _headers, body = await aget(front.https + "/readyz", front.nginx.tls)
    assert (status, body) == (200, b"ready\n")

    # The round goes on from the chips placed: DONE, the turns, the settlement.
    expected = {pid: {areas[pid]: amount} for pid, amount in placed.items()}
    log2 = await finish_coup(game, rid, expected, start)
    check_payouts(log2, expected)
    for client in players.values():
        client.assert_clean()

    # Money: every balance moved by exactly the two rounds' results.
    wrong = {}
    for pid, client in players.items():
        net = sum(
            p["returned"] - p["stake"]
            for log in (log1, log2)
            for p in log.payouts
            if p["player"] == pid
        )
        shown = await client.balance()
        if shown != balances[pid] + net:
            wrong[pid] = (shown, balances[pid] + net)
    if wrong:
        raise BalanceNotShared(f"balance shown, expected: {wrong}")


async def refused(port: int) -> None:
    """Wait until nothing listens on ``port`` any more."""
    async with asyncio.timeout(scaled(10)):
        while True:
            try:
                _reader, writer = await asyncio.open_connection("127.0.0.1", port)
            except OSError:
                return
            writer.close()
            await asyncio.sleep(0.05)


async def finish_coup(
    game: Any, rid: str, bets: Mapping[str, Mapping[str, int]], start: int
) -> Any:
    """The rest of a coup whose bets are down: DONE from everyone, the turns, settled."""
    for pid in game.players:
        await game.act(pid, "done")
    log = H.CoupLog(rid, 0, game.holder(), {p: dict(b) for p, b in bets.items()})
    return await game.settle(log, start)


def check_payouts(log: Any, bets: Mapping[str, Mapping[str, int]]) -> None:
    """Every bet is in the settlement, paid as GAME_RULES §3 says (the oracle)."""
    paid: dict[tuple[str, str], dict[str, int]] = {(p["player"], p["area"]): p for p in log.payouts}
    for pid, areas in bets.items():
        for area, stake in areas.items():
            payout = paid[(pid, area)]
            assert payout["stake"] == stake, (pid, area, payout)
            returned, commission = H.expected_payout(
                area, stake, log.player_cards, log.banker_cards
            )
            assert (payout["returned"], payout["commission"]) == (returned, commission)
    assert len(paid) == sum(len(a) for a in bets.values())
