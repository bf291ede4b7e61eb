"""Benchmark of the table state machine: coups per second with 14 seated bots, and what
it costs to show every viewer their events and snapshots.

Run from the project root: ``python -m bench.table``. Prints a table and writes it to
docs/benchmarks.md, section "## Table (bench/table.py)" (the rest of the file is
kept). ``python -m bench.table --steps [COUPS]`` prints instead what one step of the
core costs at a human pace (:func:`steps`), and writes nothing. Each coup goes through the whole state machine: every bot places a bet and
presses DONE, the turners TOSS, the table settles through the in-memory wallet; offers
are accepted and cuts made at once, and new seeded shoes are fed as shoes end. The
baseline, in the same process, is ``resolve_coup`` alone on the same coups' cards, so
the state machine's overhead shows as a ratio. Rates are the best of a few runs.
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import json
import time
import tracemalloc
from collections import defaultdict
from collections.abc import Callable

from bench._util import load_line, loadavg, machine, write_benchmarks
from server.engine.coup import resolve_coup
from server.gateway.hub import RETAINED_EVENTS
from server.table import MemoryWallet, Table, TableOptions, view_event
from server.table.table import Phase
from server.table.views import view
from server.vocabulary import commands as c
from server.vocabulary.events import Event

SECTION = "## Table (bench/table.py)"
COMMAND = "python -m bench.table"
BOTS = 14
COUPS = 1_500
REPEATS = 3
FUNDS = 10**12
AREAS = ("player", "banker", "player", "banker", "tie", "player_pair", "banker_pair")


def best_of(fn: Callable[[], object], repeats: int = REPEATS) -> float:
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


class Run:
    """One table, 14 bots, ``coups`` coups played straight through."""

    def __init__(self) -> None:
        self.bots = [f"bot{i:02d}" for i in range(1, BOTS + 1)]
        balances = {f"player:{b}": FUNDS for b in self.bots}
        balances["cashier"] = -FUNDS * BOTS
        self.wallet = MemoryWallet(balances)
        self.table = Table("bench", TableOptions(seats=BOTS), self.wallet)
        self.now = 0.0
        self.shoes = 0
        self.commands = 0
        self.events: list[Event] = []
        self.keep_events = False
        self.coup_cards: list[list[str]] = []
        for b in self.bots:
            self.send(c.Join(player=b))
            self.send(c.Sit(player=b))

    def send(self, cmd: c.Command) -> None:
        self.commands += 1
        evs = self.table.handle(cmd, self.now).events
        if self.keep_events:
            self.events.extend(evs)
        for e in evs:
            if e.kind == "result":
                p, b = e.data["player"], e.data["banker"]
                self.coup_cards.append([p[0], b[0], p[1], b[1], *p[2:], *b[2:]])

    def answer(self) -> bool:
        """One step towards betting, if the table waits for one: a new seeded shoe, the
        offered shoe accepted, or the cut made. Whether there was one."""
        t = self.table
        if t.wants_shoe:
            self.shoes += 1
            self.send(
                c.StartShoe(seed=hashlib.sha256(f"bench shoe {self.shoes}".encode()).digest())
            )
        elif t.offer is not None:
            self.send(c.AcceptShoe(player=t.offer.current))
        elif t.phase is Phase.CUT:
            self.send(c.Cut(player=t.cutter, position=200))
        else:
            return False
        return True

    def to_betting(self) -> None:
        """Answer shoes, offers and cuts until betting is open (the pure table's driver:
        the protocol one is ``tests.kit.game.Game.to_betting``)."""
        while self.table.phase is not Phase.BETTING:
            if not self.answer():
                raise AssertionError(f"stuck in {self.table.phase}")

    def play(self, coups: int) -> None:
        t = self.table
        k = 0
        while len(self.coup_cards) < coups:
            self.now += 1.0
            if self.answer():
                continue
            if t.phase is Phase.BETTING:
                for i, b in enumerate(self.bots):
                    k += 1
                    area = "banker" if b == t.holder else AREAS[(i + k) % len(AREAS)]
                    amount = 100 * (1 + (i * 7 + k) % 20)
                    if area not in ("player", "banker"):
                        amount = min(amount, 1_500)
                    self.send(c.PlaceBet(player=b, area=area, amount=amount))
                for b in self.bots:
                    if t.phase is Phase.BETTING:
                        self.send(c.Done(player=b))
            elif t.phase is Phase.TURN:
                coup = t.coup
                assert coup is not None
                turner = coup.turners[coup.stage_hand]
                assert turner is not None
                self.send(c.Toss(player=turner, hand=coup.stage_hand))
            else:
                raise AssertionError(f"stuck in {t.phase}")


def main() -> None:
    start = loadavg()
    rows: list[tuple[str, str, str]] = []

    # The state machine, whole coups.
    runs: list[Run] = []

    def machine_run() -> None:
        r = Run()
        r.play(COUPS)
        runs.append(r)

    t_table = best_of(machine_run)
    sample = runs[-1]
    assert sample.wallet.total() == 0
    cards = sample.coup_cards[:COUPS]
    n_coups = len(cards)
    commands_per_coup = sample.commands / n_coups

    # Baseline: resolve_coup alone on the same coups' cards.
    def baseline() -> None:
        for cs in cards:
            resolve_coup(cs)

    t_base = best_of(baseline)

    # Events of 300 coups, then every viewer's view of each (14 players + a spectator).
    r = Run()
    r.keep_events = True
    r.play(300)
    events = r.events
    viewers: list[str | None] = [*r.bots, None]

    def fan_out() -> None:
        for e in events:
            for v in viewers:
                view_event(e, v)

    def fan_out_json() -> None:
        for e in events:
            for v in viewers:
                json.dumps(view_event(e, v), separators=(",", ":"))

    t_fan = best_of(fan_out)
    t_fan_json = best_of(fan_out_json)
    held = held_bytes_per_event()

    # Snapshots: a table mid-coup (cards dealt, a turner to act) and one in betting.
    snap = Run()
    snap.play(20)
    snap.to_betting()
    t = snap.table
    betting_views = 0

    def views(n: int) -> None:
        for _ in range(n):
            for v in viewers:
                view(t, v)

    assert t.phase is Phase.BETTING
    for i, b in enumerate(snap.bots):  # chips on the layout, then deal
        snap.send(
            c.PlaceBet(player=b, area="banker" if b == t.holder else AREAS[i % 2], amount=500)
        )
    betting_views = 200
    t_view_betting = best_of(lambda: views(betting_views))
    for b in snap.bots:
        if t.phase is Phase.BETTING:
            snap.send(c.Done(player=b))
    assert t.phase is Phase.TURN
    t_view_turn = best_of(lambda: views(betting_views))
    n_snap = betting_views * len(viewers)

    coups_s = n_coups / t_table
    base_s = n_coups / t_base
    rows.append(
        ("baseline: resolve_coup alone, the same coups' cards", f"{base_s:,.0f} coups/s", "1")
    )
    rows.append(
        (
            f"state machine, {BOTS} bots: bets, DONE, TOSS, settle",
            f"{coups_s:,.0f} coups/s",
            f"{coups_s / base_s:.4f} (x{base_s / coups_s:,.0f} slower)",
        )
    )
    rows.append(
        (
            "  commands through Table.handle",
            f"{sample.commands / t_table:,.0f} commands/s",
            f"{commands_per_coup:.1f} commands per coup",
        )
    )
    per_event = t_fan / len(events)
    rows.append(
        (
            f"view_event for {len(viewers)} viewers ({BOTS} players + spectator)",
            f"{len(events) / t_fan:,.0f} events/s x 15",
            f"{per_event * 1e6:.1f} us per event; {len(events) / 300:.0f} events per coup "
            f"= {per_event * len(events) / 300 / (1 / coups_s):.2f} x a coup's own time",
        )
    )
    rows.append(
        (
            "  the same, JSON-encoded for each viewer",
            f"{len(events) / t_fan_json:,.0f} events/s x 15",
            f"{t_fan_json / len(events) * 1e6:.1f} us per event",
        )
    )
    rows.append(
        (
            f"memory an event holds (the hub's recent log keeps {RETAINED_EVENTS} a table)",
            f"{held / 1024:.1f} KiB per event",
            f"{held * RETAINED_EVENTS / 2**20:.2f} MiB a table's log of {RETAINED_EVENTS}",
        )
    )
    rows.append(
        (
            "views.view(table, viewer), betting, 14 players' chips",
            f"{n_snap / t_view_betting:,.0f} views/s",
            f"{t_view_betting / n_snap * 1e6:.1f} us per view; {base_s / (n_snap / t_view_betting):.1f} baseline coups per view",
        )
    )
    rows.append(
        (
            "views.view(table, viewer), cards dealt, a turner to act",
            f"{n_snap / t_view_turn:,.0f} views/s",
            f"{t_view_turn / n_snap * 1e6:.1f} us per view",
        )
    )

    w = [max(len(row[i]) for row in [("measure", "figure", "relative"), *rows]) for i in range(3)]
    lines = [
        f"| {'measure'.ljust(w[0])} | {'figure'.ljust(w[1])} | {'relative to the baseline'.ljust(w[2])} |",
        f"|{'-' * (w[0] + 2)}|{'-' * (w[1] + 2)}|{'-' * (w[2] + 2)}|",
    ]
    lines += [f"| {a.ljust(w[0])} | {b.ljust(w[1])} | {r.ljust(w[2])} |" for a, b, r in rows]
    table = "\n".join(lines)
    print(table)
    write_section(table, n_coups, sample.shoes, len(events), load_line(start))


def held_bytes_per_event(coups: int = 60) -> float:
    """The Python memory one event holds while it is kept (its data and private parts,
    what a table's recent log in the hub holds): tracemalloc's growth over ``coups``
    coups played keeping every event, less the same coups played keeping none, per
    event kept."""

    def grown(keep: bool) -> tuple[int, int]:
        r = Run()
        r.keep_events = keep
        gc.collect()
        tracemalloc.start()
        try:
            before = tracemalloc.get_traced_memory()[0]
            r.play(coups)
            gc.collect()
            return tracemalloc.get_traced_memory()[0] - before, len(r.events)
        finally:
            tracemalloc.stop()

    kept, count = grown(True)
    none, _ = grown(False)
    return (kept - none) / max(1, count)


def write_section(table: str, n_coups: int, shoes: int, n_events: int, load: str) -> None:
    section = "\n".join(
        [
            SECTION,
            "",
            f"Made by `{COMMAND}` on {time.strftime('%Y-%m-%d')}.",
            f"Machine: {machine()}. {load}",
            "",
            f"{n_coups:,} coups ({shoes} seeded 8-deck shoes: offer accepted, cut, burn, stop card) "
            f"at one table with {BOTS} seated bots. Each coup goes through `Table.handle`: every "
            "bot places a bet and presses DONE, the turners TOSS, the table settles through the "
            "in-memory wallet (no timers run: the bots act at once). The baseline is "
            "`resolve_coup` alone on the same coups' cards, in the same process. The viewer "
            f"figures fan {n_events:,} events of 300 coups out to 15 viewers with `view_event`, "
            "and take `views.view(table, viewer)` snapshots (with `you.actions`) for the same 15 viewers. Rates are the "
            f"best of {REPEATS} runs.",
            "",
            table,
            "",
        ]
    )
    write_benchmarks(SECTION, section)


def steps(coups: int = 200) -> None:
    """The core's cost per step at a human pace, as the croupier pays it: ``Table.handle``
    by command, and ``to_state(spectators=False)`` (the state row) after every step that
    made events. 14 seated bots; each coup every bot bets, then changes it (with command
    ids, as clients send them), presses DONE; each stage's turner squeezes, sends 8
    progress a card 0.15 s apart (some coalesced), turns the cards. Uses only the
    table's public calls, so this file copied into an older tree measures it the same
    way (``git archive <rev> | tar -x -C DIR``, then ``PYTHONPATH=DIR``).
    """
    r = Run()
    t, bots = r.table, r.bots
    spent: dict[str, float] = defaultdict(float)
    count: dict[str, int] = defaultdict(int)
    clock = time.perf_counter
    n = 0

    def send(kind: str, cmd: c.Command) -> None:
        t0 = clock()
        step = t.handle(cmd, r.now)
        t1 = clock()
        spent[kind] += t1 - t0
        count[kind] += 1
        if step.events:
            t.to_state(spectators=False)
            spent["to_state"] += clock() - t1
            count["to_state"] += 1

    def cid() -> str:
        nonlocal n
        n += 1
        return f"s{n}"

    played = 0
    while played < coups:
        r.now += 1.0
        if r.answer():
            continue
        if t.phase is Phase.BETTING:
            played += 1
            for i, b in enumerate(bots):
                area = "banker" if b == t.holder else AREAS[(i + played) % 3]
                amount = 100 * (1 + (i * 7 + played) % 10)
                send("bet", c.PlaceBet(player=b, area=area, amount=amount, id=cid()))
            for b in bots:
                area = "banker" if b == t.holder else "player"
                send("bet", c.PlaceBet(player=b, area=area, amount=100, id=cid()))
            for b in bots:
                if t.phase is Phase.BETTING:
                    send("done", c.Done(player=b, id=cid()))
            continue
        coup = t.coup
        assert coup is not None, t.phase
        hand = coup.stage_hand
        turner = coup.turners[hand]
        assert turner is not None
        send("squeeze", c.Squeeze(player=turner, hand=hand, style="peek", id=cid()))
        for card in coup.face_down():
            for j in range(8):
                r.now += 0.15
                cmd = c.Progress(player=turner, hand=hand, card=card, percent=10 * (j + 1))
                send("progress", cmd)
            send("turn", c.TurnCard(player=turner, hand=hand, card=card, id=cid()))
    handled = sum(v for k, v in count.items() if k != "to_state")
    print(f"{coups} coups at a table of {BOTS} seated bots, us per step (mean):")
    for kind in sorted(count):
        print(f"  {kind:10s} {count[kind]:7,d} steps {spent[kind] / count[kind] * 1e6:8.1f} us")
    total = sum(spent.values()) / handled * 1e6
    print(f"  {'all':10s} {handled:7,d} steps {total:8.1f} us (handle + to_state)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description="The table's state machine: whole coups, views and events (written to"
        " docs/benchmarks.md), or with --steps the cost of one step by command (printed only)."
    )
    parser.add_argument(
        "--steps",
        nargs="?",
        type=int,
        const=200,
        metavar="COUPS",
        help="print what one step costs at a human pace, over COUPS coups (200), and write nothing",
    )
    args = parser.parse_args()
    if args.steps is not None:
        steps(args.steps)
    else:
        main()
