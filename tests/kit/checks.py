"""Checks of whole coups as clients saw them, shared by the one-process and the
many-process play tests: random bets within a 1-100 table's limits, each coup against
the rules oracle (draws, turners, payouts, commission, balances), and every client's
events against a reference watcher's.
"""

from __future__ import annotations

import random

from .client import Client
from .game import CoupLog
from .oracle import baccarat, expected_payout

__all__ = [
    "AREAS",
    "check_coup",
    "check_public_views_agree",
    "expected_turner",
    "next_seat_after",
    "random_bets",
]

AREAS = ("player", "banker", "tie", "player_pair", "banker_pair")


def random_bets(rng: random.Random, players: list[str]) -> dict[str, dict[str, int]]:
    """Bets within the 1-100 tier's limits (100-10,000; Tie and pairs at most 1,500).
    Someone always bets (GAME_RULES §7: with no bet at all the table waits)."""
    bets: dict[str, dict[str, int]] = {}
    keen = rng.choice(players)
    for pid in players:
        if pid != keen and rng.random() < 0.15:
            continue  # sits this coup out (but presses DONE)
        areas = rng.sample(AREAS, rng.choice([1, 1, 1, 2, 3]))
        bets[pid] = {
            area: rng.randrange(100, 10_001 if area in ("player", "banker") else 1_501, 50)
            for area in areas
        }
    return bets


def expected_turner(log: CoupLog) -> str | None:
    """§6: the highest Player bet turns the Player hand; on equal amounts, the first."""
    best: tuple[int, str] | None = None
    for pid, bets in log.bets.items():  # in the order the bets were placed
        amount = bets.get("player", 0)
        if amount and (best is None or amount > best[0]):
            best = (amount, pid)
    return None if best is None else best[1]


def check_coup(log: CoupLog, balances: dict[str, int]) -> None:
    """The coup against the oracle; ``balances`` (expected) are moved by its payouts."""
    player, banker = log.player_cards, log.banker_cards
    outcome = baccarat(player, banker)  # also checks each hand drew as §2 says
    assert log.result["player"] == player and log.result["banker"] == banker
    assert log.result["outcome"] == outcome
    assert log.turners == {"player": expected_turner(log), "banker": log.holder}
    for turner, hand, cards in log.squeezed:  # the turner's private view was the truth
        assert turner == log.turners[hand]
        for slot, card in cards.items():
            assert log.cards[hand][int(slot)] == card
    paid = {(p["player"], p["area"]): p for p in log.payouts}
    assert len(paid) == len(log.payouts) == sum(len(b) for b in log.bets.values())
    nets: dict[str, int] = {}
    for pid, bets in log.bets.items():
        for area, stake in bets.items():
            pay = paid[(pid, area)]
            returned, commission = expected_payout(area, stake, player, banker)
            assert (pay["stake"], pay["returned"], pay["commission"]) == (
                stake,
                returned,
                commission,
            ), pay
            assert pay["win"] == max(0, returned - stake)
            nets[pid] = nets.get(pid, 0) + returned - stake
    for pid, net in nets.items():
        balances[pid] += net
        assert log.private[pid]["net"] == net
        assert log.private[pid]["balance"] == balances[pid]
    for pid, data in log.private.items():
        if pid not in nets:  # no bet, no private part
            assert "balance" not in data and "net" not in data


def next_seat_after(seats: dict[str, int], pid: str) -> str:
    order = sorted(seats, key=seats.get)  # type: ignore[arg-type]
    return order[(order.index(pid) + 1) % len(order)]


def check_public_views_agree(reference: Client, others: list[Client], table: str) -> None:
    """Every client saw the same events as the spectator, but for its own private part."""
    ref = {e["seq"]: e for e in reference.events(table)}
    private = {"balance", "available", "net", "cards", "actions", "own", "reason", "message"}
    for client in others:
        for event in client.events(table):
            base = ref.get(event["seq"])
            if base is None:
                continue
            assert event["kind"] == base["kind"]
            extra = set(event["data"]) - set(base["data"])
            assert extra <= private, (event, base)
            # (every watcher's own actions too: a table that takes bettors without a seat
            # keeps each spectator's current, GAME_RULES §5)
            public = {k: v for k, v in base["data"].items() if k not in private}
            if public.get("player", "") is None and event["data"].get("player") == client.player:
                # a bettor without a seat's own bets (GAME_RULES §5): theirs alone
                public.update({k: event["data"][k] for k in ("player", "bets") if k in public})
            mine = {k: v for k, v in event["data"].items() if k in public}
            assert mine == public, (client.player, event, base)
