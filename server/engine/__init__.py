"""The rules core: cards, coups, payouts, the shoe, roads and exact odds.

Pure and deterministic: this package never imports asyncio, sockets, sqlite3, redis,
``time`` or the global ``random``. Randomness enters only as a shoe's seed, passed in.
"""

from .cards import CardError, card_value, hand_total, parse_card, parse_cards, shoe_cards
from .coup import Coup, banker_draws, player_draws, resolve_coup
from .payouts import AREAS, Area, Bet, BetResult, Paytable, settle, settle_bet

__all__ = [
    "AREAS",
    "Area",
    "Bet",
    "BetResult",
    "CardError",
    "Coup",
    "Paytable",
    "banker_draws",
    "card_value",
    "hand_total",
    "parse_card",
    "parse_cards",
    "player_draws",
    "resolve_coup",
    "settle",
    "settle_bet",
    "shoe_cards",
]
