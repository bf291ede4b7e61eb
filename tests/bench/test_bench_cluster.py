"""bench/cluster.py without servers: the taps that time and count frames, and the report
with its verdicts, rendered from results made up here (a report that breaks after a long
run loses the run)."""

from __future__ import annotations

import argparse
import asyncio
import json

from bench import cluster
from bench.gateway import FanOut, _seq_of


def event(seq: int, kind: str) -> str:
    frame = {"type": "event", "table": "t000", "seq": seq, "kind": kind, "data": {}}
    return json.dumps(frame, separators=(",", ":"))


def test_seq_of_reads_events_only() -> None:
    assert _seq_of(event(42, "bets")) == 42
    assert _seq_of(event(7, "bets").encode()) == 7
    assert _seq_of('{"type":"ok","id":3,"seq":9}') is None


async def test_arrivals_times_each_event_and_wakes_its_waiter() -> None:
    tap = cluster.Arrivals()
    waiting = asyncio.create_task(tap.wait(5))
    await asyncio.sleep(0)
    assert tap('{"type":"ok","id":1,"seq":5}') is False  # a reply goes on to the client
    assert tap(event(5, "bets")) is True
    assert await waiting == tap.at[5]
    assert await tap.wait(5) == tap.at[5]  # already in


async def test_a_bot_counts_coups_and_hears_betting_open() -> None:
    bot = cluster.Bot("ws://127.0.0.1:1", "bot-t000", "t000")
    assert not bot.opened.is_set()
    assert bot._tap(event(1, "betting_opened")) is True
    assert bot.opened.is_set()
    bot.recording = True
    for seq, kind in ((2, "bets"), (3, "settled"), (4, "settled")):
        assert bot._tap(event(seq, kind)) is True
    assert bot.settled == 2
    assert [seq for seq, _ in bot.seqs] == [2, 3, 4]
    assert bot._tap('{"type":"ok","id":9,"seq":4}') is False


def run(label: str, processes: int, coups: int, servers: list[float]) -> cluster.Throughput:
    seconds = 20.0
    cpu = {"servers": sum(servers), "Redis": 2.0, "bots": 3.0, "bench": 0.1, "machine": 38.0}
    cpu.update({f"server {i}": c for i, c in enumerate(servers)})
    lag = {"chemmy_bus_lag_seconds_count": 10.0, "chemmy_bus_lag_seconds_sum": 1.5}
    lag['chemmy_bus_lag_seconds_bucket{le="0.1"}'] = 5.0
    return cluster.Throughput(
        label=label,
        processes=processes,
        store="Redis",
        placement="bots spread evenly" if processes == 3 else "one",
        tables=100,
        bots=100,
        seconds=seconds,
        coups=coups,
        bets=coups,
        errors={"timeout": 3} if processes == 3 else {},
        cpu=cpu,
        per_server=servers,
        metrics=lag if processes == 3 else {},
    )


def latency(added_ms: float) -> dict[str, dict[str, float]]:
    base = {"p50": 1.0, "p99": 2.0, "n": 100}
    out = {key: dict(base) for key, *_ in cluster.LATENCY_ROWS}
    for key in ("A->B", "A->C", "C->B", "C->C"):
        out[key] = {"p50": 1.0 + added_ms, "p99": 2.0 + added_ms, "n": 100}
    out["pubsub"] = {"p50": 0.1, "p99": 0.3, "n": 100}
    return out


def results(added_ms: float, three_coups: int, worst: float) -> dict[str, object]:
    ramp = [
        (
            FanOut(n, n, 10, 10 * n, 5.0, p99, 0.002, 126, 1.0, 100_000),
            FanOut(n, n, 10, 10 * n, 4.0, p99 * 2, 0.001, 126, 1.0, 60_000),
        )
        for n, p99 in ((500, 20.0), (1000, 60.0), (2000, 150.0))
    ]
    return {
        "latency": latency(added_ms),
        "throughput": [
            run("one process", 1, 2000, [19.0]),
            run("three processes", 3, three_coups, [10.0, 11.0, 9.0]),
        ],
        "failover": [cluster.Trial(worst - 0.5 * i, 2.5, 10, 11) for i in range(3)],
        "connections": ramp,
        "elapsed": 100.0,
        "command": "python -m bench.cluster",
        "redis_version": "7.0.15",
        "load": "The load average was low.",
    }


def test_the_report_says_met_when_the_figures_meet_the_targets() -> None:
    text = cluster.report(argparse.Namespace(), results(0.4, 5200, 3.5))
    assert text.startswith(cluster.SECTION + "\n")
    targets = text.split("### Against the targets", 1)[1]
    assert "**missed**" not in targets
    assert "+0.400 ms" in targets
    assert f"2.60{cluster.X}" in targets  # 5,200 / 2,000 coups
    assert "at most 3.50 s over 3 trials" in targets
    assert "1,000 against 500" in targets  # p99 < 100 ms: three up to 1,000, one to 500
    assert text.count("\n| 1 | ") == 1 and "\n| 3 | " in text  # a row per trial
    assert "mean 150 ms; 50% under 100 ms" in text  # the bus lag of the three


def test_the_report_says_missed_when_they_do_not() -> None:
    text = cluster.report(argparse.Namespace(), results(1.2, 2600, 4.2))
    targets = text.split("### Against the targets", 1)[1]
    assert targets.count("**missed**") == 3
    assert f"1.30{cluster.X}" in targets
    assert "timeout 3" in text  # the bots' errors are shown
