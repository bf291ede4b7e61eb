"""The shoe simulator: deal many whole shoes by the real shoe rules and count the coups.

What it is for: checking the exact odds (:mod:`server.engine.odds`) against play, and
the frequencies of whole shoes as dealt (burn and stop card included), fast.

Shoe rules (GAME_RULES §4): the shoe is shuffled and cut (the first ``c`` cards go to
the back, ``10 <= c <= len - 10``); the first card is shown and its burn value
(A = 1, 2-9 face, T J Q K = 10) is how many cards are burned after it; coups are dealt
(§2) until the stop card, which sits before card ``len - stop_offset``, comes out,
i.e. until a coup draws that card; that coup is finished, one more coup is dealt, and
the shoe ends. The stop card is at least 12 cards from the end, so both coups always
have their cards (:data:`server.engine.shoe.MIN_STOP_OFFSET`).

Two paths deal the same shoes and must agree coup for coup:

* :func:`simulate_shoes`, the fast path: a batch of shoes as a 2-D array of card
  values, every shoe's position advanced together, each coup decided by one lookup in
  :func:`coup_table` (the tableau enumerated once in :mod:`server.engine.odds`);
* :func:`simulate_shoes_reference`, the scalar path: card strings dealt from the
  table's own :class:`server.engine.shoe.Shoe` through
  :func:`server.engine.coup.resolve_coup`, one coup at a time.

Both take their card orders from :func:`shoe_orders`. The orders are made with numpy's
``Generator`` seeded from the ``seed`` argument (never the global random): statistics
only. The provably fair order of a real table is :func:`server.engine.shoe.shuffle_order`.

Pure: no I/O, no clock, no global random; the same seed deals the same shoes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import astuple, dataclass
from functools import cache

import numpy as np
from numpy.typing import NDArray

from .cards import RANKS, burn_count, card_value, shoe_cards
from .coup import Coup, resolve_coup
from .odds import code_of, coup_table, decode
from .shoe import MIN_CUT, MIN_STOP_OFFSET, Shoe

__all__ = [
    "BATCH",
    "SimulationResult",
    "coup_record",
    "coup_table",
    "deal_orders",
    "deal_shoe",
    "decode_record",
    "shoe_orders",
    "simulate_shoes",
    "simulate_shoes_reference",
]

#: Shoes per batch: the unit of seeding (batch ``j`` has its own generator) and of work.
BATCH = 256

_MAX_BURN = 10  # §4: T J Q K burn 10

# A coup record: the coup code (odds.code_of) plus the pair flags (§3).
_PLAYER_PAIR = 10_000
_BANKER_PAIR = 20_000
_NO_COUP = -1
_POWERS = np.array([10**5, 10**4, 10**3, 10**2, 10, 1], dtype=np.int32)


@dataclass(frozen=True, slots=True)
class SimulationResult:
    """Counts over the coups of the shoes dealt."""

    shoes: int
    coups: int
    banker: int
    player: int
    tie: int
    player_pair: int
    banker_pair: int
    banker_six: int  # Banker won with 6 (Super 6, no-commission tables; §3)

    def frequencies(self) -> dict[str, float]:
        """Each count per coup (0.0 for every key when no coup was dealt)."""
        keys = ("banker", "player", "tie", "player_pair", "banker_pair", "banker_six")
        n = self.coups
        return {k: (getattr(self, k) / n if n else 0.0) for k in keys}

    def __add__(self, other: SimulationResult) -> SimulationResult:
        return SimulationResult(
            *(a + b for a, b in zip(astuple(self), astuple(other), strict=True))
        )


_EMPTY = SimulationResult(0, 0, 0, 0, 0, 0, 0, 0)


# -- the card orders ------------------------------------------------------------------


def _seed_int(seed: bytes | int) -> int:
    if isinstance(seed, bytes | bytearray):
        return int.from_bytes(seed, "big")
    if isinstance(seed, int) and not isinstance(seed, bool) and seed >= 0:
        return seed
    raise ValueError(f"a simulation seed is bytes or an int >= 0, not {seed!r}")


def _check_shoes(shoes: int) -> None:
    if not isinstance(shoes, int) or isinstance(shoes, bool) or shoes < 0:
        raise ValueError(f"shoes is a whole number >= 0, not {shoes!r}")


def _check_stop(stop_offset: int, size: int) -> None:
    # §4: at least 12 from the end; and well clear of the burn at the front.
    if not MIN_STOP_OFFSET <= stop_offset <= size - 2 * _MAX_BURN:
        raise ValueError(
            f"the stop card goes {MIN_STOP_OFFSET} to {size - 2 * _MAX_BURN} cards "
            f"from the end of {size} cards, not {stop_offset!r}"
        )


def _check(shoes: int, decks: int, stop_offset: int) -> int:
    _check_shoes(shoes)
    size = len(shoe_cards(decks))  # raises CardError for decks < 1
    _check_stop(stop_offset, size)
    return size


def shoe_orders(
    shoes: int, *, decks: int = 8, seed: bytes | int = 0
) -> Iterator[NDArray[np.int16]]:
    """The card orders of ``shoes`` shuffled and cut shoes, in batches of at most BATCH.

    Each row is one shoe as indices into :func:`server.engine.cards.shoe_cards`, in the
    order the cards leave the shoe (after the cut, §4). Batch ``j`` comes from its own
    generator (entropy ``seed``, spawn key ``j``) and always makes BATCH shoes, so shoe
    ``i`` is the same however many shoes are asked for.
    """
    _check_shoes(shoes)
    size = len(shoe_cards(decks))  # raises CardError for decks < 1
    entropy = _seed_int(seed)
    done = 0
    j = 0
    while done < shoes:
        rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence(entropy, spawn_key=(j,))))
        batch = np.broadcast_to(np.arange(size, dtype=np.int16), (BATCH, size)).copy()
        rng.permuted(batch, axis=1, out=batch)
        cut = rng.integers(MIN_CUT, size - MIN_CUT, size=BATCH, endpoint=True)
        # The cut: the first c cards go to the back (§4).
        rolled = (np.arange(size)[None, :] + cut[:, None]) % size
        batch = np.take_along_axis(batch, rolled, axis=1)
        take = min(BATCH, shoes - done)
        yield batch[:take]
        done += take
        j += 1


@cache
def _card_arrays(decks: int) -> tuple[NDArray[np.int8], NDArray[np.int8], NDArray[np.int16]]:
    """Per shoe index: baccarat value, rank index (A=0 .. K=12), burn count (§1, §4)."""
    cards = shoe_cards(decks)
    values = np.array([card_value(c) for c in cards], dtype=np.int8)
    ranks = np.array([RANKS.index(c[0]) for c in cards], dtype=np.int8)
    burns = np.array([burn_count(c) for c in cards], dtype=np.int16)
    return values, ranks, burns


def coup_record(coup: Coup) -> int:
    """One int per coup: its coup code (:func:`server.engine.odds.code_of`) + pair flags."""
    return (
        code_of(coup.cards_used, coup.natural, coup.player_total, coup.banker_total)
        + _PLAYER_PAIR * coup.player_pair
        + _BANKER_PAIR * coup.banker_pair
    )


# -- the fast path --------------------------------------------------------------------


def deal_orders(
    orders: NDArray[np.integer], *, decks: int = 8, stop_offset: int = 16
) -> NDArray[np.int32]:
    """Deal a batch of shoes (rows of :func:`shoe_orders`) all at once.

    Returns one row per shoe of coup records (:func:`coup_record`) in dealing order,
    padded with -1 after the shoe's last coup.
    """
    size = _check(0, decks, stop_offset)
    orders = np.asarray(orders)
    if orders.ndim != 2 or orders.shape[1] != size:
        raise ValueError(f"orders must be (shoes, {size}), not {orders.shape}")
    values_of, ranks_of, burns_of = _card_arrays(decks)
    shoes = orders.shape[0]
    width = size + 6  # six cards of padding: a lookup never runs off the row
    values = np.zeros((shoes, width), dtype=np.int32)
    values[:, :size] = values_of[orders]
    ranks = np.full((shoes, width), -1, dtype=np.int8)
    ranks[:, :size] = ranks_of[orders]
    flat_v = values.ravel()
    flat_r = ranks.ravel()
    table = coup_table()

    max_coups = size // 4 + 1
    records = np.full((shoes, max_coups), _NO_COUP, dtype=np.int32)
    pos = 1 + burns_of[orders[:, 0]].astype(np.int64)  # the burn (§4)
    stop_index = size - stop_offset  # the stop card sits before this card (§4)
    live = np.arange(shoes)  # shoes still dealing
    last = np.zeros(shoes, dtype=np.bool_)  # the stop card is out: one more coup
    offsets = np.arange(6)
    for k in range(max_coups):
        if live.size == 0:
            break
        p = pos[live]
        base = live * width + p
        key = flat_v[base[:, None] + offsets[None, :]] @ _POWERS
        code = table[key].astype(np.int32)
        end = p + code // 1000  # never past the end: the stop card is 12+ from it (§4)
        record = (
            code
            + _PLAYER_PAIR * (flat_r[base] == flat_r[base + 2])  # positions 1, 3 (§3)
            + _BANKER_PAIR * (flat_r[base + 1] == flat_r[base + 3])  # positions 2, 4
        )
        records[live, k] = record
        was_last = last[live]
        # The coup drew the card behind the stop card: it comes out now (§4).
        last[live] = end > stop_index
        pos[live] = end
        live = live[~was_last]
    return records


def _tally(records: NDArray[np.int32], shoes: int) -> SimulationResult:
    r = records[records >= 0]
    code = r % 10_000
    pt = code // 10 % 10
    bt = code % 10
    pairs = r // 10_000
    return SimulationResult(
        shoes=shoes,
        coups=int(r.size),
        banker=int(np.count_nonzero(bt > pt)),
        player=int(np.count_nonzero(pt > bt)),
        tie=int(np.count_nonzero(pt == bt)),
        player_pair=int(np.count_nonzero(pairs & 1)),
        banker_pair=int(np.count_nonzero(pairs & 2)),
        banker_six=int(np.count_nonzero((bt > pt) & (bt == 6))),
    )


def simulate_shoes(
    shoes: int,
    *,
    decks: int = 8,
    seed: bytes | int = 0,
    stop_offset: int = 16,
    progress: Callable[[int], None] | None = None,
) -> SimulationResult:
    """Deal ``shoes`` whole shoes by the shoe rules (§4) and count the coups; fast path.

    ``progress`` is called after each batch with the number of shoes dealt so far.
    """
    _check(shoes, decks, stop_offset)
    result = _EMPTY
    for orders in shoe_orders(shoes, decks=decks, seed=seed):
        result += _tally(deal_orders(orders, decks=decks, stop_offset=stop_offset), len(orders))
        if progress is not None:
            progress(result.shoes)
    return result


# -- the reference path ---------------------------------------------------------------


def deal_shoe(cards: Sequence[str], *, stop_offset: int = 16) -> list[Coup]:
    """Deal one shoe, given its cards in the order they leave the shoe (after the cut).

    The scalar reference for :func:`deal_orders`, on the table's own shoe
    (:class:`server.engine.shoe.Shoe`): the burn, then coups by :func:`resolve_coup`
    until the stop card is out, then one more (§4).
    """
    _check_stop(stop_offset, len(cards))
    shoe = Shoe.stacked(cards, stop_offset=stop_offset)
    shoe.burn()  # the first card shown, then as many burned as its burn value (§4)
    coups: list[Coup] = []
    while True:
        # Never short of cards: the stop card is at least 12 from the end (§4).
        coup = resolve_coup(shoe.cards[shoe.position : shoe.position + 6])
        was_last = shoe.stop_card_out
        for _ in range(coup.cards_used):
            shoe.draw()
        coups.append(coup)
        if was_last:
            break
    return coups


def simulate_shoes_reference(
    shoes: int,
    *,
    decks: int = 8,
    seed: bytes | int = 0,
    stop_offset: int = 16,
    progress: Callable[[int], None] | None = None,
) -> SimulationResult:
    """:func:`simulate_shoes` one coup at a time through :func:`resolve_coup` (slow)."""
    _check(shoes, decks, stop_offset)
    deck = shoe_cards(decks)
    counts = dict.fromkeys(("banker", "player", "tie"), 0)
    n = pp = bp = six = done = 0
    for orders in shoe_orders(shoes, decks=decks, seed=seed):
        for order in orders.tolist():
            for coup in deal_shoe([deck[i] for i in order], stop_offset=stop_offset):
                n += 1
                counts[coup.outcome] += 1
                pp += coup.player_pair
                bp += coup.banker_pair
                six += coup.outcome == "banker" and coup.banker_total == 6
            done += 1
        if progress is not None:
            progress(done)
    return SimulationResult(done, n, counts["banker"], counts["player"], counts["tie"], pp, bp, six)


def decode_record(record: int) -> tuple[str, int, int, bool, bool]:
    """``(outcome, player_total, banker_total, player_pair, banker_pair)`` of a record."""
    coup = decode(record % 10_000)
    pairs = record // 10_000
    return coup.outcome, coup.player_total, coup.banker_total, bool(pairs & 1), bool(pairs & 2)
