"""bench/evening.py, run for real at a tiny size (2 tables, 3 bots each at the top, 2
spectators, two levels, a few seconds, at 5 times human pace) so that it cannot rot:
the report's shape, every figure present, the audit run on the books the stopped server
left; and, without servers, its histogram, its spread of spectators and its docs
section."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import asdict
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from bench import evening
from server.process.metrics import COMMAND_BUCKETS
from tests.kit import run_bench
from tests.kit.redis import RedisServer


@pytest.mark.slow
def test_a_tiny_evening_measures_a_level_and_audits_the_books(tmp_path: Path) -> None:
    done, results = run_bench(
        "evening",
        *("--tables", "2", "--seated", "3", "--spectators", "2", "--levels", "3,6"),
        # A window of 3 s at 5 times human pace: two coups or so a level, commands and
        # events enough for every figure (2 s left one level with 8 commands).
        *("--window", "3", "--warmup", "0.5", "--pace", "5", "--bot-workers", "1"),
        *("--spectator-workers", "1", "--keep-going", "--late-watch", "0.5"),
        out=tmp_path / "evening.json",
    )
    assert results["mode"] == "sqlite"
    first, level = results["levels"]  # the second adds to the first's players
    assert (first["seated"], first["spectators"]) == (3, 1)
    assert (level["seated"], level["spectators"]) == (6, 2)
    assert (level["new_bots"], level["new_spectators"]) == (3, 1)
    assert level["rtt"]["all"]["n"] > 0 and level["rtt"]["all"]["p99"] > 0
    assert level["fanout"]["expected"] > 0
    # Every seated bot's events are timed too: each bot's commands reach all six.
    seated = level["fanout_seated"]
    assert seated["expected"] >= 6 * level["fanout"]["events"] // 2 > 0
    assert seated["delivered"] == seated["expected"] and seated["p99"] > 0
    assert level["commits"] > 0  # counted in the server process (bench/_commits.py)
    assert level["cpu"]["servers"] >= 0 and level["cpu"]["bots"] >= 0
    assert level["rss_kib"] > 0
    assert results["audit"]["exact"] is True and results["audit"]["entries"] > 0
    base = results["baselines"]["broadcast"]
    # as many listeners as the last level that kept every promise had spectators (a
    # busy machine may break one at this size: the p99s are the machine's)
    kept = [lv for lv in results["levels"] if lv["kept"]] or results["levels"]
    assert base["listeners"] == kept[-1]["spectators"] and base["events"] > 0
    text = done.stdout
    assert text.startswith("### One process on SQLite\n")
    assert "| seated | spectators | coups |" in text
    assert "Money audit after the servers stopped: **exact**" in text
    assert "Pace 5" in text  # a test run says it is not human pace
    assert "bare `websockets.broadcast`" in text
    # the same ratio counting the seated players' deliveries of the same events too
    ref = kept[-1]  # (the level the baseline was fed as)
    every = ref["fanout"]["delivered"] + ref["fanout_seated"]["delivered"]
    assert f"counting the seated players' deliveries of the same events too ({every:,}" in text
    # the server's own loop, from its /metrics: probes ran, and the p99 is a bucket's bound
    assert level["server_lag_p99_ms"] in {
        1.0,
        2.5,
        5.0,
        10.0,
        25.0,
        50.0,
        100.0,
        250.0,
        500.0,
        1000.0,
    }
    assert "The servers' own event loop at each level" in text
    # the server's own time for the table commands (chemmy_command_seconds), beside the
    # bots' round trip: commands were timed, their p50 / p99 are the buckets' bounds
    own = level["server_command"]
    bounds = {round(b * 1e3) for b in COMMAND_BUCKETS}
    assert own["n"] > 0 and own["mean"] > 0 and own["p50"] <= own["p99"]
    assert {round(own["p50"]), round(own["p99"])} <= bounds
    assert "The servers' own time for a table command at each level" in text
    assert "command p50 / p99 (the server's own)" in text
    assert sum(st["n"] for st in level["server_command_kinds"].values()) == own["n"]
    # ... and its own part of the fan-out (chemmy_fanout_wait_seconds, a sample of writes)
    fan = level["server_fanout"]
    assert fan["n"] > 0 and fan["p50"] <= fan["p99"] and {round(fan["p99"])} <= bounds
    assert "Their own part of the fan-out (`chemmy_fanout_wait_seconds`" in text


@pytest.mark.slow
def test_a_tiny_evening_with_bettors_without_a_seat(tmp_path: Path) -> None:
    """``--bettors``: bettors without a seat at the first table (issue 37), bots in the
    bot process at (5 times) human pace: they join without sitting and bet, the table
    takes their bets, every event reaches them, and the books are exact. ``--clients
    mixed``: half the bettors and spectators light clients (bench/_light.py), half the
    test kit's, each kind's round trips and fan-out reported apart."""
    done, results = run_bench(
        "evening",
        # Eight bettors, four light: the seated bots' DONE may close a betting round
        # before a bettor's first bet, and a loaded run saw two light ones place none.
        *("--tables", "1", "--seated", "2", "--bettors", "8", "--spectators", "2"),
        *("--levels", "2", "--window", "7", "--warmup", "0.5", "--pace", "5"),
        *("--bot-workers", "1", "--spectator-workers", "2", "--keep-going"),
        *("--no-baselines", "--pin", "--clients", "mixed", "--late-watch", "0.5"),
        out=tmp_path / "evening.json",
    )
    [level] = results["levels"]
    assert (level["seated"], level["bettors"], level["new_bettors"]) == (2, 8, 8)
    assert level["bettor_bets"] > 0  # the table took their bets
    # probe bettors by default with --bettors, apart from the eight (below: their test)
    assert results["probes"] == level["probes"]["players"] == evening.PROBES
    # The table's fan-out reaches its ten players, seated and betting alike.
    seated = level["fanout_seated"]
    assert seated["expected"] >= 10 * level["fanout"]["events"] // 2 > 0
    assert seated["delivered"] == seated["expected"]
    assert results["audit"]["exact"] is True and results["audit"]["rounds"] > 0
    assert "Bettors without a seat at the first table" in done.stdout
    # both kinds of client bet and watched, and were measured apart
    assert level["rtt"]["bet (light)"]["n"] > 0 and level["rtt"]["bet (full)"]["n"] > 0
    for kind in ("light", "full"):
        fan = level["by_client"][kind]
        assert fan["delivered"] == fan["expected"] > 0, kind
    assert "Light clients against full ones in the same run" in done.stdout
    # As the kernel received them (bench/_light.py's SO_TIMESTAMPNS): every light
    # bettor's round trip and every light spectator's receipt stamped, each stamp after
    # its send and no later than its handler's time, so no p99 above the handlers'.
    rk, fk = level["rtt_kernel"], level["fanout_kernel"]
    light_rtts = sum(st["n"] for kind, st in level["rtt"].items() if kind.endswith(" (light)"))
    assert rk["n"] == light_rtts > 0
    assert fk["n"] == level["by_client"]["light"]["delivered"] > 0
    for figures in (rk, fk):
        assert figures["after_handler"] == figures["before_send"] == 0
        assert 0 < figures["p50"] <= figures["p99"]
    assert rk["p99"] <= rk["app_p99"] and fk["p99"] <= level["by_client"]["light"]["p99"]
    assert "As the clients' kernel received them" in done.stdout
    assert "as the kernel received them: the light bettors' command p50/p99" in done.stderr
    # --pin: the server on one CPU, the clients on the other(s); the report says so
    assert results["pinned"].startswith("pinned: the server on CPU ")
    assert "the probes' process at " in results["pinned"]  # (first on the clients' CPU)
    assert f"**CPUs {results['pinned']}.**" in done.stdout


@pytest.mark.slow
def test_probe_bettors_are_timed_apart_in_a_process_of_their_own(tmp_path: Path) -> None:
    """``--probes``: a few bettors without a seat at the same table and pace as the
    crowd, in a process of their own (issue 37 §3: a player's device holds one
    connection, not hundreds): their round trips and the fan-out they received, by their
    handlers and as their kernel received them, reported apart, and the crowd's figures
    without them."""
    done, results = run_bench(
        "evening",
        *("--tables", "1", "--seated", "2", "--bettors", "6", "--spectators", "2"),
        *("--levels", "2", "--window", "5", "--warmup", "0.5", "--pace", "5", "--probes", "4"),
        *("--bot-workers", "1", "--spectator-workers", "1", "--keep-going"),
        *("--no-baselines", "--late-watch", "0.5"),
        out=tmp_path / "evening.json",
    )
    [level] = results["levels"]
    probes = level["probes"]
    assert results["probes"] == probes["players"] == 4
    # from a process of their own, as that process said: not the crowd's bot process
    assert len(probes["pids"]) == 1 and len(probes["crowd_pids"]) == 1
    assert probes["pids"][0] not in probes["crowd_pids"]
    assert probes["bets"] > 0 and probes["no_reply"] == probes["dropped"] == 0
    rk, fan, fk = probes["rtt"], probes["fanout"], probes["fanout_kernel"]
    assert rk["n"] == sum(st["n"] for st in probes["rtt_kinds"].values()) > 0
    assert probes["rtt_kinds"]["bet"]["n"] > 0
    # every event of a command sent in the window reached the four, each stamped by the
    # kernel after its send and no later than its handler's time
    assert fan["delivered"] == fan["expected"] == fk["n"] > 0
    assert fan["expected"] >= 4 * level["fanout"]["events"]
    for figures in (rk, fk):
        assert figures["after_handler"] == figures["before_send"] == 0
        assert 0 < figures["p50"] <= figures["p99"]
    assert rk["p99"] <= rk["app_p99"] and fk["p99"] <= fan["p99"]
    # the crowd's figures are the crowd's: the table's fan-out to its eight players
    # (seated and betting, the probes not among them) for the crowd's commands only
    seated = level["fanout_seated"]
    assert 0 < seated["expected"] <= 8 * level["fanout"]["events"]
    assert "The probe bettors (`--probes`)" in done.stdout
    assert "the probes' command p50 / p99, as their kernel received it" in done.stdout
    assert "the probes (4 bettors in a process of their own): command p50/p99" in done.stderr


#: A child with a thread made before a line read and another after (the pin's and the
#: nice's tests: a setting must reach both).
THREADS = (
    "import threading, time, sys\n"
    "threading.Thread(target=time.sleep, args=(30,), daemon=True).start()\n"
    "print('ready', flush=True); sys.stdin.readline()\n"
    "t = threading.Thread(target=time.sleep, args=(30,), daemon=True); t.start()\n"
    "print('again', flush=True); sys.stdin.readline()\n"
)


@contextlib.contextmanager
def threads_set(setting: Callable[[int], object]) -> Iterator[list[int]]:
    """The threads of a live child of :data:`THREADS` after ``setting`` (given its pid)
    was made between its first thread and its second."""
    with subprocess.Popen(
        [sys.executable, "-c", THREADS], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    ) as child:
        try:
            assert child.stdout is not None and child.stdin is not None
            assert child.stdout.readline() == "ready\n"
            assert setting(child.pid) is not False
            child.stdin.write("\n")
            child.stdin.flush()
            assert child.stdout.readline() == "again\n"
            yield [int(task.name) for task in Path(f"/proc/{child.pid}/task").iterdir()]
        finally:
            child.kill()


def test_pin_puts_every_thread_of_a_process_on_the_cpus_given() -> None:
    """``--pin``'s :func:`bench.evening.pin`: each thread of a process (a server's store
    thread as much as its loop), and the threads it makes later."""
    cpus = sorted(os.sched_getaffinity(0))
    with threads_set(lambda pid: evening.pin([pid], {cpus[-1]})) as tasks:
        assert len(tasks) == 3  # the main thread, one before the pinning, one after
        for task in tasks:
            assert os.sched_getaffinity(task) == {cpus[-1]}, task


def test_favour_sets_every_thread_of_a_process_at_the_nice_given() -> None:
    """``--pin``'s :func:`bench.evening.favour` (the probes' process): each of its threads,
    the threads it makes later inheriting it. A nice above ours, which anyone may set."""
    nice = min(19, os.getpriority(os.PRIO_PROCESS, 0) + 3)
    with threads_set(lambda pid: evening.favour([pid], nice) is True) as tasks:
        assert len(tasks) == 3
        for task in tasks:
            assert os.getpriority(os.PRIO_PROCESS, task) == nice, task


def test_pin_gives_the_server_its_cpu_at_a_higher_priority(monkeypatch: pytest.MonkeyPatch) -> None:
    """``--pin``: the servers on a CPU of their own at :data:`bench.evening.SERVER_NICE`
    (their CPU against the machine's other work too), the clients on the others with the
    probes' process at :data:`bench.evening.PROBES_NICE`; the report says so."""
    pinned: list[tuple[list[int], set[int]]] = []
    favoured: list[tuple[list[int], int]] = []
    monkeypatch.setattr(evening.os, "sched_getaffinity", lambda _pid: {0, 1})
    monkeypatch.setattr(evening, "pin", lambda pids, cpus: pinned.append((list(pids), cpus)))
    monkeypatch.setattr(
        evening,
        "favour",
        lambda pids, nice=evening.PROBES_NICE: favoured.append((list(pids), nice)) or True,
    )
    servers = SimpleNamespace(pids=lambda: [11], redis_pid=lambda: None)
    bench = SimpleNamespace(
        bots=SimpleNamespace(pids=[21]),
        probes=SimpleNamespace(pids=[31]),
        specs=SimpleNamespace(pids=[41]),
    )
    said = evening.pin_apart(servers, bench)  # type: ignore[arg-type]
    assert pinned == [([11], {0}), ([21, 31, 41, os.getpid()], {1})]
    assert favoured == [([11], evening.SERVER_NICE), ([31], evening.PROBES_NICE)]
    assert evening.SERVER_NICE < 0
    assert said.startswith(f"pinned: the server on CPU 0 at nice {evening.SERVER_NICE} ")


def test_the_histogram_reads_percentiles_within_one_percent() -> None:
    hist = evening.Histogram()
    for ms in range(1, 101):
        hist.add(ms / 1e3)
    other = evening.Histogram()
    other.add(0.5)
    hist.merge(other)
    assert hist.n == 101
    assert 50 <= hist.percentile_ms(50) <= 51 * 1.01
    assert 500 <= hist.percentile_ms(100) <= 505.1


def test_a_histograms_p99_is_the_bucket_it_falls_in() -> None:
    name = "chemmy_loop_lag_seconds"
    grown = {f"{name}_count": 200.0, f'{name}_bucket{{le="0.001"}}': 150.0}
    grown |= {f'{name}_bucket{{le="0.0025"}}': 197.0, f'{name}_bucket{{le="0.005"}}': 198.0}
    grown |= {f'{name}_bucket{{le="0.01"}}': 200.0}  # 99% of 200 = 198: within 5 ms
    assert evening.bucket_p99(lambda k: grown.get(k, 0.0), name) == 0.005
    assert evening.bucket_p99(lambda k: 0.0, name) == 0.0  # no probe ran
    past = {f"{name}_count": 10.0}  # every sample past the last finite bound
    assert evening.bucket_p99(lambda k: past.get(k, 0.0), name) == 1.0


def test_the_servers_command_time_is_summed_over_kinds_and_the_window() -> None:
    name = "chemmy_command_seconds"

    def scrape(bet: float, sit: float, fast: float, total: float) -> dict[str, float]:
        """Two kinds' samples, ``fast`` of the ``bet`` + ``sit`` within 5 ms."""
        return {
            f'{name}_count{{kind="bet"}}': bet,
            f'{name}_count{{kind="sit"}}': sit,
            f'{name}_sum{{kind="bet"}}': total,
            f'{name}_bucket{{kind="bet",le="0.005"}}': fast,
            f'{name}_bucket{{kind="bet",le="0.05"}}': bet,
            f'{name}_bucket{{kind="sit",le="0.05"}}': sit,
            'chemmy_commands_total{type="bet"}': 1e6,  # another family: not read
        }

    own = evening.server_command_ms(scrape(10, 0, 10, 0.05), scrape(110, 100, 120, 2.15))
    # over the window: 200 commands, 110 within 5 ms, all within 50 ms, 2.1 s in all
    assert own == {"p50": 5.0, "p99": 50.0, "mean": 10.5, "n": 200.0}
    assert evening.server_command_ms({}, {})["n"] == 0
    kinds = evening.server_command_kinds(scrape(10, 0, 10, 0.05), scrape(110, 100, 120, 2.15))
    assert kinds["sit"] == {"p50": 50.0, "p99": 50.0, "mean": 0.0, "n": 100.0}
    assert kinds["bet"]["n"] == 100 and kinds["bet"]["mean"] == 21.0


def test_spectators_crowd_a_few_featured_tables() -> None:
    counts = evening.spectator_plan(1000, 120)
    assert sum(counts) == 1000
    assert counts[:2] == [350, 350]  # two featured tables (one in 60) share 70%
    assert max(counts[2:]) - min(counts[2:]) <= 1 and counts[2] == 300 // 118 + 1
    assert evening.spectator_plan(3, 1) == [3]


def results(mode: str) -> dict[str, object]:
    level = {
        "seated": 100,
        "spectators": 50,
        "coups": 20.0,
        "seconds": 10.0,
        "commits": 400.0,
        "redis_evalsha": 420,
        "cpu": {"servers": 5.0, "bots": 1.0, "spectators": 1.0, "Redis": 1.0},
        "rtt": {"all": {"p50": 1.0, "p99": 10.0, "n": 500}},
        "fanout": {"p50": 2.0, "p99": 20.0, "delivered": 900, "expected": 900},
        "no_reply": 0,
        "on_behalf": 0,
        "bot_lag_p99_ms": 3.0,
        "spectator_lag_p99_ms": 4.0,
        "rss_kib": 100_000,
        "rss_bots_kib": 2000,
        "rss_spectators_kib": 500,
        "new_bots": 100,
        "new_spectators": 50,
        "frame": 200.0,
        "kept": True,
        "broken": [],
    }
    if mode == "sqlite":
        del level["cpu"]["Redis"]  # type: ignore[attr-defined]
    return {
        "mode": mode,
        "levels": [level],
        "baselines": {},
        "audit": {"exact": True, "entries": 10, "sum": 0, "rounds": 2, "held_at_stop": 0},
        "base_rss_kib": 90_000,
        "command": "python -m bench.evening",
        "date": "2026-12-01",
        "elapsed": 60.0,
        "machine": "a machine",
        "load": "Load average: low.",
        "tables": 10,
        "seated": 10,
        "spectators": 50,
        "warmup": 1.0,
        "window": 10.0,
        "processes": 3,
        "bot_workers": 1,
        "spectator_workers": 1,
    }


def test_a_level_with_no_audience_is_judged_on_its_seated_fan_out() -> None:
    level = dict(results("sqlite")["levels"][0])  # type: ignore[index]
    del level["kept"]  # a property of a Level
    level.update(spectators=0, fanout={"p50": 0.0, "p99": 0.0, "delivered": 0, "expected": 0})
    fast = {"p50": 2.0, "p99": 20.0, "delivered": 500, "expected": 500}
    more = {"target": 100, "redis_publish": 0, "refused": {}, "dropped": 0}
    kept = evening.Level(**{**level, **more, "fanout_seated": fast})
    assert evening.judge(kept) == []
    slow = evening.Level(**{**asdict(kept), "fanout_seated": {**fast, "p99": 140.0}})
    assert evening.judge(slow) == ["seated fan-out p99 140.0 ms"]
    lost = evening.Level(**{**asdict(kept), "fanout_seated": {**fast, "delivered": 499}})
    assert evening.judge(lost) == ["seated delivered 499 of 500"]
    unmeasured = evening.Level(**{**asdict(kept), "fanout_seated": {}})
    assert evening.judge(unmeasured) == ["no seated fan-out measured"]
    # The report shows both fan-outs; a run from before the seated one was measured
    # still renders.
    old = results("sqlite")
    text = evening.report(old)
    assert "| 2.0 / 20.0 ms | 900 / 900 | not measured | not measured |" in text
    old["levels"] = [{**old["levels"][0], "fanout_seated": fast}]  # type: ignore[index]
    assert "| 2.0 / 20.0 ms | 900 / 900 | 2.0 / 20.0 ms | 500 / 500 |" in evening.report(old)


def probed_level(**changes: object) -> evening.Level:
    """A level of issue 37 §3's table as judged: 50 probes inside both promises, the
    server's own histograms inside them, the crowd's processes lagging (its figures over
    both promises), every delivery made; with ``changes``."""
    level = dict(results("sqlite")["levels"][0])  # type: ignore[index]
    del level["kept"]  # a property of a Level
    probes = {
        "players": 50,
        "rtt": {"p50": 20.0, "p99": 38.0, "n": 103, "app_p50": 20.5, "app_p99": 39.0},
        "fanout": {"p50": 31.0, "p99": 80.0, "delivered": 27_000, "expected": 27_000},
        "fanout_kernel": {"p50": 30.0, "p99": 78.0, "n": 27_000},
        "lag_p99_ms": 4.0,
    }
    own = {"p50": 10.0, "p99": 30.0, "mean": 9.0, "n": 2000.0}
    fields = {
        **level,
        "target": 14,
        "seated": 14,
        "spectators": 1000,
        "redis_publish": 0,
        "refused": {},
        "dropped": 0,
        "rtt": {"all": {"p50": 45.0, "p99": 150.0, "n": 2000}},
        "fanout": {"p50": 48.0, "p99": 130.0, "delivered": 500_000, "expected": 500_000},
        "fanout_seated": {"p50": 45.0, "p99": 120.0, "delivered": 7000, "expected": 7000},
        "bot_lag_p99_ms": 120.0,
        "spectator_lag_p99_ms": 90.0,
        "server_command": own,
        "server_fanout": {**own, "p99": 50.0},
        "probes": probes,
    }
    return evening.Level(**{**fields, **changes})  # type: ignore[arg-type]


def test_with_probes_the_verdict_is_theirs_and_the_servers_own() -> None:
    """``--probes``: the command and fan-out promises are judged on the probes (a process
    of their own) and the server's own histograms; the crowd's p99s, bent by their own
    processes' lag, are printed beside the verdict with that lag, not judged; a crowd that
    keeps up is judged as before, and every delivery is judged for all."""
    kept = probed_level()
    assert evening.judge(kept) == []
    left = evening.unjudged(kept)
    assert left == [
        "the crowd's command p99 150.0 ms (its bots' loop lagged 120 ms at p99)",
        "the spectators' fan-out p99 130.0 ms (their loop lagged 90 ms at p99)",
        "the seated bots' fan-out p99 120.0 ms (their loop lagged 120 ms at p99)",
    ]
    cell = evening.verdict_cell(asdict(kept) | {"kept": True, "unjudged": left})
    assert cell.startswith("kept every promise (judged on the probes and the server's own")
    assert all(reason in cell for reason in left)
    # the probes over a promise, by their kernel's stamps or by their handlers' times
    probes = kept.probes
    slow = probed_level(probes={**probes, "rtt": {**probes["rtt"], "app_p99": 63.5}})
    assert evening.judge(slow) == ["the probes' command p99 63.5 ms"]
    late = probed_level(
        probes={**probes, "fanout_kernel": {**probes["fanout_kernel"], "p99": 103.4}}
    )
    assert evening.judge(late) == ["the probes' fan-out p99 103.4 ms"]
    few = probed_level(probes={**probes, "rtt": {**probes["rtt"], "n": 4}})
    assert evening.judge(few) == ["the probes timed 4 commands, fewer than 50: no p99"]
    lost = probed_level(probes={**probes, "fanout": {**probes["fanout"], "delivered": 26_999}})
    assert evening.judge(lost) == ["the probes' delivered 26,999 of 27,000"]
    # the server's own past a promise breaks it whatever the probes saw
    own = probed_level(server_command={**kept.server_command, "p99": 75.0})
    assert evening.judge(own) == ["the server's own command p99 over 50 ms (<= 75)"]
    wait = probed_level(server_fanout={**kept.server_fanout, "p99": 150.0})
    assert evening.judge(wait) == ["the server's own fan-out wait p99 over 100 ms (<= 150)"]
    # the edges: a promise is a p99 under its bound; the server's own p99 is a bucket's
    # bound, so one at the promise's own bound is within it
    edge = probed_level(probes={**probes, "rtt": {**probes["rtt"], "p99": 50.0}})
    assert evening.judge(edge) == ["the probes' command p99 50.0 ms"]
    at = probed_level(
        server_command={**kept.server_command, "p99": 50.0},
        server_fanout={**kept.server_fanout, "p99": 100.0},
    )
    assert evening.judge(at) == []
    lag = evening.CROWD_LAG_SHARE * evening.PROMISES["rtt_p99_ms"]
    assert evening.crowd_keeps_up(lag, evening.PROMISES["rtt_p99_ms"])
    assert not evening.crowd_keeps_up(lag + 0.1, evening.PROMISES["rtt_p99_ms"])
    # a crowd whose loops keep up is judged, and a crowd's lost delivery always is
    quick = probed_level(bot_lag_p99_ms=5.0, spectator_lag_p99_ms=8.0)
    assert [b.split(" (")[0] for b in evening.judge(quick)] == [
        "command p99 150.0 ms",
        "fan-out p99 130.0 ms",
        "seated fan-out p99 120.0 ms",
    ]
    assert evening.unjudged(quick) == []
    missing = probed_level(fanout={**kept.fanout, "delivered": 499_999})
    assert evening.judge(missing) == ["delivered 499,999 of 500,000"]
    # without probes, nothing changes: the crowd's figures are the verdict
    bare = probed_level(probes={})
    assert evening.judge(bare)[0].startswith("command p99 150.0 ms")
    assert evening.unjudged(bare) == []
    said = evening.verdict_cell(asdict(bare) | {"kept": False, "broken": evening.judge(bare)})
    assert said.startswith("broke: command p99 150.0 ms") and "judged on the probes" not in said


def test_the_section_keeps_the_other_stores_subsection() -> None:
    sqlite = evening.section(results("sqlite"), None)
    assert sqlite.startswith(evening.SECTION + "\n")
    assert "### One process on SQLite" in sqlite
    # 100 seated on 0.5 cores (servers 5 s over 10 s): 200 a core, 250 ms per coup
    assert "**200 seated players and 100 spectators per core**" in sqlite
    doc = "# Benchmarks\n\n" + sqlite + "\n## Later (bench/later.py)\n\nkept\n"
    both = evening.section(results("redis"), doc)
    assert both.index("### One process on SQLite") < both.index("### A cluster: 3 processes")
    assert both.count("### One process on SQLite") == 1
    assert "Later" not in both


async def test_a_croupiers_action_for_a_bot_is_counted_and_told(
    capsys: pytest.CaptureFixture[str],
) -> None:
    stats = evening.BotStats(recording=True)
    bot = evening.Bot("ws://127.0.0.1:9/", "bot-1", "e000", 0, "127.0.0.1", stats, seed=1)
    bot.last = ("cut", {"position": 120}, {"type": "error", "code": "not_cutter"}, 0.004)
    bot._on_event("shoe_cut", {"data": {"position": 97, "on_behalf": "bot-1"}})
    bot._on_event("shoe_cut", {"data": {"position": 97, "on_behalf": "bot-2"}})  # not ours
    assert stats.on_behalf == 1
    told = capsys.readouterr().err
    assert "the croupier acted for bot-1: shoe_cut" in told and "not_cutter" in told


async def test_a_bots_command_ids_are_never_its_clients_own() -> None:
    """The test kit's client counts its hello, join and sit 1, 2, 3... in the bots'
    process; a table remembers a player's command ids, the integer 5 and the string "5"
    alike (docs/protocol.md §5), so a bot's command numbered as its own ``sit`` was
    answered ``duplicate`` and never done (the croupier then acted for the bot). The
    bots' ids are strings no integer id reads as."""
    stats = evening.BotStats(recording=False)
    bot = evening.Bot("ws://127.0.0.1:9/", "bot-1", "e000", 0, "127.0.0.1", stats, seed=1)
    sent: list[dict[str, object]] = []

    async def send(message: dict[str, object]) -> int:
        sent.append(message)
        fut = bot.pending[str(message["id"])]
        fut.set_result(({"type": "ok", "id": message["id"], "seq": 1}, 0.0, None))
        return 0

    bot.client.send = send  # type: ignore[method-assign]
    for _ in range(3):
        await bot.cmd("done")
    ids = [m["id"] for m in sent]
    assert len(set(ids)) == 3
    for mid in ids:
        assert isinstance(mid, str) and not mid.isdigit(), mid


def test_the_memory_line_says_per_player_after_play_and_no_spectators_when_none() -> None:
    run = results("sqlite")
    level = run["levels"][0]  # type: ignore[index]
    line = evening.rss_line(run, [level])
    # 100,000 KiB at the top against 90,000 at the start, over 150 players
    assert "20.0 KiB per seated player" in line
    assert "10.0 KiB per spectator" in line and "66.7 KiB per player" in line
    alone = {**level, "spectators": 0, "new_spectators": 0, "rss_spectators_kib": 0}
    line = evening.rss_line(run, [alone])
    assert "(no spectators connected)" in line and "per spectator" not in line
    assert "100.0 KiB per player" in line


def test_a_missing_delivery_is_told_late_or_never_and_why() -> None:
    """Issue 36: each (client, table, seq) expected and not received by the grace's end
    is late (it came afterwards: how long after its command), or never, and then sent
    before the receiving process recorded, cut by a closed connection, skipped on an
    open one (later events came), or stalled (nothing later came)."""
    from array import array

    sends = array("d", [0, 10, 100.0, 0, 11, 100.5, 0, 12, 101.0, 1, 5, 99.0])
    members = {0: [1, 2, 3, 4], 1: [7]}
    received = [
        (1, 0, 10, 100.01), (1, 0, 11, 100.51), (1, 0, 12, 101.01),  # every one, in time
        (2, 0, 10, 100.02), (2, 0, 12, 101.02),  # 11 skipped: 12 came
        (3, 0, 10, 100.03), (3, 0, 11, 100.53),  # 12 never, and its connection closed
        (4, 0, 10, 100.04), (4, 0, 11, 100.54), (4, 0, 12, 103.5),  # 12 came 2.5 s late
        (7, 1, 6, 99.5),  # table 1's seq 5 was sent before this process recorded (99.2)
    ]  # fmt: skip
    ended = {3: "closed 1008 too slow"}
    counts, matched, expected, m = evening.match_fanout(
        sends.tobytes(), received, members, 102.0, 99.2, lambda who: ended.get(who, "open")
    )
    assert (matched, expected, sum(counts)) == (9, 13, 9)  # the late one is missing
    assert {k: m[k] for k in ("missing", "late", "before", "closed", "skipped", "stalled")} == {
        "missing": 4,
        "late": 1,
        "before": 1,
        "closed": 1,
        "skipped": 1,
        "stalled": 0,
    }
    assert m["late_ms"] == [2500.0] and m["ends"] == {"closed 1008 too slow": 1}
    cell = evening.missing_cell(m)
    assert cell.startswith("4 missing: 1 late") and "1 never, the connection ended" in cell
    stalled = evening.match_fanout(sends.tobytes(), received[:2], {0: [1]}, 102.0)[3]
    assert (stalled["missing"], stalled["stalled"]) == (1, 1)  # 12: nothing after 11
    merged = evening.merge_missing([m, stalled])
    assert (merged["missing"], merged["stalled"], merged["late"]) == (5, 1, 1)
    assert evening.how_closed(True, None, "") == "cut"
    assert evening.how_closed(True, 1001, "going away") == "closed 1001 going away"


async def test_a_command_sent_before_the_window_is_not_a_send_of_the_window() -> None:
    """Issue 36: a command sent just before the window whose reply came in it was
    counted as a send, and its event, published before a spectator process began
    recording, was counted missing at that process's spectators (3 and 1 of about
    6,000 in two cluster runs: "sent 21-52 ms before the recording"). A send is one of
    the window only when the command went out in it."""
    stats = evening.BotStats(recording=False)
    bot = evening.Bot("ws://127.0.0.1:9/", "bot-1", "e000", 0, "127.0.0.1", stats, seed=1)
    seqs = iter(range(10, 20))

    async def send(message: dict[str, object]) -> int:
        stats.recording = True  # the window began while the command was on its way
        fut = bot.pending[str(message["id"])]
        fut.set_result(({"type": "ok", "id": message["id"], "seq": next(seqs)}, 0.0, None))
        return 0

    bot.client.send = send  # type: ignore[method-assign]
    await bot.cmd("bet", area="player", amount=100)
    assert len(stats.sends) == 0 and len(stats.rtt["bet"]) == 1  # timed, not a send
    await bot.cmd("bet", area="player", amount=100)  # sent in the window: a send
    assert list(stats.sends[:2]) == [0, 11]


def test_the_servers_collections_are_told_by_generation_over_the_window() -> None:
    name = "chemmy_gc_pause_seconds"

    def scrape(young: float, young_sum: float, within_25ms: float) -> dict[str, float]:
        return {
            f'{name}_count{{generation="0"}}': young,
            f'{name}_sum{{generation="0"}}': young_sum,
            f'{name}_bucket{{generation="0",le="0.025"}}': within_25ms,
            f'{name}_bucket{{generation="0",le="0.05"}}': young,
            f'{name}_count{{generation="2"}}': 1,
            f'{name}_sum{{generation="2"}}': 0.2,
            f'{name}_bucket{{generation="2",le="0.25"}}': 1,
        }

    # over the window: 3 young collections, 70 ms in all, one past 25 ms; no full one
    gcs = evening.collections_of(scrape(10, 0.01, 10), scrape(13, 0.08, 12))
    assert gcs["0"] == {"n": 3.0, "ms": pytest.approx(70.0), "most": 50.0}
    assert gcs["1"] == {"n": 0.0, "ms": 0.0, "most": 0.0}
    assert gcs["2"]["n"] == 0
    assert "gen 0 3 (70 ms, <= 50)" in evening.gc_cell(gcs)


class _Taken:
    """A stand-in for the bench's client processes: the specs they were given."""

    def __init__(self) -> None:
        self.specs: list[tuple[Any, ...]] = []

    async def add(self, specs: list[tuple[Any, ...]], *more: Any) -> tuple[int, list[str]]:
        self.specs += specs
        return len(specs), []


def test_route_table_runs_players_placement_and_hashes_each_table_to_one_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--route table``: the processes place tables by players (``--placement
    players``), and each table's clients go to the one process a hash of the table picks
    (the same from run to run, every process used over thirty tables); without it the
    processes place by hash."""
    started: list[tuple[str, ...]] = []

    class Node:
        def __init__(self, home: Path, text: str, *args: str) -> None:
            started.append(args)
            self.pid, self.url = 4100 + len(started), f"ws://n{len(started)}"

        def start(self) -> None: ...

    monkeypatch.setattr(evening, "CountedServer", Node)
    monkeypatch.setattr(evening, "start_redis", lambda home: SimpleNamespace(url=lambda: "r://"))
    tables = evening.table_ids(30)
    for placement in ("players", "hash"):
        started.clear()
        servers = evening.Servers(
            tmp_path, tables, redis_store=True, processes=2, placement=placement
        )
        assert [a[a.index("--placement") + 1] for a in started] == [placement] * 2
    route = servers.by_table()
    assert route == servers.by_table() and set(route) == set(tables)
    assert set(route.values()) == {"ws://n1", "ws://n2"}, route
    with pytest.raises(SystemExit):
        evening.main(["--route", "table"])  # (needs --redis)

    class Made(Exception):
        """The run's servers were asked for (and nothing was started)."""

    def servers_of(*args: Any, placement: str = "hash", **kwargs: Any) -> None:
        raise Made(placement)

    monkeypatch.setattr(evening, "Servers", servers_of)
    for route, placement in (("table", "players"), ("owner", "hash"), ("spread", "hash")):
        with pytest.raises(Made, match=f"^{placement}$"):
            evening.main(["--redis", "--route", route, "--no-baselines"])


async def test_route_owner_puts_each_client_on_its_tables_owner(
    redis_server: RedisServer, redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--route owner``: once the placement has settled (every table owned by one of the
    run's processes, none over its share, the same owners at two reads), every seated bot,
    bettor without a seat and spectator of a table goes to the process its lease names (its
    pid in the name a process has on the bus); without it, in turns."""
    import redis

    from server.croupier.cluster import lease_key

    monkeypatch.setattr(evening, "SETTLE_LOOK", 0.05)
    servers = object.__new__(evening.Servers)
    servers.nodes = [
        SimpleNamespace(pid=4101, url="ws://a"),
        SimpleNamespace(pid=4102, url="ws://b"),
    ]
    servers.tables = ["t1", "t2"]
    servers.redis_server = SimpleNamespace(port=redis_server.port)
    client = redis.Redis(port=redis_server.port)
    try:
        # The first process holds both (over its share of one): not settled yet.
        client.set(lease_key("t1"), "host-4101-0f0f0f")
        client.set(lease_key("t2"), "host-4101-0f0f0f")
        with pytest.raises(RuntimeError, match="did not settle"):
            await servers.settled_owners(timeout=0.3)
        client.set(lease_key("t1"), "host-with-dashes-4102-a1b2c3")  # (its share taken)
        assert await servers.settled_owners(timeout=2) == {"t1": "ws://b", "t2": "ws://a"}
        client.set(lease_key("t2"), "elsewhere-999-abcdef")  # (not one of this run's)
        assert servers.owners() == {"t1": "ws://b"}
    finally:
        client.delete(*(lease_key(t) for t in servers.tables))
        client.close()
    args = SimpleNamespace(tables=2, seated=3, bot_workers=1, spectator_workers=1, pace=1.0)
    args.clients, args.probes = "light", 0
    for route, want in (({"t1": "ws://b", "t2": "ws://a"}, None), ({}, "turns")):
        run = object.__new__(evening.Evening)
        run.args, run.servers, run.route = args, servers, route
        run.tables, run.top_seated, run.seated, run.betting = ["t1", "t2"], 6, 0, 0
        run.watching = [0, 0]
        run.bots, run.specs = _Taken(), _Taken()
        await run.add_bots(6)
        await run.add_bettors(2)
        await run.add_spectators(6)
        bots = [(spec[0], spec[2]) for spec in run.bots.specs]
        watchers = [(spec[0], spec[1]) for spec in run.specs.specs]
        assert len(bots) == 8 and watchers
        if want is None:  # every client on its table's owner
            assert all(url == route[table] for url, table in bots + watchers), (bots, watchers)
        else:  # in turns: both processes, at each table
            assert {url for url, _ in bots} == {"ws://a", "ws://b"} == {u for u, _ in watchers}
