"""The table's one error: a rule refused the move (the player's move, not a bad frame).

Every refusal has a stable ``code`` (clients switch on it) and a human ``message``.
A refused command changes nothing.
"""

from __future__ import annotations

__all__ = ["TableError"]


class TableError(Exception):
    """A command the table rules do not allow now."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message

    def __repr__(self) -> str:
        return f"TableError({self.code!r}, {self.message!r})"
