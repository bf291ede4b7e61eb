"""This client's own randomness in every shoe it sits at (docs/fairness.md §9).

The server lists ``contribute`` in a seated player's actions with ``step`` ``commit``
from ``shoe_started`` until the cut, and ``reveal`` after it, once committed. A
:class:`Contributor` answers them by itself: it draws 32 bytes from the platform's
secure generator (:func:`secrets.token_bytes`) for the shoe, sends their SHA-256 as the
commitment, keeps the bytes in memory until the reveal, then sends them. The terminal
client and the bots use it; what it sends is never a choice of the player's.

Pure but for the generator (injected, so tests can give their own).
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Callable

from client_cli.model import TableModel

__all__ = ["Contributor"]


class Contributor:
    """Commit and reveal once per shoe, as the actions say (each at most once)."""

    def __init__(self, draw: Callable[[int], bytes] = secrets.token_bytes) -> None:
        self._draw = draw
        self.values: dict[int, bytes] = {}  # shoe number -> this client's secret value
        self._sent: set[tuple[int, str]] = set()
        self.revealed: set[int] = set()  # shoes this client's value is in

    def next(self, model: TableModel) -> dict[str, str] | None:
        """The ``contribute`` fields to send now (``commitment`` or ``value``), or None."""
        step = model.action("contribute").get("step")
        shoe = (model.shoe or {}).get("no")
        if not isinstance(shoe, int) or step not in ("commit", "reveal"):
            return None
        if (shoe, step) in self._sent:
            return None
        if step == "commit":
            value = self.values.setdefault(shoe, self._draw(32))
            self._sent.add((shoe, step))
            for old in [n for n in self.values if n < shoe - 1]:  # only the last shoes kept
                del self.values[old]
            return {"commitment": hashlib.sha256(value).hexdigest()}
        kept = self.values.get(shoe)
        if kept is None:  # committed by another client of this player: nothing to reveal
            return None
        self._sent.add((shoe, step))
        self.revealed.add(shoe)
        return {"value": kept.hex()}
