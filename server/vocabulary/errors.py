"""The table's one error: a rule refused the move (the player's move, not a bad frame).

Every refusal has a stable ``code`` (clients switch on it) and a human ``message``.
A refused command changes nothing. It is a :class:`server.protocol.errors.Refused`,
so the server reports it like every other refusal.
"""

from __future__ import annotations

from server.protocol.errors import Refused

__all__ = ["TableError", "refuse"]


class TableError(Refused):
    """A command the table rules do not allow now."""


def refuse(refused: TableError | None) -> None:
    """A check: raise the refusal a rule returned (:mod:`server.table.rules`), if any."""
    if refused is not None:
        raise refused
