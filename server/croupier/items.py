"""What passes through a table actor (:mod:`server.croupier.actor`): a queued item and a
step the store kept.

Plain records: they never do anything themselves (no store, no bus, no table calls).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from server.protocol.records import CommandRecord
from server.vocabulary import commands as c
from server.vocabulary.events import Event, Step

__all__ = ["Happened", "Item"]


@dataclass(slots=True)
class Item:
    """One thing for the actor to do: a record from a gateway or a croupier command."""

    record: CommandRecord | None = None
    command: c.Command | None = None
    done: asyncio.Future[list[Event]] | None = None  # the croupier's own calls wait on it


@dataclass(slots=True)
class Happened:
    """A step the store kept: the command, the table's step, and its events."""

    command: c.Command
    step: Step
    events: list[Event]
