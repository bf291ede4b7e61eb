"""Benchmark of the rules engine: coups per second and the time of the exact odds.

Run from the project root: ``python -m bench.engine``. Prints a table and writes it to
docs/benchmarks.md, section "## Engine (bench/engine.py)" (the rest of the file is
kept). Each figure is the best of a few repeats; a bare Python loop over the same
cards runs in the same process as a baseline, because machines are noisy.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

from bench._util import load_line, loadavg, machine, write_benchmarks
from server.engine.cards import card_value, shoe_cards
from server.engine.coup import resolve_coup
from server.engine.odds import counts_after, exact_odds
from server.engine.simulate import (
    deal_shoe,
    shoe_orders,
    simulate_shoes,
)

COMMAND = "python -m bench.engine"
SECTION = "## Engine (bench/engine.py)"
DECKS = 8
SCALAR_SHOES = 400
FAST_SHOES = 20_000
REPEATS = 3


def best_of(fn: Callable[[], object], repeats: int = REPEATS) -> float:
    """Fastest wall time of ``repeats`` runs of ``fn``, in seconds."""
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> None:
    start = loadavg()
    rows: list[tuple[str, str, str]] = []  # (measure, figure, relative to the baseline)

    # Exact odds, first: the first call also builds the coup table.
    t0 = time.perf_counter()
    exact_odds(DECKS)
    odds_first = time.perf_counter() - t0
    warm = [best_of(lambda: exact_odds(DECKS), 1) for _ in range(20)]
    odds_warm = statistics.median(warm)
    deck = shoe_cards(DECKS)
    first_shoe = [deck[i] for i in next(shoe_orders(1, decks=DECKS, seed=99))[0].tolist()]
    part = counts_after(DECKS, first_shoe[:200])
    odds_part = statistics.median(best_of(lambda: exact_odds(counts=part), 1) for _ in range(20))

    # The same real shoes (shuffled, cut, burned, dealt to the stop card) for the scalar
    # measures and the baseline.
    shoes = [
        [deck[i] for i in order]
        for batch in shoe_orders(SCALAR_SHOES, decks=DECKS, seed=1)
        for order in batch.tolist()
    ]
    # Each coup's cards as they left the shoe.
    windows = [list(coup.cards) for cards in shoes for coup in deal_shoe(cards)]
    n_coups = len(windows)
    n_cards = sum(len(c) for c in shoes)
    values = {c: card_value(c) for c in deck}

    def baseline() -> int:
        total = 0
        for cards in shoes:
            for c in cards:
                total += values[c]
        return total

    def resolve_all() -> None:
        for w in windows:
            resolve_coup(w)

    def reference_shoes() -> None:
        for cards in shoes:
            deal_shoe(cards)

    t_base = best_of(baseline)
    base_rate = n_cards / t_base
    t_resolve = best_of(resolve_all)
    t_reference = best_of(reference_shoes)

    simulate_shoes(256, decks=DECKS, seed=3)  # warm: numpy, the table
    fast = simulate_shoes(FAST_SHOES, decks=DECKS, seed=3)
    t_fast = best_of(lambda: simulate_shoes(FAST_SHOES, decks=DECKS, seed=3))

    def rate(label: str, coups: int, seconds: float) -> tuple[str, str, str]:
        per_sec = coups / seconds
        return (
            label,
            f"{per_sec:,.0f} coups/s",
            f"{per_sec / base_rate:.4f} coups per card summed",
        )

    def took(label: str, seconds: float) -> tuple[str, str, str]:
        return (
            label,
            f"{seconds * 1e3:.1f} ms",
            f"as long as summing {seconds * base_rate:,.0f} cards",
        )

    rows.append(("baseline: Python loop summing card values", f"{base_rate:,.0f} cards/s", "1"))
    rows.append(rate("resolve_coup, the coups of real shoes", n_coups, t_resolve))
    rows.append(rate("reference path (Shoe + resolve_coup), whole shoes", n_coups, t_reference))
    rows.append(
        rate(
            f"simulator fast path ({FAST_SHOES:,} shoes, {fast.coups:,} coups)", fast.coups, t_fast
        )
    )
    rows.append(took("exact_odds, full 8-deck shoe, first call (builds the table)", odds_first))
    rows.append(took("exact_odds, full 8-deck shoe, warm (median of 20)", odds_warm))
    rows.append(took("exact_odds, after 200 cards dealt, warm (median of 20)", odds_part))

    header = ("measure", "figure", "relative to the baseline")
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(3)]
    lines = [
        "| " + " | ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)) + " |",
        "|" + "|".join("-" * (w + 2) for w in widths) + "|",
        *(
            "| " + " | ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) + " |"
            for r in rows
        ),
    ]
    table = "\n".join(lines)
    print(table)
    write_section(table, n_cards, n_coups, load_line(start))


def write_section(table: str, n_cards: int, n_coups: int, load: str) -> None:
    section = "\n".join(
        [
            SECTION,
            "",
            f"Made by `{COMMAND}` on {time.strftime('%Y-%m-%d')}.",
            f"Machine: {machine()}. {load}",
            "",
            f"Scalar figures deal the same {SCALAR_SHOES} shuffled 8-deck shoes (cut, burn, stop "
            f"card 16 from the end: {n_coups:,} coups, {n_cards:,} cards). The baseline is a bare "
            "Python loop summing the values of those cards, run in the same process, so the "
            "figures can be compared across machines by their ratio to it. Rates are the best "
            f"of {REPEATS} runs; odds times the median of 20 calls.",
            "",
            table,
            "",
        ]
    )
    write_benchmarks(SECTION, section)


if __name__ == "__main__":
    argparse.ArgumentParser(
        description="The rules engine: coups per second and the exact odds' time, beside a"
        " bare loop over the same cards (written to docs/benchmarks.md)."
    ).parse_args()  # (no option: --help says so, and runs nothing)
    main()
