"""What a table actor is started with (:class:`ActorSettings`) and what it tells its
croupier (:class:`ActorHooks`): two records in place of a long list of arguments.

Plain records: they never do anything themselves, and a hook never steps a table (it
hears what the actor did, after the fact).
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from server.vocabulary import commands as c
from server.vocabulary.events import Event
from server.wallet.base import Wallet

from .seamless import BeforeDebits

if TYPE_CHECKING:
    from .actor import TableActor

__all__ = ["ActorHooks", "ActorSettings"]


@dataclass(frozen=True, slots=True)
class ActorSettings:
    """How one actor runs its table: what it was started with, and its tools."""

    config: dict[str, Any] = field(default_factory=dict)  # the table's stored definition
    #: The epoch this owner claimed: every write carries it, and the store refuses it
    #: once a newer owner has claimed the table (fencing).
    epoch: int = 0
    #: Restored after a stop: the table hears ``Restored`` before anything else.
    restored: bool = False
    #: The parts of the table's bettors without a seat as stored (GAME_RULES §5).
    parts: Mapping[str, dict[str, Any]] | None = None
    queue_size: int = 256
    #: Where the players' money lives (docs/wallet.md): an operator's, or none (ledger).
    money: Wallet | None = None
    wallet_timeout: float = 3.0
    clock: Callable[[], float] = time.time
    new_seed: Callable[[], bytes] = lambda: secrets.token_bytes(32)


@dataclass(frozen=True, slots=True)
class ActorHooks:
    """What the actor tells its croupier (each optional)."""

    #: After each delivered step: the command and its events.
    on_step: Callable[[TableActor, c.Command, list[Event]], None] | None = None
    #: The table closed (its ``close`` step stored): the actor's last step.
    on_closed: Callable[[TableActor], None] | None = None
    #: The store failed a step (False), or works again (True).
    on_store: Callable[[TableActor, bool], None] | None = None
    #: A newer owner took the table: this actor writes nothing more.
    on_lost: Callable[[TableActor], None] | None = None
    #: Credits and rollbacks stored (with a step, or a debit run's): deliver them.
    on_calls: Callable[[list[dict[str, Any]]], None] | None = None
    #: Before a coup's debits: their players' unanswered credits and rollbacks
    #: delivered, until the debits' deadline; who still waits for one.
    before_debits: BeforeDebits | None = None
    #: After a coup's debits: their time (seconds) and each answer's outcome.
    on_debits: Callable[[float, list[str]], None] | None = None
