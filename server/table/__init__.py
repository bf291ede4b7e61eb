"""The shared table: a pure state machine over the engine (GAME_RULES §3-§8).

Commands in, events out, time passed in as ``now``. Never any I/O, clock or global
random here: the server (``server.croupier``) feeds it and delivers what it returns.
"""

from . import commands
from .errors import TableError
from .events import Event
from .options import TIERS, Limits, OptionsError, TableOptions, Timers
from .table import Phase, Table
from .views import view_event
from .wallet import MemoryWallet, Wallet

__all__ = [
    "TIERS",
    "Event",
    "Limits",
    "MemoryWallet",
    "OptionsError",
    "Phase",
    "Table",
    "TableError",
    "TableOptions",
    "Timers",
    "Wallet",
    "commands",
    "view_event",
]
