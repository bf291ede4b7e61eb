"""Events a table emits.

An :class:`Event` has public ``data`` everyone may see and an optional ``private``
overlay per player (a turner's squeezed cards, a player's own balance). Everything
sent to anyone passes through :func:`server.table.views.view_event`. Undealt cards,
burned cards and a shoe's seed before its reveal are never put in an event at all.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["Event"]


@dataclass(frozen=True, slots=True)
class Event:
    seq: int
    kind: str
    data: dict[str, Any]
    private: dict[str, dict[str, Any]] | None = None

    def audience(self) -> frozenset[str]:
        """The players who see more than the public data."""
        return frozenset(self.private or ())

    def to_dict(self) -> dict[str, Any]:
        """The full event, private parts included: for the store, never for a client."""
        return {"seq": self.seq, "kind": self.kind, "data": self.data, "private": self.private}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Event:
        return cls(int(d["seq"]), str(d["kind"]), dict(d["data"]), d.get("private"))
