"""Benchmark of the seamless wallet (docs/wallet.md §3): how long a coup waits for the
operator's wallet to take its wagers, next to the wallet's own latency.

Run from the project root: ``python -m bench.wallet [--players 14] [--coups 30]
[--latency 0.02] [--wallet-nagle both] [--baseline REV] [--write]``.

- A real ``chemmy-server`` subprocess (the test kit's launcher) with ``--wallet
  seamless --no-guest``, on SQLite, against the reference operator wallet
  (``python -m examples.wallet``, a subprocess too: tests/wallet/wallet_helpers.py), at
  one table in EUR with ``--players`` seats taken (14, the most a table has). Players
  hold JWT tokens with a ``currency: "EUR"`` claim. The table's betting timer is an hour
  (betting closes when everyone has pressed DONE); its other timers are zero (the
  croupier declines the shoe, cuts and turns the cards at once).
- Each coup: every player bets (100 on Player or Banker, in turn by seat) and presses
  DONE, all at once; the last DONE closes betting, the table enters ``debiting`` and
  the croupier debits every player's wagers over HTTP, in parallel; when every debit
  has answered, the table deals (``betting_closed`` and ``dealt``, one step). The figure
  is the time from the ``debiting`` event to the ``betting_closed`` event (and to
  ``dealt``), as a spectator receives them: a stopwatch, a client in a process of its
  own that times each frame as it reads it (one clock), so that the players' traffic in
  the bench's process never delays its reading.
- The wallet measured from this process in the same run, before each coup: its latency
  (three signed ``balance`` calls one after another, each on a new connection, call to
  answer), and the bare baseline: as many signed debits as there are players (for the
  bench's own accounts) sent at once, each on a connection kept alive between coups as
  Chemmy's pool keeps them, until the last answer (the reference wallet applies one
  call at a time, so this is more than one call's latency).
- Coups alternate between the wallet's ``--latency`` (its ``/_control/faults``
  ``latency``, added to every answer) and 0, so that other load on the machine falls on
  both alike. The target: at most the wallet's latency + 50 ms (the debits run in
  parallel: 14 debits one after another would take 14 times the latency).
- ``--wallet-nagle``: the reference wallet as it is (``off``: ``TCP_NODELAY`` on its
  sockets), as it was before (``on``: Nagle's algorithm on, which makes an answer on a
  kept-alive connection wait for the caller's delayed ACK, and a listen backlog of 5;
  started through :data:`NAGLE_ON`), or one after the other (``both``, the default). Its SQLite file is
  on tmpfs (/dev/shm) when there is one; Chemmy's is on disk.
- ``--baseline REV``: also the internal wallet's command round trips (``ping``,
  ``balance``, ``bet`` / ``remove_bet``) against the server of git revision ``REV``,
  measured in turns (bench/gateway.py's (a), on SQLite, with a bare ``websockets`` echo
  next to them): the seamless work must not have slowed the internal mode down.

``--write`` puts the results in docs/benchmarks.md, section "## Seamless wallet
(bench/wallet.py)" (every other section is kept); ``--json PATH`` writes the figures.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import multiprocessing as mp
import os
import shlex
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import httpx

from bench import gateway
from bench._util import load_line, loadavg, machine, percentile, write_benchmarks
from server.process.auth import make_token
from server.wallet.calls import session_fields
from server.wallet.signing import HEADER, signature_header
from tests.kit.client import Client, Frame
from tests.kit.launch import ServerProcess
from tests.kit.tables import server_toml
from tests.wallet.wallet_helpers import ReferenceWallet

COMMAND = "python -m bench.wallet"
SECTION = "## Seamless wallet (bench/wallet.py)"
SECRET = gateway.SECRET
WALLET_SECRET = "bench-wallet-secret-" + "0123456789abcdef" * 2
TABLE = "w1"
CURRENCY = "EUR"
BET = 100  # 1.00 EUR, the table's minimum
#: Betting stays open until every player has pressed DONE; the croupier does the rest.
TIMERS = {
    "betting": 3600,
    "squeeze": 0,
    "third_card": 0,
    "shoe_offer": 0,
    "cut": 0,
    "grace": 3600,
}
SETTINGS: dict[str, Any] = {
    "jwt_secret": SECRET,
    "wallet_secret": WALLET_SECRET,
    "rate_limit": 1_000_000.0,
    "rate_burst": 1_000_000,
    "queue_size": 8192,
    "log_level": "warning",
}
TARGET_MS = 50.0  # added to the wallet's latency at most
BALANCE_CALLS = 3  # signed balance calls to the wallet before each coup
WARMUP = 2  # coups per latency not counted (connections opened, first balances read)
X = "\N{MULTIPLICATION SIGN}"


def config(seats: int) -> str:
    table = {
        "id": TABLE,
        "name": "Bench EUR",
        "tier": "1-100",
        "currency": CURRENCY,
        "seats": seats,
        "timers": TIMERS,
    }
    return server_toml([table], **SETTINGS)


@dataclass
class Coup:
    round_id: str
    latency: float  # the wallet's configured latency, seconds
    end: int  # the watcher's frame index after the coup's settlement
    debited: int  # players in the debiting event
    dealt_to: int  # players whose wagers stood (betting_closed)
    to_closed: float = 0.0  # debiting -> betting_closed, s, at the stopwatch (filled in later)
    to_dealt: float = 0.0  # debiting -> dealt


@dataclass
class Phase:
    """What was measured at one wallet latency."""

    latency: float
    nodelay: bool  # the wallet with Nagle's algorithm off
    overflows: int = 0  # listen-queue drops on the machine over the wallet's run (all phases)
    coups: list[Coup] = field(default_factory=list)
    wallet: list[float] = field(default_factory=list)  # signed balance round trips, s
    bare: list[float] = field(default_factory=list)  # N debits at once from the bench, s

    def stats(self) -> dict[str, Any]:
        closed = [c.to_closed for c in self.coups]
        dealt = [c.to_dealt for c in self.coups]
        out: dict[str, Any] = {
            "latency_ms": self.latency * 1e3,
            "nodelay": self.nodelay,
            "listen_overflows": self.overflows,
            "coups": len(self.coups),
            "debits": sum(c.debited for c in self.coups),
            "stood": sum(c.dealt_to for c in self.coups),
            "wallet_calls": len(self.wallet),
        }
        for name, values in (
            ("closed", closed),
            ("dealt", dealt),
            ("wallet", self.wallet),
            ("bare", self.bare),
        ):
            out[f"{name}_p50_ms"] = percentile(values, 50) * 1e3
            out[f"{name}_p99_ms"] = percentile(values, 99) * 1e3
        out["met"] = within(out, "wallet")
        out["met_bare"] = within(out, "bare")
        return out


def within(st: dict[str, Any], base: str) -> bool:
    """The debits' window at most ``base``'s + :data:`TARGET_MS`, at p50 and at p99."""
    return bool(
        st["closed_p50_ms"] <= st[f"{base}_p50_ms"] + TARGET_MS
        and st["closed_p99_ms"] <= st[f"{base}_p99_ms"] + TARGET_MS
    )


# ====================================================================== the wallet
#: The reference wallet as it was before it turned Nagle's algorithm off on its
#: connections (``TCP_NODELAY``) and raised its listen backlog from 5: its code
#: otherwise unchanged, started through this, to show what those two settings are worth.
NAGLE_ON = (
    "import runpy; import examples.wallet.service as service; "
    "service.WalletHandler.disable_nagle_algorithm = False; "
    "service.WalletServer.request_queue_size = 5; "
    "runpy.run_module('examples.wallet', run_name='__main__', alter_sys=True)"
)
#: Where the wallet keeps its SQLite file: memory if the machine has a tmpfs there (the
#: reference wallet commits each call, one at a time, and a shared disk's fsyncs are not
#: what is measured here; Chemmy's own database is on disk, in a temp dir).
MEMORY = Path("/dev/shm")


#: ``--wallet-nagle``: which wallets the coups are played against, in turn.
VARIANTS = {"on": (False,), "off": (True,), "both": (False, True)}
WALLETS = {
    False: "with Nagle's algorithm on and a backlog of 5 (the wallet before its fix)",
    True: "as it is (TCP_NODELAY, a backlog of 128)",
}
SHORT = {False: "with Nagle on", True: "as it is"}


class BenchWallet(ReferenceWallet):
    """The reference wallet (tests/wallet/wallet_helpers.py), as it is or as it was
    (:data:`NAGLE_ON`)."""

    def __init__(self, home: Path, *, nodelay: bool) -> None:
        self.nodelay = nodelay
        super().__init__(home, WALLET_SECRET, start_balance=10_000_000)

    def _command(self, port: int) -> list[str]:
        command = super()._command(port)
        if not self.nodelay:
            at = command.index("-m")
            command[at : at + 2] = ["-c", NAGLE_ON]
        return command


def sign(key: bytes, path: str, body: dict[str, Any]) -> tuple[bytes, dict[str, str]]:
    data = json.dumps(body, separators=(",", ":"), sort_keys=True).encode()
    headers = {
        "Content-Type": "application/json",
        HEADER: signature_header(key, time.time(), "POST", path, data),
    }
    return data, headers


class WalletProbe:
    """The wallet measured from this process, and its control API (without blocking the
    event loop).

    :meth:`balance`: one signed call, on a new connection. (Calls back to back on one
    kept-alive connection to the reference wallet wait some 40 ms each for a delayed
    ACK: ``http.server`` writes an answer's headers and its body apart, Nagle's
    algorithm on. A new connection on loopback adds a fraction of a millisecond.)

    :meth:`debits`: ``n`` signed debits at once, each on a connection of its own kept
    alive from one coup to the next, as Chemmy's pool has them; the time until the
    last answer. The bench's own players (``bare-NN``), not the table's."""

    def __init__(self, url: str, secret: str, n: int) -> None:
        self.url = url
        self.key = secret.encode()
        self.http = httpx.AsyncClient(
            timeout=10.0, limits=httpx.Limits(max_keepalive_connections=0)
        )
        self.kept = [httpx.AsyncClient(timeout=10.0) for _ in range(n)]
        self.n = 0
        self.batches = 0

    async def _post(self, http: httpx.AsyncClient, endpoint: str, body: dict[str, Any]) -> None:
        data, headers = sign(self.key, f"/{endpoint}", body)
        answer = await http.post(f"{self.url}/{endpoint}", content=data, headers=headers)
        if answer.status_code != 200 or answer.json().get("status") != "ok":
            raise RuntimeError(f"the wallet's {endpoint}: {answer.status_code} {answer.text}")

    def _request_id(self) -> str:
        self.n += 1
        return f"bench-{self.n}"

    async def balance(self, player: str) -> float:
        """One signed ``balance`` call; its round trip, seconds."""
        body = {"request_id": self._request_id(), "player": player, "currency": CURRENCY}
        body |= session_fields(None, "chemmy")
        t0 = time.perf_counter()
        await self._post(self.http, "balance", body)
        return time.perf_counter() - t0

    async def open(self) -> None:
        """Each kept connection opened, one at a time (the reference wallet listens with
        a backlog of 5: more connections at once would wait for SYNs sent again)."""
        for i, http in enumerate(self.kept, 1):
            body = {"request_id": self._request_id(), "player": f"bare-{i:02d}"}
            body |= session_fields(None, "chemmy")
            await self._post(http, "balance", {**body, "currency": CURRENCY})

    async def debits(self) -> float:
        """One debit per kept connection, all at once; seconds until the last answer."""
        self.batches += 1
        rid = f"bench-{self.batches}"

        def body(i: int) -> dict[str, Any]:
            pid = f"bare-{i:02d}"
            return {
                "request_id": self._request_id(),
                "transaction_id": f"{rid}:{pid}:debit",
                "player": pid,
                "currency": CURRENCY,
                "amount": BET,
                "round_id": rid,
                "table": "bench",
                "bets": [{"area": "player", "amount": BET}],
                **session_fields(None, "chemmy"),  # (what every call carries)
            }

        t0 = time.perf_counter()
        await asyncio.gather(
            *(self._post(http, "debit", body(i)) for i, http in enumerate(self.kept, 1))
        )
        return time.perf_counter() - t0

    async def latency(self, seconds: float) -> None:
        answer = await self.http.post(
            f"{self.url}/_control/faults", json={"latency": seconds, "rules": []}
        )
        answer.raise_for_status()

    async def close(self) -> None:
        for http in (self.http, *self.kept):
            await http.aclose()


# ====================================================================== the table
def player_ids(count: int) -> list[str]:
    return [f"p{i:02d}" for i in range(1, count + 1)]


async def connect(url: str, pid: str) -> Client:
    client = Client(url, label=pid, timeout=60)
    await client.open()
    token = make_token(SECRET, pid, ttl=24 * 3600, currency=CURRENCY)
    await client.hello(token=token)
    await client.join(TABLE)
    return client


async def seat(url: str, count: int) -> tuple[dict[str, Client], Client]:
    """``count`` players seated at :data:`TABLE` (seats 1..count), and a spectator."""
    watcher = await connect(url, "watcher")
    players: dict[str, Client] = {}
    for number, pid in enumerate(player_ids(count), start=1):
        players[pid] = await connect(url, pid)
        await players[pid].call("sit", table=TABLE, seat=number)
    return players, watcher


#: The events the stopwatch times, by round.
TIMED = ("debiting", "betting_closed", "dealt")


def stopwatch_main(url: str, pipe: Connection) -> None:
    asyncio.run(_stopwatch(url, pipe))


async def _stopwatch(url: str, pipe: Connection) -> None:
    """A spectator with nothing else to do: the time each :data:`TIMED` event reaches it
    (``time.monotonic()`` as its frame is read, before anything else is done with it),
    by round; answers ``collect`` with them all."""
    stamps: dict[str, dict[str, float]] = {}

    def tap(raw: str | bytes) -> bool:
        at = time.monotonic()
        text = raw.decode() if isinstance(raw, bytes) else raw
        if '"type":"event"' not in text[:40]:
            return False  # a reply: on to the client
        msg = json.loads(text)
        if msg.get("kind") in TIMED:
            stamps.setdefault(msg["data"]["round_id"], {})[msg["kind"]] = at
        return True

    client = Client(url, label="stopwatch", timeout=60, tap=tap)
    await client.open()
    await client.hello(token=make_token(SECRET, "stopwatch", ttl=24 * 3600, currency=CURRENCY))
    await client.join(TABLE)
    pipe.send("ready")
    loop = asyncio.get_running_loop()
    while await loop.run_in_executor(None, pipe.recv) == "collect":
        pipe.send(stamps)
    await client.close()


class Stopwatch:
    """:func:`_stopwatch` in a process of its own (spawned), so that the bench's players
    and their replies never delay its reading of a frame."""

    def __init__(self, url: str) -> None:
        ctx = mp.get_context("spawn")
        self.pipe, child = ctx.Pipe()
        self.proc = ctx.Process(target=stopwatch_main, args=(url, child), daemon=True)
        self.proc.start()

    async def _recv(self) -> Any:
        loop = asyncio.get_running_loop()
        if not await loop.run_in_executor(None, self.pipe.poll, 60):
            raise RuntimeError("the stopwatch did not answer")
        return self.pipe.recv()

    async def ready(self) -> None:
        if await self._recv() != "ready":
            raise RuntimeError("the stopwatch did not join")

    async def collect(self) -> dict[str, dict[str, float]]:
        self.pipe.send("collect")
        stamps: dict[str, dict[str, float]] = await self._recv()
        return stamps

    def close(self) -> None:
        if self.proc.is_alive():
            with contextlib.suppress(OSError):
                self.pipe.send("exit")
            self.proc.join(10)
        if self.proc.is_alive():
            self.proc.kill()


def listen_overflows() -> int:
    """The machine's count of connections dropped at a full listen queue (Linux
    ``/proc/net/netstat``, TcpExt ListenOverflows; -1 if it cannot be read)."""
    try:
        lines = Path("/proc/net/netstat").read_text().splitlines()
    except OSError:
        return -1
    for names, values in zip(lines[::2], lines[1::2], strict=False):
        if names.startswith("TcpExt:"):
            table = dict(zip(names.split()[1:], values.split()[1:], strict=False))
            return int(table.get("ListenOverflows", -1))
    return -1


def time_coups(phases: Sequence[Phase], stamps: dict[str, dict[str, float]]) -> None:
    """Each coup's window, from the stopwatch's times of its events."""
    for phase in phases:
        for coup in phase.coups:
            got = stamps.get(coup.round_id, {})
            if set(got) != set(TIMED):
                raise RuntimeError(f"the stopwatch missed events of {coup.round_id}: {got}")
            coup.to_closed = got["betting_closed"] - got["debiting"]
            coup.to_dealt = got["dealt"] - got["debiting"]


def is_event(kind: str, rid: str | None = None) -> Any:
    def match(m: dict[str, Any]) -> bool:
        return (
            m.get("type") == "event"
            and m.get("table") == TABLE
            and m.get("kind") == kind
            and (rid is None or m.get("data", {}).get("round_id") == rid)
        )

    return match


async def play(players: dict[str, Client], watcher: Client, start: int, latency: float) -> Coup:
    """One coup from the watcher's frame ``start`` on (after the last coup's
    settlement): wait for betting, everyone bets and presses DONE at once, then wait
    for the debits, the deal and the settlement (the stopwatch times them)."""
    opened = await watcher.next_frame(is_event("betting_opened"), start=start, what="betting")
    rid = opened.msg["data"]["round_id"]

    async def bet_and_done(number: int, client: Client) -> None:
        area = "player" if number % 2 else "banker"
        await client.call("bet", table=TABLE, area=area, amount=BET)
        await client.call("done", table=TABLE)

    await asyncio.gather(*(bet_and_done(n, c) for n, c in enumerate(players.values(), 1)))
    wait = watcher.next_frame
    debiting: Frame = await wait(is_event("debiting", rid), start=opened.index, what="debiting")
    closed = await wait(is_event("betting_closed", rid), start=debiting.index, what="closed")
    settled = await wait(is_event("settled", rid), start=closed.index, what="settled")
    return Coup(
        round_id=rid,
        latency=latency,
        end=settled.index + 1,
        debited=len(debiting.msg["data"]["players"]),
        dealt_to=len(closed.msg["data"]["bets"]),
    )


async def seamless(
    tmp: Path, players: int, coups: int, latencies: Sequence[float], nodelay: bool
) -> list[Phase]:
    """The coups against one wallet (:class:`BenchWallet`), alternating between
    ``latencies`` (``coups`` each, after :data:`WARMUP` each)."""
    memory = MEMORY.is_dir() and os.access(MEMORY, os.W_OK)
    home = Path(tempfile.mkdtemp(prefix="chemmy-bench-wallet-", dir=MEMORY if memory else tmp))
    wallet = BenchWallet(home, nodelay=nodelay)
    try:
        wallet.start()
    except BaseException:
        shutil.rmtree(home, ignore_errors=True)
        raise
    server = ServerProcess(
        tmp / "chemmy",
        config(max(players, 1)),
        "--log-format",
        "text",
        "--wallet",
        "seamless",
        "--wallet-url",
        wallet.url,
        "--no-guest",
    )
    probe = WalletProbe(wallet.url, WALLET_SECRET, players)
    phases = [Phase(latency, nodelay) for latency in latencies]
    clients: list[Client] = []
    stopwatch: Stopwatch | None = None
    overflows = listen_overflows()
    try:
        server.start()
        await probe.open()
        seated, watcher = await seat(server.url, players)
        clients = [watcher, *seated.values()]
        stopwatch = Stopwatch(server.url)
        await stopwatch.ready()
        start = 0
        for round_no in range(WARMUP + coups):
            for phase in phases:
                await probe.latency(phase.latency)
                trips = [await probe.balance("p01") for _ in range(BALANCE_CALLS)]
                bare = await probe.debits()
                coup = await play(seated, watcher, start, phase.latency)
                start = coup.end
                if round_no >= WARMUP:
                    phase.wallet += trips
                    phase.bare.append(bare)
                    phase.coups.append(coup)
            if round_no >= WARMUP:
                print(
                    f"  coup {round_no - WARMUP + 1}/{coups}: " + describe(phases), file=sys.stderr
                )
        await asyncio.sleep(0.5)  # the last events reach the stopwatch too
        time_coups(phases, await stopwatch.collect())
        for phase in phases:
            phase.overflows = listen_overflows() - overflows
        for phase in phases:
            st = phase.stats()
            print(
                f"  {st['latency_ms']:g} ms: debiting -> betting_closed p50 "
                f"{st['closed_p50_ms']:.1f} / p99 {st['closed_p99_ms']:.1f} ms",
                file=sys.stderr,
            )
        problems = [p for c in clients for p in c.problems]
        if problems:
            raise RuntimeError(f"protocol problems: {problems[:3]}")
    finally:
        if stopwatch is not None:
            stopwatch.close()
        for client in clients:
            await client.close()
        await probe.close()
        server.stop()
        wallet.close()
        shutil.rmtree(home, ignore_errors=True)
    return phases


def describe(phases: Sequence[Phase]) -> str:
    return ", ".join(
        f"{p.latency * 1e3:g} ms: wallet {percentile(p.wallet[-BALANCE_CALLS:], 50) * 1e3:.1f}"
        f" ms, bare {p.bare[-1] * 1e3:.1f} ms"
        for p in phases
        if p.coups
    )


# ====================================================================== report
def verdict(ok: bool) -> str:
    return "**met**" if ok else "**missed**"


def report(args: argparse.Namespace, results: dict[str, Any]) -> str:
    players, phases = results["players"], results["phases"]
    lines = [
        SECTION,
        "",
        f"Made by `{results['command']}` on {time.strftime('%Y-%m-%d')} "
        f"({results['elapsed']:.0f} s).",
        f"Machine: {machine()}. {results['load']}",
        "",
        f"### Betting closed to the cards: {players} players' debits, in parallel",
        "",
        "`chemmy-server --wallet seamless --no-guest` (SQLite) against the reference "
        "wallet (`python -m examples.wallet`), both subprocesses; one table in EUR with "
        f'{players} seated players (tokens with `currency: "EUR"`), each betting '
        f"{BET / 100:.2f} EUR every coup and pressing DONE, all at once. The last DONE closes "
        "betting: the table enters `debiting` and the croupier sends every player's debit "
        "at once; once all have answered, the table deals (`betting_closed` and `dealt` "
        "come from one step). Timed: the `debiting` event to the `betting_closed` (and "
        "`dealt`) event, as a spectator receives them (a client in a process of its own, "
        "each frame timed as it is read). Measured at the wallet "
        "from the bench process, in the same run, before each coup: its latency, "
        f"{BALANCE_CALLS} signed `balance` calls one after another (each on a new "
        "connection), call to answer; and the bare baseline, the same number of signed "
        f"debits ({players}, for the bench's own accounts) sent at once, each on a "
        "connection of its own kept alive between coups (as Chemmy's pool keeps them), "
        "until the last answer. Coups alternate between the wallet's latencies (its "
        "`/_control/faults` `latency`, added to every answer), "
        f"{results['coups']} counted at each, after {WARMUP} each not counted.",
        "",
        "| reference wallet | latency set | coups (debits) | wallet: one `balance` p50 / p99 | wallet: "
        f"{players} debits at once (bare) p50 / p99 | chemmy: debiting → betting_closed "
        "p50 / p99 | chemmy: debiting → dealt p50 / p99 | chemmy over the bare debits p50 / "
        "p99 |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for st in phases:
        lines.append(
            f"| {SHORT[st['nodelay']]} | {st['latency_ms']:g} ms | {st['coups']} ({st['debits']}) "
            f"| {st['wallet_p50_ms']:.1f} / {st['wallet_p99_ms']:.1f} ms "
            f"| {st['bare_p50_ms']:.1f} / {st['bare_p99_ms']:.1f} ms "
            f"| {st['closed_p50_ms']:.1f} / {st['closed_p99_ms']:.1f} ms "
            f"| {st['dealt_p50_ms']:.1f} / {st['dealt_p99_ms']:.1f} ms "
            f"| {st['closed_p50_ms'] - st['bare_p50_ms']:+.1f} / "
            f"{st['closed_p99_ms'] - st['bare_p99_ms']:+.1f} ms |"
        )
    lines += ["", "### Against the targets", ""]
    for st in phases:
        serial = (
            f" (one after another, {players} debits would take at least "
            f"{players * st['latency_ms']:.0f} ms)"
            if st["latency_ms"]
            else ""
        )
        lines.append(
            f"- Wallet {SHORT[st['nodelay']]}, at {st['latency_ms']:g} ms: betting closed to the cards within the "
            f"wallet's latency + {TARGET_MS:.0f} ms: {verdict(st['met'])}: p50 "
            f"{st['closed_p50_ms']:.1f} ms against {st['wallet_p50_ms']:.1f} + "
            f"{TARGET_MS:.0f} ms, p99 {st['closed_p99_ms']:.1f} ms against "
            f"{st['wallet_p99_ms']:.1f} + {TARGET_MS:.0f} ms{serial}. Within the wallet's "
            f"own answer to {players} debits at once + {TARGET_MS:.0f} ms: "
            f"{verdict(st['met_bare'])} (p50 {st['bare_p50_ms']:.1f}, p99 "
            f"{st['bare_p99_ms']:.1f} ms)."
        )
    rt = results.get("internal")
    if rt is not None:
        lines += internal_lines(results["baseline"], rt)
    lines += [
        "",
        "### Notes",
        "",
        "- Betting closed to the cards is the croupier's work around the wallet's answers: "
        "the step that closes betting is stored and sent (the `debiting` event), every "
        "debit is stored (pending) before it is sent, the debits go out together over one "
        "pool of kept-alive connections, each answer is stored, then the `Debited` step "
        "deals and is stored and sent (`betting_closed`, `dealt`).",
        "- The wallet's database is on tmpfs (/dev/shm) when the machine has one: it "
        "commits each call, one at a time, and this machine's shared disk is not what is "
        "measured; Chemmy's is on disk.",
        "- The reference wallet applies one call at a time (one lock, one SQLite "
        "transaction per call, rollback journal): debits sent at once are answered one "
        "after another at the wallet, so its answer to "
        f"{players} of them (the bare column) is well above one call's latency whoever "
        "sends them. That column, measured the same way as Chemmy's debits travel, is "
        "the wallet's share of the window; the last column is Chemmy's.",
        "- This benchmark found two settings of the reference wallet that cost a coup "
        "more than Chemmy does; both are fixed in examples/wallet/service.py, and the "
        '"with Nagle on" rows show the wallet as it was (bench/wallet.py\'s `NAGLE_ON` '
        "wrapper). `http.server` writes an answer's headers and its body apart: with "
        "Nagle's algorithm on, the body on a kept-alive connection waits for the caller's "
        "delayed ACK, some 40 ms (Chemmy keeps its connections to the wallet alive: one "
        "pool for debits, credits and balances); `TCP_NODELAY`, the usual setting of an "
        "HTTP server, removes it. And a listen backlog of 5 (`socketserver`'s "
        "`request_queue_size`) drops connections opened together beyond it (Chemmy's "
        "pool at the first coup, or while kept connections carry credits); their SYN is "
        "sent again a second later (Linux's first retransmission timeout): a coup near "
        "1 s is one of those. An operator's own wallet should be set up the same way. "
        "Connections dropped at a full listen queue on the machine during each wallet's "
        "run (warm-up included; `/proc/net/netstat` ListenOverflows): "
        + ", ".join(
            f"{SHORT[st['nodelay']]} {st['listen_overflows']}"
            for st in phases
            if st["latency_ms"] == phases[0]["latency_ms"]
        )
        + ".",
        "- `betting_closed` and `dealt` are one step's events, sent together: the two "
        "columns differ by the reading of one frame.",
        f"- p99 is nearest-rank: with {results['coups']} coups a latency, "
        + ("the slowest of them." if results["coups"] < 100 else "the 99th percentile."),
        "- Credits of the previous coup (sent by the courier after its settlement) may "
        "still be on their way to the wallet when the next coup's debits go out, as on "
        "a live table.",
    ]
    return "\n".join(lines) + "\n"


def internal_lines(baseline: str, rt: dict[str, Any]) -> list[str]:
    noise = gateway.NOISE
    lines = [
        "",
        f"### The internal wallet's round trips against {baseline}",
        "",
        f"bench/gateway.py's (a), run by this command: one client, {rt['count']:,} sequential "
        f"requests of each kind to chemmy (`--wallet internal`, SQLite) and to the server of "
        f"revision {baseline} (before the seamless wallet; SQLite), in turns of "
        f"{gateway.RUN}, with a bare `websockets` echo as in bench/gateway.py.",
        "",
        f"| request | now p50 / p99 | {baseline} p50 / p99 | p50 now ÷ {baseline} | bare echo p50 |",
        "|---|---|---|---|---|",
    ]
    worse = []
    for name, key, echo in (
        ("`ping`", "ping", "echo_ping"),
        ("`balance`", "balance", "echo_ping"),
        ("`bet` / `remove_bet`", "table", "echo_bet"),
    ):
        now, base = rt[key], rt[f"base_{key}"]
        ratio = now["p50"] / base["p50"]
        if ratio > 1 + noise:
            worse.append(name)
        lines.append(
            f"| {name} | {now['p50']:.3f} / {now['p99']:.3f} ms | {base['p50']:.3f} / "
            f"{base['p99']:.3f} ms | {ratio:.2f}{X} | {rt[echo]['p50']:.3f} ms |"
        )
    bet = rt["table"]["p50"] / rt["base_table"]["p50"]
    lines += [
        "",
        f"- The internal mode's `bet` round trip no worse than {baseline}'s beyond the noise "
        f"(±{noise:.0%}): {'**met**' if bet <= 1 + noise else '**missed**'} "
        f"({bet:.2f}{X} at p50)"
        + (f"; beyond it: {', '.join(worse)}." if worse else "; nor `ping`, `balance`."),
    ]
    return lines


# ====================================================================== main
async def run(args: argparse.Namespace) -> dict[str, Any]:
    latencies = [args.latency] + ([0.0] if args.latency else [])
    with tempfile.TemporaryDirectory(prefix="chemmy-bench-wallet-") as tmp_name:
        tmp = Path(tmp_name)
        print(
            f"seamless: {args.players} players, {args.coups} coups at {latencies} s",
            file=sys.stderr,
        )
        phases: list[Phase] = []
        for number, nodelay in enumerate(VARIANTS[args.wallet_nagle]):
            print(f"  the wallet {WALLETS[nodelay]}:", file=sys.stderr)
            (tmp / f"run{number}").mkdir()
            phases += await seamless(
                tmp / f"run{number}", args.players, args.coups, latencies, nodelay
            )
        results: dict[str, Any] = {
            "players": args.players,
            "coups": args.coups,
            "phases": [phase.stats() for phase in phases],
            "samples": [[asdict(c) for c in phase.coups] for phase in phases],
        }
        if args.baseline:
            print(f"internal round trips against {args.baseline} ...", file=sys.stderr)
            (tmp / "rt").mkdir()
            results["baseline"] = args.baseline
            results["internal"] = await gateway.round_trips(
                tmp / "rt", args.requests, None, args.baseline
            )
    return results


def shown_command(argv: Sequence[str]) -> str:
    """The command line as the docs show it: without ``--json PATH`` (where this run's
    figures went, nothing to do with them)."""
    shown: list[str] = []
    skip = False
    for arg in argv:
        if skip:
            skip = False
        elif arg == "--json":
            skip = True
        elif not arg.startswith("--json="):
            shown.append(arg)
    return " ".join([COMMAND, shlex.join(shown)]).strip()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--players", type=int, default=14, help="seated players (default 14)")
    parser.add_argument("--coups", type=int, default=30, help="coups per latency (default 30)")
    parser.add_argument(
        "--latency", type=float, default=0.02, help="the wallet's latency, s (default 0.02)"
    )
    parser.add_argument(
        "--baseline",
        metavar="REV",
        help="also the internal mode's round trips against the server of this git revision",
    )
    parser.add_argument(
        "--requests", type=int, default=3000, help="round trips per kind with --baseline"
    )
    parser.add_argument(
        "--wallet-nagle",
        choices=sorted(VARIANTS),
        default="both",
        help="the reference wallet as it is (off: TCP_NODELAY on its sockets), as it was "
        "(on: Nagle's algorithm on, a backlog of 5), or one after the other (both, the default)",
    )
    parser.add_argument("--json", metavar="PATH", help="write the figures as JSON")
    parser.add_argument(
        "--write", action="store_true", help="write the section to docs/benchmarks.md"
    )
    args = parser.parse_args(argv)
    if not 1 <= args.players <= 14:
        parser.error("--players: 1 to 14 (the seats of a table)")
    t0 = time.perf_counter()
    load = loadavg()
    results = asyncio.run(run(args))
    results["elapsed"] = time.perf_counter() - t0
    results["load"] = load_line(load)
    results["command"] = shown_command(argv if argv is not None else sys.argv[1:])
    text = report(args, results)
    print(text)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    if args.write:
        write_benchmarks(SECTION, text)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    sys.exit(main())
