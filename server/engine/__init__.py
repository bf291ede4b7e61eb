"""The rules core: cards, coups, payouts, the shoe, roads and exact odds.

Pure and deterministic: this package never imports asyncio, sockets, sqlite3, redis,
``time`` or the global ``random``. Randomness enters only as a shoe's seed, passed in.
"""

from .cards import CardError, card_value, hand_total, parse_card, parse_cards, shoe_cards
from .coup import Coup, banker_draws, player_draws, resolve_coup
from .odds import counts_after, exact_odds
from .payouts import AREAS, Area, Bet, BetResult, Paytable, settle, settle_bet
from .roads import Result, Roads, roads
from .shoe import Shoe, ShoeError, commitment, shuffle_order, verify
from .simulate import SimulationResult, simulate_shoes

__all__ = [
    "AREAS",
    "Area",
    "Bet",
    "BetResult",
    "CardError",
    "Coup",
    "Paytable",
    "Result",
    "Roads",
    "Shoe",
    "ShoeError",
    "SimulationResult",
    "banker_draws",
    "card_value",
    "commitment",
    "counts_after",
    "exact_odds",
    "hand_total",
    "parse_card",
    "parse_cards",
    "player_draws",
    "resolve_coup",
    "roads",
    "settle",
    "settle_bet",
    "shoe_cards",
    "shuffle_order",
    "simulate_shoes",
    "verify",
]
