"""Instructions a command costs the server, counted by callgrind (issue 36 targets 2-4).

Run from the project root: ``python -m bench.instr [--scenario lone|coup]
[--commands N] [--coups N] [--baseline DIR] [--keep DIR]``.

The machine's timings move by 10-30% with its load; instructions counted by
``valgrind --tool=callgrind`` do not, so a change of a few per cent to the server's
Python can be seen in one run. ``chemmy-server`` (bench/gateway.py's settings, a new
SQLite file, uvloop, ``PYTHONHASHSEED=0``, the shoes' seeds from a seeded generator)
runs under callgrind; the clients run in this process, natively, over loopback
sockets. After the warm-up the counters are zeroed (``callgrind_control -z``), the
measured commands are sent one after the other, each waited for, and the counters are
dumped (``callgrind_control -d``): everything the server's process did meanwhile, its
store's threads included, divided by the commands.

- ``lone``: one seated player, a ``bet`` and a ``remove_bet`` alternately (bench/lone.py's
  round trip): ``--commands`` round trips after 100 of warm-up.
- ``coup``: 14 seated players and 4 spectators at one table, whole coups (every seated
  player bets and presses DONE, the turners squeeze with a bend each, turn or toss: the
  kit's :class:`~tests.kit.game.Game`, seeded): ``--coups`` coups after two of warm-up.

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
LISTENING = re.compile(r"listening on (ws://\S+)")


class Counted:
    """chemmy-server under callgrind, started from ``tree`` on a new SQLite file."""

    def __init__(self, tree: Path, home: Path) -> None:
        from bench.gateway import SERVER_CONFIG

        home.mkdir(parents=True, exist_ok=True)
        (home / "chemmy.toml").write_text(SERVER_CONFIG)
        self.out = home / "callgrind.out"
        command = [
            "valgrind",
            "--tool=callgrind",
            f"--callgrind-out-file={self.out}",
            sys.executable,
            "-c",
            SERVE,
            "--host",
            "127.0.0.1",
            "--port",
            "0",
            "--db",
            str(home / "chemmy.sqlite3"),
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


async def _lone(url: str, commands: int, between: Callable[[str], None]) -> int:
    from bench.gateway import bet_and_remove, seated_bot

    bot = await seated_bot(url)
    call = bet_and_remove(bot)
    for _ in range(100):
        await call()
    between("-z")
    for _ in range(commands):
        await call()
    between("-d")
    await bot.close()
    return commands


async def _coup(url: str, coups: int, between: Callable[[str], None]) -> int:
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
            seated[pid] = await open_player(url, pid, secret=SECRET)
            await seated[pid].join(TABLE)
            await seated[pid].call("sit", table=TABLE)
        watchers = [await open_player(url, f"w{n}", secret=SECRET) for n in range(SPECTATORS)]
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


SCENARIOS: dict[str, Callable[[str, int, Callable[[str], None]], Awaitable[int]]] = {
    "lone": _lone,
    "coup": _coup,
}


def count(tree: Path, home: Path, scenario: str, amount: int) -> tuple[int, int, Path]:
    """(instructions, commands, the dump's file) of one run against ``tree``."""
    server = Counted(tree, home)
    try:
        url = server.wait_listening()
        made = asyncio.run(SCENARIOS[scenario](url, amount, server.control))
    finally:
        server.stop()
    dump, instructions = server.dumped()
    return instructions, made, dump


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scenario", choices=sorted(SCENARIOS), default="lone")
    parser.add_argument("--commands", type=int, default=400, help="lone: round trips counted")
    parser.add_argument("--coups", type=int, default=3, help="coup: coups counted")
    parser.add_argument(
        "--baseline", type=Path, help="a tree holding server/, texts/, web/ to compare with"
    )
    parser.add_argument("--keep", type=Path, help="keep the callgrind files in this folder")
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
    rows = []
    with tempfile.TemporaryDirectory(prefix="chemmy-bench-instr-") as tmp:
        for n, (name, tree) in enumerate(trees):
            instructions, made, dump = count(tree, Path(tmp) / f"run{n}", args.scenario, amount)
            if args.keep is not None:
                args.keep.mkdir(parents=True, exist_ok=True)
                shutil.copy(dump, args.keep / f"callgrind.{args.scenario}.{n}.out")
            rows.append((name, tree, instructions, made))
    print(
        f"`python -m bench.instr --scenario {args.scenario} "
        + (f"--commands {amount}`" if args.scenario == "lone" else f"--coups {amount}`")
    )
    print()
    print("| tree | commands | instructions | per command | ratio |")
    print("|---|---|---|---|---|")
    first = rows[0][2] / max(rows[0][3], 1)
    for name, tree, instructions, made in rows:
        per = instructions / max(made, 1)
        print(f"| {name} ({tree}) | {made} | {instructions:,} | {per:,.0f} | {per / first:.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
