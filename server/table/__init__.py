"""The shared table: a pure state machine over the engine (GAME_RULES §3-§8).

Commands in, a :class:`Step` (events and what the shell needs to know) out, time passed
in as ``now``. Never any I/O, clock or global random here: the server
(``server.croupier``) feeds it and delivers what it returns.

The modules, one seam each:

- :mod:`.rules`: which commands each phase takes, each command's bounds (written once,
  for the checks and the actions), and each player's ``actions``;
- :mod:`.actions`: keeping each player's actions current (what changed, sent to whom);
- :mod:`.table`: the machine's way in (``handle``, ``verify``, ``can``);
- :mod:`.dispatch`: each command's check and do, named (``HANDLERS``), each in its
  sub-machine: :mod:`.seating`, :mod:`.shoe_offer`, :mod:`.contributing`,
  :mod:`.betting`, :mod:`.turning`, :mod:`.voiding`;
- :mod:`.flow`: what moves the table on by itself (``NEXT``, ``ENTER``, the timers);
- :mod:`.felt`: the chips on the felt, kept as they are laid;
- :mod:`.state`: the records it is made of (phases, players, the coup, the offer);
- :mod:`.settlement`: paying a coup, and the round and shoe records;
- :mod:`.persistence`: the state as plain data, and back;
- :mod:`.views`: what each viewer may see (the one place that decides it).

The words it is defined, told and answered in (its options, commands, events and
errors) are the vocabulary's, ``server.vocabulary``, a room below it; its wallet and
accounts are the ledger's, ``server.ledger.accounts``. This package re-exports the names
a caller of the core needs (``Table``, ``TableOptions``, ``TableError``...).
"""

from server.ledger.accounts import (
    DuplicateEntry,
    InsufficientFunds,
    MemoryWallet,
    Wallet,
    stake_account,
)
from server.vocabulary import commands
from server.vocabulary.errors import TableError
from server.vocabulary.events import Event, Step
from server.vocabulary.options import TIERS, Limits, OptionsError, TableOptions, Timers

from . import rules, views
from .table import Phase, Table
from .views import view_event

__all__ = [
    "TIERS",
    "DuplicateEntry",
    "Event",
    "InsufficientFunds",
    "Limits",
    "MemoryWallet",
    "OptionsError",
    "Phase",
    "Step",
    "Table",
    "TableError",
    "TableOptions",
    "Timers",
    "Wallet",
    "commands",
    "rules",
    "stake_account",
    "view_event",
    "views",
]
