"""The client's words: what the message line says about the table, cards and results.

Every sentence the model (:mod:`client_cli.model`) puts on the message line is made
here, from plain values it already resolved (a player's name is ``"you"`` for you,
``"the croupier"`` for the croupier), so the wording lives in one place and can be
tested on its own. Pure functions: no I/O, no state, no rule of the game (a hand's
total is the server's ``total``, never computed here). Money becomes text only through
:func:`~client_cli.money.format_money`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from client_cli.money import format_money

__all__ = [
    "AREA_NAMES",
    "HAND_NAMES",
    "PHASE_SENTENCES",
    "SUITS",
    "betting_closed",
    "betting_opened",
    "betting_waiting",
    "burned",
    "capital",
    "card_text",
    "card_turned",
    "chat",
    "closed",
    "cut_offered",
    "disconnected",
    "draining",
    "reconnected",
    "result_text",
    "sat",
    "settled",
    "shoe_accepted",
    "shoe_cut",
    "shoe_declined",
    "shoe_ended",
    "shoe_held_by_house",
    "shoe_offered",
    "shoe_passed",
    "shoe_started",
    "squeezing",
    "stood",
    "stop_card",
    "third_card",
    "turn",
    "waiting",
]

AREA_NAMES: dict[str, str] = {
    "player": "Player",
    "banker": "Banker",
    "tie": "Tie",
    "player_pair": "Player Pair",
    "banker_pair": "Banker Pair",
    "super6": "Super 6",
    "dragon_player": "Dragon Player",
    "dragon_banker": "Dragon Banker",
}
SUITS = {"s": "♠", "h": "♥", "d": "♦", "c": "♣"}
HAND_NAMES = {"player": "Player", "banker": "Banker"}

#: What the message line says right after a snapshot, by phase.
PHASE_SENTENCES = {
    "betting": "Place your bets",
    "turn": "The cards are being turned",
    "shoe_offer": "The shoe is being offered",
    "cut": "Waiting for the cut",
    "waiting": "Waiting for players: take a seat",
    "shuffle": "Shuffling",
    "closed": "The table is closed",
}

_PASS_REASONS = {
    "player_won": "Player won",
    "passed": "passed",
    "stood": "stood up",
    "left": "left",
    "timeout": "timed out",
}


def capital(text: str) -> str:
    """``"you"`` -> ``"You"``; a name keeps its own case after the first letter."""
    return text[:1].upper() + text[1:]


def _hand(hand: object) -> str:
    return HAND_NAMES.get(str(hand), str(hand))


# ---------------------------------------------------------------------------- cards


def card_text(card: str | None) -> str:
    """``"Td"`` -> ``"10♦"``; ``None`` (face down) -> ``"??"``."""
    if not card:
        return "??"
    rank, suit = card[:-1], card[-1:]
    rank = "10" if rank == "T" else rank
    return f"{rank}{SUITS.get(suit, suit)}"


def result_text(result: Mapping[str, Any]) -> str:
    """``{"outcome": "banker", "banker_total": 7, "player_total": 5, ...}`` ->
    ``"Banker wins 7 to 5"`` (with naturals and pairs noted)."""
    pt = int(result.get("player_total", 0))
    bt = int(result.get("banker_total", 0))
    outcome = result.get("outcome")
    if outcome == "tie":
        text = f"Tie {pt} to {bt}"
    elif outcome == "player":
        text = f"Player wins {pt} to {bt}"
    else:
        text = f"Banker wins {bt} to {pt}"
    notes = []
    if result.get("natural"):
        notes.append("natural")
    if result.get("player_pair"):
        notes.append("Player Pair")
    if result.get("banker_pair"):
        notes.append("Banker Pair")
    return f"{text} ({', '.join(notes)})" if notes else text


# ---------------------------------------------------------------------------- players


def sat(who: str, seat: object, *, me: bool) -> str:
    return f"You sit in seat {seat}" if me else f"{who} sits in seat {seat}"


def stood(who: str, reason: object) -> str:
    if reason == "left":
        return f"{capital(who)} left the table"
    if reason == "timeout":
        return f"{capital(who)} stood up (timed out) and left"
    return f"{capital(who)} stood up"


def disconnected(who: str) -> str:
    return f"{capital(who)} lost the connection"


def reconnected(who: str) -> str:
    return f"{capital(who)} is back"


def chat(name: object, text: object) -> str:
    return f"{name}: {text}"


# ---------------------------------------------------------------------------- the shoe


def shoe_started(shoe_no: object, commitment: object) -> str:
    return f"Shoe {shoe_no}: a new shoe, commitment {str(commitment or '')[:12]}…"


def shoe_offered(who: str, *, me: bool) -> str:
    return (
        "The shoe is offered to you: accept (y) or decline (n)"
        if me
        else f"The shoe is offered to {who}"
    )


def shoe_accepted(who: str, *, me: bool) -> str:
    return "You hold the shoe" if me else f"{who} takes the shoe"


def shoe_declined(who: str, *, timeout: bool) -> str:
    return f"{capital(who)} declined the shoe" + (" (time ran out)" if timeout else "")


def shoe_held_by_house() -> str:
    return "The house holds the shoe"


def shoe_passed(who: str, reason: object) -> str:
    return f"The shoe leaves {who} ({_PASS_REASONS.get(str(reason), str(reason))})"


def cut_offered(who: str, *, me: bool) -> str:
    return "Cut the shoe (u)" if me else f"{who} cuts the shoe"


def shoe_cut(position: object, by: str, on_behalf: str | None) -> str:
    who = f"the croupier for {on_behalf}" if on_behalf else by
    return f"The shoe is cut at {position} by {who}"


def burned(card: str | None, count: int) -> str:
    return f"Burn card {card_text(card)}: {count} cards burned"


def waiting() -> str:
    return "Waiting for players: take a seat"


def stop_card() -> str:
    return "The stop card is out: one more coup, then a new shoe"


def shoe_ended(shoe_no: object, coups: int) -> str:
    return f"Shoe {shoe_no} is over: its seed is revealed ({coups} coups)"


def closed(*, refunded: bool) -> str:
    return "The table is closed" + (": wagers refunded" if refunded else "")


# ---------------------------------------------------------------------------- betting


def betting_opened(coup_no: int, last_result: str) -> str:
    last = f" (last: {last_result})" if last_result else ""
    return f"Coup {coup_no}: place your bets{last}"


def betting_waiting() -> str:
    return "Waiting for a bet"


def draining() -> str:
    return "The server is closing: no new bets; this coup finishes"


def betting_closed() -> str:
    return "No more bets"


# ---------------------------------------------------------------------------- turning


def turn(who: str, hand: object, *, third: bool, me: bool) -> str:
    what = f"the {_hand(hand)} third card" if third else f"the {_hand(hand)} cards"
    if me:
        return f"Your turn: turn {what} — TOSS, or squeeze: PEEK, SIDE, QUICK"
    return f"{capital(who)} turns {what}"


def squeezing(who: str, hand: object, style: object) -> str:
    return f"{capital(who)} squeezes the {_hand(hand)} cards ({style})"


def card_turned(hand: object, index: int, card: str | None, total: int | None) -> str:
    """``"Player card 1: A♣ — Player 1"``: the hand's total is the server's, when given."""
    text = f"{_hand(hand)} card {index}: {card_text(card)}"
    return f"{text} — {_hand(hand)} {total}" if total is not None else text


def third_card(hand: object) -> str:
    return f"{_hand(hand)} draws a third card"


def settled(result: Mapping[str, Any] | None, net: int | None) -> str:
    """The result and your part of it: ``"Banker wins 7 to 5 — You won 9.50"``."""
    text = result_text(result) if result else "Settled"
    if net is None:
        return text
    if net > 0:
        return f"{text} — You won {format_money(net)}"
    if net < 0:
        return f"{text} — You lost {format_money(-net)}"
    return f"{text} — Your bets push"
