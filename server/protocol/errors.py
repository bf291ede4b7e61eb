"""The one error tree of Chemmy's wire errors.

Every error that can reach a client is a :class:`ChemmyError` with a stable,
machine-readable ``code`` (what a client switches on) and a human ``message`` (what a
person reads). The subclasses say whose fault it was, as h11 separates local from
remote protocol errors:

.. code-block:: text

    ChemmyError
    ├── ProtocolError      malformed message: the client's bug
    │                      ("bad_frame", "bad_message", ...)
    ├── Refused            a rule refused the move: the player's move
    │   └── (the table module's own refusal, e.g. "bet_closed", ...)
    └── AuthError          (server/net/auth.py) "bad_token", "token_expired",
                           "auth_required"

This module is pure and tiny. It must never import anything of the shell (sockets,
storage) and an error's message must never carry a secret (a token, a shoe seed, an
undealt card): messages are sent to clients as they are.
"""

from __future__ import annotations

from typing import Any

__all__ = ["ChemmyError", "ProtocolError", "Refused"]


class ChemmyError(Exception):
    """Base class of every error a client may be told about."""

    code: str
    message: str

    def __init__(self, code: str, message: str) -> None:
        super().__init__(code, message)
        self.code = code
        self.message = message

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.code!r}, {self.message!r})"

    def to_dict(self) -> dict[str, Any]:
        """The error as the body of an ``error`` message."""
        return {"code": self.code, "message": self.message}


class ProtocolError(ChemmyError):
    """A malformed frame or message: the client's bug, not the player's move."""


class Refused(ChemmyError):
    """A rule refused the move; the table's own refusals subclass this."""
