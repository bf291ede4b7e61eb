"""The shoe: a provably fair card order, the cut, the burn and the stop card (GAME_RULES §4).

The card order is a deterministic function of a 32-byte secret seed, written up in
docs/fairness.md so that anyone can re-implement it:

1. ``commitment = SHA-256(seed)`` (hex), published before the cut.
2. A byte stream: block ``i`` (i = 0, 1, 2, ...) is
   ``HMAC-SHA256(key=seed, msg=b"chemmy-shoe-v1" || i as 8-byte big-endian)``.
   The stream is read 4 bytes at a time as big-endian unsigned 32-bit integers.
3. ``uniform(n)``: read ``r``; reject while ``r >= 2**32 - (2**32 % n)``; return ``r % n``.
4. Start from :func:`server.engine.cards.shoe_cards` (deck after deck, suits s h d c,
   ranks A..K) and Fisher-Yates: for ``i`` from ``len-1`` down to 1, swap card ``i`` with
   card ``uniform(i + 1)``.
5. The cut ``c`` (10 <= c <= len-10) moves the first ``c`` cards to the back:
   ``order[c:] + order[:c]``. A cut made on the player's behalf (timeout) is
   ``10 + uniform(len - 19)`` from a second stream keyed the same way with the message
   prefix ``b"chemmy-cut-v1"``.
6. The burn: the first card is shown, its burn value (A = 1, 2-9 face, T J Q K = 10)
   is how many cards then go face down. Dealing starts after them.
   With the players' contributions (below), ``key`` stands for ``seed`` in steps 2
   and 5.
7. The stop card sits before card ``len - stop_offset`` (``stop_offset`` at least 12);
   it comes out when that card, the one behind it, is drawn. The coup that draws it is
   finished, one more coup is dealt, and the shoe ends.

The players' contributions (commit-then-reveal, docs/fairness.md): each seated player may
commit to 32 random bytes before the cut (``SHA-256(value)``) and reveal them after it;
``key = HMAC-SHA256(key=seed, msg=b"chemmy-contributions-v1" || the revealed values
sorted bytewise)`` (:func:`contribution_key`; no value: ``key = seed``) keys the shuffle
and the timeout cut in place of the seed (:meth:`Shoe.mix`).

Pure: no I/O, no clock, no global random. Seeds are made by the shell (``secrets``)
and passed in; tests stack a shoe by giving its cards.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .cards import CardError, burn_count, parse_card, shoe_cards
from .coup import resolve_coup

__all__ = [
    "MIN_CUT",
    "MIN_STOP_OFFSET",
    "Shoe",
    "ShoeError",
    "VerifyReport",
    "commitment",
    "contribution_key",
    "cut_bounds",
    "cut_order",
    "shuffle_order",
    "timeout_cut",
    "verify",
]

MIN_CUT = 10  # §4: the cut is at least 10 cards from either end
# §4: the stop card is at least 12 cards from the end, so that the coup in progress and
# one more coup may each take their 6 cards: the coup that draws the card behind the
# stop card ends at most 6 cards past it, leaving at least 12 - 6 = 6 for the last coup.
# So a shoe never runs short of cards (tests/engine/test_shoe.py proves it by property).
MIN_STOP_OFFSET = 12
SEED_BYTES = 32
_SHOE_LABEL = b"chemmy-shoe-v1"
_CUT_LABEL = b"chemmy-cut-v1"
_CONTRIBUTIONS_LABEL = b"chemmy-contributions-v1"
CONTRIBUTION_BYTES = 32  # a player's contribution: 32 random bytes (docs/fairness.md)


class ShoeError(ValueError):
    """A seed, cut or stop card position that the rules do not allow."""


def commitment(seed: bytes) -> str:
    """The SHA-256 commitment to a shoe's seed, published before the cut (§4)."""
    return hashlib.sha256(seed).hexdigest()


def contribution_key(seed: bytes, values: Iterable[bytes]) -> bytes:
    """The shoe's key from the house seed and the players' revealed contributions.

    ``HMAC-SHA256(key=seed, msg=b"chemmy-contributions-v1" || the values sorted
    bytewise, concatenated)``; with no value at all, the seed itself (a shoe nobody
    contributed to is as before). A function of the seed and the *set* of values: the
    order they arrived in does not matter. The shuffle and the timeout cut use the key
    where a shoe without contributions uses the seed.
    """
    _check_seed(seed)
    chosen = sorted(bytes(v) for v in values)
    for v in chosen:
        if len(v) != CONTRIBUTION_BYTES:
            raise ShoeError(f"a contribution is {CONTRIBUTION_BYTES} bytes")
    if not chosen:
        return bytes(seed)
    message = _CONTRIBUTIONS_LABEL + b"".join(chosen)
    return hmac.new(bytes(seed), message, hashlib.sha256).digest()


def _words(seed: bytes, label: bytes) -> Iterator[int]:
    block = 0
    while True:
        digest = hmac.new(seed, label + block.to_bytes(8, "big"), hashlib.sha256).digest()
        for k in range(0, 32, 4):
            yield int.from_bytes(digest[k : k + 4], "big")
        block += 1


def _uniform(words: Iterator[int], n: int) -> int:
    """An unbiased integer in [0, n) by rejection sampling."""
    limit = 2**32 - (2**32 % n)
    while True:
        r = next(words)
        if r < limit:
            return r % n


def _check_seed(seed: bytes) -> None:
    if not isinstance(seed, bytes | bytearray) or len(seed) != SEED_BYTES:
        raise ShoeError(f"a shoe seed is {SEED_BYTES} bytes")


def shuffle_order(seed: bytes, decks: int = 8) -> list[str]:
    """The shoe's card order before the cut: Fisher-Yates driven by the seed's stream."""
    _check_seed(seed)
    cards = shoe_cards(decks)
    words = _words(bytes(seed), _SHOE_LABEL)
    for i in range(len(cards) - 1, 0, -1):
        j = _uniform(words, i + 1)
        cards[i], cards[j] = cards[j], cards[i]
    return cards


def cut_bounds(size: int) -> tuple[int, int]:
    """The first and last position a shoe of ``size`` cards may be cut at (§4)."""
    return MIN_CUT, size - MIN_CUT


def check_cut(cut: int, size: int) -> None:
    low, high = cut_bounds(size)
    if not isinstance(cut, int) or isinstance(cut, bool) or not low <= cut <= high:
        raise ShoeError(f"the cut must be between {low} and {high}, not {cut!r}")


def cut_order(order: Sequence[str], cut: int) -> list[str]:
    """Apply the cut: the first ``cut`` cards go to the back (§4)."""
    check_cut(cut, len(order))
    return list(order[cut:]) + list(order[:cut])


def timeout_cut(seed: bytes, size: int) -> int:
    """The cut the table makes when the cutter's timer runs out (§4), from the seed."""
    _check_seed(seed)
    return MIN_CUT + _uniform(_words(bytes(seed), _CUT_LABEL), size - 2 * MIN_CUT + 1)


@dataclass
class Shoe:
    """A shoe being dealt. Mutable; every field is plain data so a table can snapshot it.

    ``cards`` is the order the cards will leave the shoe (after the cut); ``position``
    the index of the next card. A stacked shoe (``seed is None``) has no cut and no burn.
    """

    cards: list[str]
    decks: int
    seed: bytes | None = None
    cut: int | None = None
    position: int = 0
    stop_index: int | None = None
    stop_card_out: bool = False
    burn_card: str | None = None
    burned: int = 0
    dealt: list[str] = field(default_factory=list)
    #: The key the players' contributions made (:func:`contribution_key`), once mixed
    #: in; None: the seed is the key (no contribution).
    key: bytes | None = None

    # -- making a shoe ------------------------------------------------------------
    @classmethod
    def from_seed(cls, seed: bytes, decks: int = 8) -> Shoe:
        """A shuffled, uncut shoe. Call :meth:`apply_cut`, :meth:`burn`, :meth:`place_stop`."""
        return cls(cards=shuffle_order(seed, decks), decks=decks, seed=bytes(seed))

    @classmethod
    def stacked(cls, cards: Sequence[str], stop_offset: int = 0) -> Shoe:
        """A shoe dealt in exactly the order given: no cut, no burn (tests and audits)."""
        parsed = [parse_card(c) for c in cards]
        shoe = cls(cards=parsed, decks=0, cut=0)
        if stop_offset:
            shoe.place_stop(stop_offset)
        return shoe

    @property
    def commitment(self) -> str:
        if self.seed is not None:
            return commitment(self.seed)
        return hashlib.sha256(" ".join(self.cards).encode()).hexdigest()

    @property
    def shuffle_key(self) -> bytes | None:
        """What the shuffle and the timeout cut are keyed with: the mixed key, or the seed."""
        return self.key if self.key is not None else self.seed

    def mix(self, values: Iterable[bytes]) -> None:
        """Mix the players' revealed contributions in (before the cut): the order becomes
        :func:`shuffle_order` of :func:`contribution_key` (no value: unchanged)."""
        if self.seed is None or self.cut is not None:
            raise ShoeError("contributions are mixed into a seeded shoe before its cut")
        key = contribution_key(self.seed, values)
        if key != self.seed:
            self.key = key
            self.cards = shuffle_order(key, self.decks)

    @property
    def size(self) -> int:
        return len(self.cards)

    @property
    def remaining(self) -> int:
        return len(self.cards) - self.position

    def apply_cut(self, cut: int) -> None:
        if self.cut is not None:
            raise ShoeError("the shoe is already cut")
        self.cards = cut_order(self.cards, cut)
        self.cut = cut

    def burn(self) -> tuple[str, int]:
        """Show the first card and burn as many as its burn value (§4). Returns both."""
        if self.position != 0:
            raise ShoeError("the burn comes first")
        face = self.cards[0]
        count = min(burn_count(face), len(self.cards) - 1)
        self.burn_card, self.burned = face, count
        self.position = 1 + count
        return face, count

    def place_stop(self, offset: int) -> None:
        """Put the stop card ``offset`` cards from the end (§4: at least 12), in front of
        at least one card."""
        if (
            isinstance(offset, bool)
            or not isinstance(offset, int)
            or not MIN_STOP_OFFSET <= offset < len(self.cards)
        ):
            raise ShoeError(
                f"the stop card goes {MIN_STOP_OFFSET} to {len(self.cards) - 1} cards from "
                f"the end of this shoe of {len(self.cards)}, not {offset!r}"
            )
        self.stop_index = len(self.cards) - offset

    # -- dealing ---------------------------------------------------------------------
    def draw(self) -> str:
        """Take the next card. Marks the stop card out when it is reached (§4)."""
        if self.position >= len(self.cards):
            raise ShoeError("the shoe is empty")
        if self.stop_index is not None and self.position >= self.stop_index:
            self.stop_card_out = True
        card = self.cards[self.position]
        self.position += 1
        self.dealt.append(card)
        return card

    def peek_remaining_counts(self) -> dict[str, int]:
        """Rank counts of the cards not yet dealt or burned (for the odds of what remains).

        Only what the table already made public goes into it: the caller must not show
        these counts before the burned cards are accounted for in the public record.
        """
        counts: dict[str, int] = {}
        for card in self.cards[self.position :]:
            counts[card[0]] = counts.get(card[0], 0) + 1
        return counts

    # -- storage ---------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        # Cards as one string ("As9dTh..."): a shoe is stored at every table step, and
        # one string encodes about four times faster than a list of 416.
        return {
            "cards": "".join(self.cards),
            "decks": self.decks,
            "seed": self.seed.hex() if self.seed is not None else None,
            "cut": self.cut,
            "position": self.position,
            "stop_index": self.stop_index,
            "stop_card_out": self.stop_card_out,
            "burn_card": self.burn_card,
            "burned": self.burned,
            "dealt": "".join(self.dealt),
            "key": self.key.hex() if self.key is not None else None,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Shoe:
        seed = data.get("seed")
        return cls(
            cards=_card_list(data["cards"]),
            decks=int(data["decks"]),
            seed=bytes.fromhex(seed) if seed else None,
            cut=data.get("cut"),
            position=int(data["position"]),
            stop_index=data.get("stop_index"),
            stop_card_out=bool(data.get("stop_card_out")),
            burn_card=data.get("burn_card"),
            burned=int(data.get("burned", 0)),
            dealt=_card_list(data.get("dealt", [])),
            key=bytes.fromhex(data["key"]) if data.get("key") else None,
        )


def _card_list(cards: str | Sequence[str]) -> list[str]:
    """Cards stored as one string of two-character cards, or (older rows) as a list."""
    if isinstance(cards, str):
        return [cards[i : i + 2] for i in range(0, len(cards), 2)]
    return list(cards)


@dataclass(frozen=True)
class VerifyReport:
    """What :func:`verify` found: ``ok`` only when every check passed."""

    ok: bool
    coups_checked: int
    problems: tuple[str, ...]
    #: The players' revealed contributions checked against their commitments and mixed in.
    contributions: int = 0

    def __str__(self) -> str:
        if self.ok:
            mixed = (
                f"; {self.contributions} player contributions match their commitments"
                if self.contributions
                else ""
            )
            return (
                f"OK: seed matches the commitment{mixed}; {self.coups_checked} coups match the shoe"
            )
        return "FAILED:\n" + "\n".join(f"- {p}" for p in self.problems)


def _contributions(record: Mapping[str, Any], problems: list[str]) -> list[bytes]:
    """The revealed values of a record's ``contributions`` (docs/fairness.md), each
    checked against its commitment; ``withheld``, when given, must name exactly the
    players whose value is missing. Problems go to ``problems``; raises ValueError,
    KeyError or TypeError for an entry that cannot be read."""
    values: list[bytes] = []
    missing: list[str] = []
    for n, entry in enumerate(record.get("contributions") or [], start=1):
        who = str(entry.get("player", f"#{n}"))
        claimed = str(entry["commitment"]).lower()
        if entry.get("value") is None:
            missing.append(who)
            continue
        value = bytes.fromhex(str(entry["value"]))
        if len(value) != CONTRIBUTION_BYTES:
            problems.append(f"{who}'s contribution is not {CONTRIBUTION_BYTES} bytes")
        elif commitment(value) != claimed:
            problems.append(f"{who}'s contribution does not match their commitment")
        else:
            values.append(value)
    withheld = record.get("withheld")
    if withheld is not None and sorted(map(str, withheld)) != sorted(missing):
        problems.append(f"withheld: the record says {list(withheld)}, its contributions {missing}")
    return values


def verify(record: Mapping[str, Any]) -> VerifyReport:
    """Check a revealed shoe record against its commitment (§4 "Provably fair").

    ``record`` is the JSON of a revealed shoe (docs/fairness.md): ``decks``,
    ``commitment``, ``seed`` (hex), ``cut``, ``stop_offset``, optionally ``burn_card``
    and ``burned``, the players' ``contributions`` (``{"player", "commitment",
    "value"}``, value null when withheld) and ``withheld``, and ``coups``: a list of
    ``{"player": [...], "banker": [...]}``. Each revealed value must match its
    commitment, and the order is that of the key they make with the seed.
    Every card dealt must be the card the seed and cut put there, in order, and the
    shoe must end where the stop card rule says.
    """
    problems: list[str] = []
    try:
        seed = bytes.fromhex(str(record["seed"]))
        decks = int(record.get("decks", 8))
        cut = int(record["cut"])
        stop_offset = int(record.get("stop_offset", 16))
        coups = list(record.get("coups", []))
        claimed = str(record["commitment"]).lower()
        complete = bool(record.get("complete", True))
        values = _contributions(record, problems)
    except (KeyError, ValueError, TypeError, AttributeError) as exc:
        return VerifyReport(False, 0, (f"not a shoe record: {exc}",))
    if decks not in (1, 2, 4, 6, 8):
        return VerifyReport(False, 0, (f"not a shoe record: {decks} decks",))
    if commitment(seed) != claimed:
        problems.append("the seed does not match the commitment")
    try:
        shoe = Shoe.from_seed(seed, decks)
        shoe.mix(values)
        shoe.apply_cut(cut)
        face, count = shoe.burn()
        shoe.place_stop(stop_offset)
    except (ShoeError, CardError) as exc:
        return VerifyReport(False, 0, (*problems, str(exc)))
    key = shoe.shuffle_key
    if (
        record.get("cut_by") == "croupier"
        and key is not None
        and cut != timeout_cut(key, shoe.size)
    ):
        problems.append(
            f"the timeout cut was {cut}, the shoe's key says {timeout_cut(key, shoe.size)}"
        )
    if record.get("burn_card") not in (None, face):
        problems.append(f"the burn card was {record['burn_card']}, the shoe says {face}")
    if record.get("burned") not in (None, count):
        problems.append(f"{record['burned']} cards were burned, the shoe says {count}")
    checked = 0
    stop_seen_at: int | None = None
    for n, entry in enumerate(coups, start=1):
        if stop_seen_at is not None and n > stop_seen_at + 1:
            problems.append(f"coup {n} was dealt after the last coup of the shoe")
            break
        # The stop card is at least 12 from the end: a coup always has its 6 cards.
        expected = resolve_coup(shoe.cards[shoe.position : shoe.position + 6])
        try:
            got_p = [parse_card(c) for c in entry["player"]]
            got_b = [parse_card(c) for c in entry["banker"]]
        except (KeyError, TypeError, CardError) as exc:
            problems.append(f"coup {n}: unreadable ({exc})")
            break
        if got_p != list(expected.player) or got_b != list(expected.banker):
            problems.append(
                f"coup {n}: recorded P {' '.join(got_p)} / B {' '.join(got_b)}, the shoe "
                f"deals P {' '.join(expected.player)} / B {' '.join(expected.banker)}"
            )
            break
        for _ in range(expected.cards_used):
            shoe.draw()
        checked += 1
        if shoe.stop_card_out and stop_seen_at is None:
            stop_seen_at = n
    if not problems and complete:
        # §4: the shoe ends one coup after the stop card's coup.
        ended = stop_seen_at is not None and checked == stop_seen_at + 1
        if not ended:
            problems.append(f"the record stops after coup {checked}, before the shoe's last coup")
    return VerifyReport(not problems, checked, tuple(problems), len(values))


def record_json(record: Mapping[str, Any]) -> str:
    """A shoe record as canonical JSON (sorted keys), as the server publishes it."""
    return json.dumps(record, sort_keys=True, separators=(",", ":"))
