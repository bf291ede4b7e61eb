"""Instructions a command costs the server, counted by callgrind (issue 36 targets 2-4).

Run from the project root: ``python -m bench.instr [--scenario lone|coup]
[--commands N] [--coups N] [--cluster N] [--clients spread|owner] [--baseline DIR]
[--keep DIR]``.

The machine's timings move by 10-30% with its load; instructions counted by
``valgrind --tool=callgrind`` do not, so a change of a few per cent to the server's
Python can be seen in one run. ``chemmy-server`` (bench/gateway.py's settings, a new
SQLite file, uvloop, ``PYTHONHASHSEED=0``, the shoes' seeds from a seeded generator)
runs under callgrind; the clients run in this process, natively, over loopback
sockets. The server starts uninstrumented (``--instr-atstart=no``: its imports at valgrind's
own pace, three times callgrind's) and is instrumented once it listens. After the warm-up
the counters are zeroed (``callgrind_control -z``), the
measured commands are sent one after the other, each waited for, and the counters are
dumped (``callgrind_control -d``): everything the server's process did meanwhile, its
store's threads included, divided by the commands.

- ``lone``: one seated player, a ``bet`` and a ``remove_bet`` alternately (bench/lone.py's
  round trip): ``--commands`` round trips after 100 of warm-up.
- ``coup``: 14 seated players and 4 spectators at one table, whole coups (every seated
  player bets and presses DONE, the turners squeeze with a bend each, turn or toss: the
  kit's :class:`~tests.kit.game.Game`, seeded): ``--coups`` coups after two of warm-up.

``--cluster N`` runs the same scenario in a cluster of N processes over a ``redis-server``
of its own (tests/kit's, a lease of :data:`LEASE`), beside the one process on SQLite, with
the players and spectators spread over the processes in turns (half of them relayed to the
table's owner with two), and prints a command's instructions in the cluster (every
process's summed) over one process's: issue 36 target 1 without the machine's noise, for
the processes' user space (not Redis's, not the kernel's).

``--clients owner`` puts every client of the table on its owner instead (the process
holding its lease), as a load balancer that routes a table's players by the table would,
and runs the processes with ``--placement players`` as deploy/ does behind one: what the
cluster costs when no command is relayed and no other process hears the table.

``--baseline DIR`` runs the same against the server package of another tree (``DIR``
holds ``server/``, ``texts/`` and ``web/``: a ``git worktree`` of main, or ``bench.gateway.archive``'s unpacking
of a revision), in the same run, and prints both. ``--keep DIR`` keeps the callgrind
files (``callgrind_annotate --inclusive=yes FILE`` shows the C functions' shares).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

#: The server's start under callgrind: the shoes' seeds made reproducible, the loop's lag
#: probe (every 0.1 s of wall time: under callgrind, ~50 times slower, it would weigh on
#: every command as it never does) put off, then chemmy-server's own main. Only
#: ``server`` is imported (the tree run may be another's).
SERVE = """
import random, sys, types
import server.croupier.settings as settings
import server.process.metrics as metrics
metrics.LAG_PROBE = 3600.0
_seeds = random.Random(36)
settings.secrets = types.SimpleNamespace(token_bytes=lambda n=32: _seeds.randbytes(n))
from server.process.main import main
sys.exit(main(sys.argv[1:]))
"""
SEATED = 14
SPECTATORS = 4
#: A cluster's lease under callgrind (seconds): renewed every third of it, which at
#: callgrind's pace would weigh on the commands as it never does at the machine's (60: the
#: longest the server takes).
LEASE = 60.0
LISTENING = re.compile(r"listening on (ws://\S+)")


class Counted:
    """chemmy-server under callgrind, started from ``tree`` on a new SQLite file, or in
    the cluster over ``store`` (a Redis URL), with a lease of :data:`LEASE`."""

    def __init__(
        self, tree: Path, home: Path, store: str | None = None, placement: str = "hash"
    ) -> None:
        from bench.gateway import SERVER_CONFIG

        home.mkdir(parents=True, exist_ok=True)
        (home / "chemmy.toml").write_text(SERVER_CONFIG)
        self.out = home / "callgrind.out"
        command = [
            "valgrind",
            "--tool=callgrind",
            "--instr-atstart=no",  # (the start, imports and all, at valgrind's own pace)
            f"--callgrind-out-file={self.out}",
            sys.executable,
            "-c",
            SERVE,
            "--host",
            "127.0.0.1",
            "--port",
            "0",
            *(["--store", store, "--lease", str(LEASE)] if store else []),
            # (hash is the default: a baseline from before the option takes no flag)
            *(["--placement", placement] if store and placement != "hash" else []),
            *([] if store else ["--db", str(home / "chemmy.sqlite3")]),
            "--config",
            str(home / "chemmy.toml"),
            "--log-format",
            "text",
        ]
        env = {**os.environ, "PYTHONHASHSEED": "0", "PYTHONPATH": str(tree)}
        self.log = (home / "server.log").open("w+")
        self.proc = subprocess.Popen(
            command, cwd=tree, env=env, stdout=self.log, stderr=subprocess.STDOUT
        )
        self.url = ""

    def wait_listening(self, limit: float = 600.0) -> str:
        deadline = time.monotonic() + limit
        while time.monotonic() < deadline:
            self.log.seek(0)
            found = LISTENING.search(self.log.read())
            if found:
                self.url = found.group(1)
                return self.url
            if self.proc.poll() is not None:
                break
            time.sleep(0.5)
        self.log.seek(0)
        raise SystemExit(f"the server under callgrind did not start:\n{self.log.read()[-3000:]}")

    def control(self, flag: str) -> None:
        subprocess.run(
            ["callgrind_control", flag, str(self.proc.pid)], check=True, capture_output=True
        )

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(300)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()

    def dumped(self) -> tuple[Path, int]:
        """The file of the dump made after the measured commands, and its instructions."""
        dumps = sorted(self.out.parent.glob(self.out.name + ".*"), key=lambda p: p.stat().st_mtime)
        if not dumps:
            raise SystemExit("callgrind wrote no dump")
        first = dumps[0]
        for line in first.read_text().splitlines():
            if line.startswith("summary:") or line.startswith("totals:"):
                return first, int(line.split()[1])
        raise SystemExit(f"no totals in {first}")


async def _lone(
    urls: list[str], commands: int, between: Callable[[str], None], settle: float = 0.0
) -> int:
    from bench.gateway import bet_and_remove, seated_bot

    bot = await seated_bot(urls[0])
    call = bet_and_remove(bot)
    for _ in range(100):
        await call()
    await asyncio.sleep(settle)
    between("-z")
    for _ in range(commands):
        await call()
    between("-d")
    await bot.close()
    return commands


async def _coup(
    urls: list[str], coups: int, between: Callable[[str], None], settle: float = 0.0
) -> int:
    from bench.gateway import SECRET, TABLE
    from tests.kit.client import Client, open_player
    from tests.kit.game import Game

    sent = [0]
    send = Client.send_command

    async def counted(self: Client, *args: Any, **kwargs: Any) -> tuple[Any, int]:
        sent[0] += 1
        return await send(self, *args, **kwargs)

    Client.send_command = counted  # type: ignore[method-assign]
    try:
        seated: dict[str, Client] = {}
        for n in range(1, SEATED + 1):
            pid = f"p{n:02d}"
            seated[pid] = await open_player(urls[n % len(urls)], pid, secret=SECRET)
            await seated[pid].join(TABLE)
            await seated[pid].call("sit", table=TABLE)
        watchers = [
            await open_player(urls[n % len(urls)], f"w{n}", secret=SECRET)
            for n in range(SPECTATORS)
        ]
        for watcher in watchers:
            await watcher.join(TABLE)
        game = Game(TABLE, seated, watchers[0], rng=random.Random(1), progress=True)
        areas = ("player", "banker", "player", "banker", "tie")

        def bets(coup: int) -> dict[str, dict[str, int]]:
            return {pid: {areas[(i + coup) % len(areas)]: 100} for i, pid in enumerate(seated)}

        async def play(count: int, first: int) -> None:
            for coup in range(first, first + count):
                await game.play_coup(bets(coup))

        await play(2, 0)
        await asyncio.sleep(settle)
        between("-z")
        before = sent[0]
        await play(coups, 2)
        made = sent[0] - before
        between("-d")
        for client in [*seated.values(), *watchers]:
            await client.close()
    finally:
        Client.send_command = send  # type: ignore[method-assign]
    return made


SCENARIOS: dict[str, Callable[[list[str], int, Callable[[str], None], float], Awaitable[int]]] = {
    "lone": _lone,
    "coup": _coup,
}


def count(
    tree: Path,
    home: Path,
    scenario: str,
    amount: int,
    processes: int = 1,
    clients: str = "spread",
) -> tuple[int, int, list[Path]]:
    """(instructions, commands, the dumps' files) of one run against ``tree``: one
    process on SQLite, or ``processes`` over a Redis of their own (every process's
    instructions summed; the players and spectators spread over them in turns, or with
    ``clients="owner"`` all on the table's owner)."""
    redis_server = None
    servers: list[Counted] = []
    try:
        if processes > 1:
            from tests.kit.redis import RedisServer

            redis_server = RedisServer(home / "redis")
            redis_server.start()
            store = redis_server.url()
            for n in range(processes):  # (one by one: those started are stopped below)
                # (routed by table, the shipped shape places by players: deploy/)
                placement = "players" if clients == "owner" else "hash"
                servers.append(Counted(tree, home / f"node{n}", store, placement))
        else:
            servers.append(Counted(tree, home))
        urls = [server.wait_listening() for server in servers]
        for server in servers:
            server.control("--instr=on")
        if redis_server is not None:
            owner = _owned(redis_server.port, len(servers))
            if clients == "owner":
                urls = [
                    url
                    for server, url in zip(servers, urls, strict=True)
                    if server.proc.pid == owner
                ]
                if not urls:
                    raise SystemExit(f"the table's lease names pid {owner}, none of the cluster's")

        def between(flag: str) -> None:
            for server in servers:
                server.control(flag)

        # Every client on the owner placing by players: its table's steps go out for
        # HOLD seconds after it took the table (server.bus.audience), then only as heard.
        from server.bus.audience import HOLD

        settle = HOLD if redis_server is not None and clients == "owner" else 0.0
        made = asyncio.run(SCENARIOS[scenario](urls, amount, between, settle))
    finally:
        for server in servers:
            server.stop()
        if redis_server is not None:
            redis_server.stop()
    dumps = [server.dumped() for server in servers]
    return sum(n for _, n in dumps), made, [dump for dump, _ in dumps]


def _owned(port: int, members: int, limit: float = 600.0) -> int:
    """Wait until the cluster's processes are all members and the table has an owner;
    the owner's pid (a process's name on the bus is ``<host>-<pid>-<hex>``)."""
    import redis

    from bench._util import node_pid
    from bench.gateway import TABLE
    from server.croupier.cluster import lease_key

    client = redis.Redis(port=port)
    deadline = time.monotonic() + limit
    try:
        while time.monotonic() < deadline:
            owner = client.get(lease_key(TABLE))
            if client.zcard("chemmy:nodes") == members and owner:
                time.sleep(2.0)  # (the other process learns the owner)
                return node_pid(owner)
            time.sleep(0.5)
    finally:
        client.close()
    raise SystemExit("the cluster under callgrind took no lease of the table")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scenario", choices=sorted(SCENARIOS), default="lone")
    parser.add_argument("--commands", type=int, default=400, help="lone: round trips counted")
    parser.add_argument("--coups", type=int, default=3, help="coup: coups counted")
    parser.add_argument(
        "--baseline", type=Path, help="a tree holding server/, texts/, web/ to compare with"
    )
    parser.add_argument("--keep", type=Path, help="keep the callgrind files in this folder")
    parser.add_argument(
        "--cluster",
        type=int,
        default=0,
        metavar="N",
        help="also a cluster of N processes over a Redis of their own (every process's "
        "instructions summed), beside the one process on SQLite",
    )
    parser.add_argument(
        "--clients",
        choices=("spread", "owner"),
        default="spread",
        help="in a cluster, the clients spread over the processes in turns, or all on the "
        "table's owner",
    )
    args = parser.parse_args(argv)
    if shutil.which("valgrind") is None or shutil.which("callgrind_control") is None:
        print("bench.instr needs valgrind (callgrind and callgrind_control)", file=sys.stderr)
        return 2
    # The kit's waits, 60 times as long (callgrind is about 50 times slower), on top of
    # any factor already set.
    factor = float(os.environ.get("CHEMMY_TESTS_TIMEOUT_FACTOR", "1"))
    os.environ["CHEMMY_TESTS_TIMEOUT_FACTOR"] = str(60 * factor)
    amount = args.commands if args.scenario == "lone" else args.coups
    here = Path(__file__).resolve().parent.parent
    trees = [("this tree", here)]
    if args.baseline is not None:
        trees.insert(0, ("baseline", args.baseline.resolve()))
    shapes = [1] + ([args.cluster] if args.cluster > 1 else [])
    rows = []
    with tempfile.TemporaryDirectory(prefix="chemmy-bench-instr-") as tmp:
        for n, (name, tree) in enumerate(trees):
            for processes in shapes:
                home = Path(tmp) / f"run{n}-{processes}"
                instructions, made, dumps = count(
                    tree, home, args.scenario, amount, processes, args.clients
                )
                if args.keep is not None:
                    args.keep.mkdir(parents=True, exist_ok=True)
                    for k, dump in enumerate(dumps):
                        shutil.copy(
                            dump, args.keep / f"callgrind.{args.scenario}.{n}.{processes}.{k}.out"
                        )
                rows.append((name, tree, processes, instructions, made))
    cluster = f" --cluster {args.cluster}" if args.cluster > 1 else ""
    cluster += " --clients owner" if args.cluster > 1 and args.clients == "owner" else ""
    print(
        f"`python -m bench.instr --scenario {args.scenario} "
        + (f"--commands {amount}" if args.scenario == "lone" else f"--coups {amount}")
        + f"{cluster}`"
    )
    print()
    print("| tree | processes | commands | instructions | per command | ratio |")
    print("|---|---|---|---|---|---|")
    first = rows[0][3] / max(rows[0][4], 1)
    where = ", every client on the owner" if args.clients == "owner" else ""
    for name, tree, processes, instructions, made in rows:
        per = instructions / max(made, 1)
        shape = "1 (SQLite)" if processes == 1 else f"{processes} (Redis{where})"
        print(
            f"| {name} ({tree}) | {shape} | {made} | {instructions:,} | {per:,.0f} "
            f"| {per / first:.3f} |"
        )
    if len(shapes) > 1:
        print()
        for name, tree, processes, instructions, made in rows:
            if processes > 1:
                one = next(r for r in rows if r[1] == tree and r[2] == 1)
                ratio = (instructions / max(made, 1)) / (one[3] / max(one[4], 1))
                print(
                    f"{name}: a command in a cluster of {processes}{where} / on one process: "
                    f"{ratio:.3f}"
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
