"""The message line's words: cards, results, and a sentence for each thing that happens."""

from __future__ import annotations

from client_cli import sentences as say
from client_cli.sentences import card_text, result_text


def test_card_text_and_results() -> None:
    assert card_text("Td") == "10♦" and card_text("As") == "A♠" and card_text(None) == "??"
    assert (
        result_text({"outcome": "banker", "banker_total": 7, "player_total": 5})
        == "Banker wins 7 to 5"
    )
    assert result_text(
        {"outcome": "player", "banker_total": 3, "player_total": 8, "natural": True}
    ) == ("Player wins 8 to 3 (natural)")
    assert result_text({"outcome": "tie", "banker_total": 6, "player_total": 6}) == "Tie 6 to 6"
    # A voided round's record (history): no outcome, every bet back; not "Banker wins 0 to 0".
    voided = {"void": True, "reason": "card dropped", "outcome": None, "player": ["9s"]}
    assert result_text(voided) == "Voided (card dropped): every bet returned"


def test_who_does_what() -> None:
    assert say.sat("Bo", 3, me=False) == "Bo sits in seat 3"
    assert say.sat("you", 3, me=True) == "You sit in seat 3"
    assert say.stood("McKay", "stood") == "McKay stood up"  # a name keeps its capitals
    assert say.stood("you", "timeout") == "You stood up (timed out) and left"
    assert (
        say.shoe_declined("the croupier", timeout=True)
        == "The croupier declined the shoe (time ran out)"
    )
    assert say.shoe_cut(97, "the croupier", "Bo") == "The shoe is cut at 97 by the croupier for Bo"
    assert say.shoe_cut(150, "Bo", None) == "The shoe is cut at 150 by Bo"
    assert say.turn("you", "banker", third=True, me=True).startswith(
        "Your turn: turn the Banker third card"
    )
    assert say.turn("Bo", "player", third=False, me=False) == "Bo turns the Player cards"


def test_a_card_and_the_servers_total() -> None:
    assert say.card_turned("player", 1, "Ac", 1) == "Player card 1: A♣ — Player 1"
    assert say.card_turned("banker", 3, "Td", None) == "Banker card 3: 10♦"  # no total said


def test_settlement_from_your_side() -> None:
    result = {"outcome": "banker", "banker_total": 7, "player_total": 5}
    assert say.settled(result, 950) == "Banker wins 7 to 5 — You won 9.50"
    assert say.settled(result, -1000) == "Banker wins 7 to 5 — You lost 10.00"
    assert say.settled(result, 0) == "Banker wins 7 to 5 — Your bets push"
    assert say.settled(result, None) == "Banker wins 7 to 5"
    assert say.settled(None, None) == "Settled"
