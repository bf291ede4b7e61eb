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


def test_counts_take_the_languages_plural_forms_from_cldr() -> None:
    """Issue 34 §3: a count's words follow CLDR's plural rules (Babel), as the page's
    follow Intl.PluralRules: "1 card burned", not "1 cards burned"; in French 0 and 1
    are singular; a session's minutes and a shoe's coups alike."""
    from client_cli.i18n import plural_category, set_language

    try:
        assert say.burned("Td", 1) == "Burn card 10♦: 1 card burned"
        assert say.burned("Td", 3) == "Burn card 10♦: 3 cards burned"
        assert say.shoe_ended(4, 1) == "Shoe 4 is over: its seed is revealed (1 coup)"
        assert say.limits_text({"limits": {}, "session": {"seconds": 60}}).endswith(
            "This session: 1 minute of play."
        )
        assert say.limit_amount("session", 1) == "1 minute"
        set_language("fr")
        assert (plural_category(0), plural_category(1), plural_category(2)) == ("one",) * 2 + (
            "other",
        )
        assert say.burned("Td", 0) == "Carte brûlée 10♦ : 0 carte brûlée"
        assert say.burned("Td", 2) == "Carte brûlée 10♦ : 2 cartes brûlées"
        set_language("de")
        assert say.shoe_ended(4, 1).endswith("(1 Coup)")
        assert say.limit_amount("session", 2) == "2 Minuten"
    finally:
        set_language("en")


def test_a_net_of_zero_is_a_push_only_when_every_bet_pushed() -> None:
    """Issue 34 §3: two bets won and two lost for a net of zero break even; "Your bets
    push" is for bets that all pushed (a tie's Player and Banker)."""
    result = {"outcome": "banker", "banker_total": 7, "player_total": 5}
    assert say.settled(result, 0, ["win", "lose", "win", "lose"]) == (
        "Banker wins 7 to 5 — You break even"
    )
    tie = {"outcome": "tie", "banker_total": 6, "player_total": 6}
    assert say.settled(tie, 0, ["push", "push"]) == "Tie 6 to 6 — Your bets push"


def test_your_own_reveal_is_yours() -> None:
    assert say.contribution_revealed("you", mine=True) == "You revealed your randomness"
    assert say.contribution_revealed("Ann") == "Ann revealed their randomness"
