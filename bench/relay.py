"""CPU of one relayed command on the Redis bus, both processes' bus side (issue 36).

Run from the project root: ``python -m bench.relay [--commands N] [--rounds R]``; for a
baseline, the same from another revision's tree (``git archive REV | tar -x -C DIR``,
then ``cd DIR && python -m bench.relay``), in turns with this one.

Two :class:`~server.bus.redis.RedisBus` in this process, on a ``redis-server`` of their
own, play a gateway and an owner: the gateway submits a ``bet`` for a table the other
owns (relayed over Redis), the owner publishes a step's event for it (which the gateway
hears: a client of its watches the table) and replies (after that step). The next
command goes once the reply is handed on. Printed: this process's CPU (user + system)
per relayed command, each round apart; no table, no store, no socket to a client: the
bus's own part of what a command relayed between two processes costs.
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import sys
import tempfile
from pathlib import Path

from server.bus.redis import RedisBus
from server.protocol.records import Address, CommandRecord, ReplyRecord
from server.vocabulary.events import Event
from tests.kit.redis import RedisServer, redis_available


def cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def nothing_stored(table: str, seq: int) -> list[Event] | None:
    return []


async def measure(url: str, commands: int, rounds: int) -> list[float]:
    owners = {"t1": "owner"}

    async def owner_of(table: str) -> str | None:
        return owners.get(table)

    owner = RedisBus(url, node="owner", events_after=nothing_stored, owner_of=owner_of)
    gateway = RedisBus(url, node="gateway", events_after=nothing_stored, owner_of=owner_of)
    await owner.start()
    await gateway.start()
    seq = 0

    def step(record: CommandRecord) -> None:
        nonlocal seq
        seq += 1
        data = {"player": record.player, "area": "tie", "amount": 100, "chips": [100] * 20}
        owner.publish("t1", [Event(seq, "bet", data)])
        assert record.reply_to is not None
        owner.reply(ReplyRecord.ok(record.reply_to, seq=seq, duplicate=False))

    owner.serve("t1", step)
    replies: list[ReplyRecord] = []
    heard: list[Event] = []
    gateway.on_replies(replies.append)
    gateway.subscribe("t1", lambda table, events: heard.extend(events))
    await gateway.watch("t1")
    out = []
    try:
        for r in range(rounds):
            replies.clear()
            start = cpu()
            for i in range(commands):
                fields = {"area": "tie", "amount": 100}
                to = Address("gateway", 1, i)
                gateway.submit(CommandRecord("t1", "bet", "ann", f"{r}-{i}", fields, to))
                while len(replies) <= i:
                    await asyncio.sleep(0)
            out.append((cpu() - start) / commands)
    finally:
        await gateway.close()
        await owner.close()
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commands", type=int, default=2000, help="relayed commands a round")
    parser.add_argument("--rounds", type=int, default=3, help="rounds, each printed")
    args = parser.parse_args()
    if not redis_available():
        print("redis-server is not installed", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory(prefix="chemmy-relay-") as tmp:
        server = RedisServer(Path(tmp) / "redis")
        server.start()
        try:
            rounds = asyncio.run(measure(server.url(), args.commands, args.rounds))
        finally:
            server.stop()
    each = ", ".join(f"{x * 1e6:.0f}" for x in rounds)
    print(f"CPU per relayed command (the bus's side in both processes): {each} µs")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
