"""The Redis store's Lua scripts: each write of money, of a table or of a player's session
is one script (Redis runs it alone), which checks everything first and answers a coded
error reply before it writes anything.

Each script is a ``.lua`` file in ``lua/`` beside this module (Lua, where an editor and
a Lua linter can read it); the three that move money begin with the ledger's rules,
generated from ``server.ledger.rules`` (:data:`LUA_RULES`: the range, the guarded
prefixes, the welcome's key), and the functions of ``lua/common.lua``. Each one's
arguments are said here. This module only reads text: it must never run a script nor
talk to Redis.
"""

from __future__ import annotations

from importlib.resources import files
from typing import Final

from server.ledger.rules import LUA_RULES


def _lua(name: str) -> str:
    """The text of ``lua/<name>.lua``."""
    return (files(__package__) / "lua" / f"{name}.lua").read_text(encoding="utf-8")


# ARGV[1] is always the key prefix. Lua numbers are doubles: amounts are compared as
# numbers (exact below 2**53) but always written from their decimal strings.

#: The head of the scripts that move money: the prefix, the ledger's rules, and the
#: functions that check and post entries, sum flows and hold limit guards.
_LUA_COMMON: Final = "local P = ARGV[1]\n" + LUA_RULES + _lua("common")

#: A commit (docs/architecture.md §10): ARGV: prefix, one msgpack array of strings: the
#: day and the cutoff of the flows, then counted lists of entries, the table row and its
#: parts, events, records, the balances to report, wallet calls and limit guards
#: (``RedisCore._apply``). The epoch and the ledger are checked first, then the writes.
_LUA_COMMIT: Final = _LUA_COMMON + _lua("commit")

# ARGV: prefix, player id, name, account, welcome key, packed, amount ('0': none),
# guest ('1'/'0'), now.
_LUA_ENSURE_PLAYER: Final = _LUA_COMMON + _lua("ensure_player")

# ARGV: prefix, cutoff, player ids... Expires each idle guest whose only entry is their
# untouched welcome; a guest with more is dropped from the candidates for good (the
# ledger only grows) until their next hello.
_LUA_EXPIRE: Final = _LUA_COMMON + _lua("expire")

# ARGV: prefix, transaction id, the stored value read, the new one, due ('1'/'0'),
# next_at. Writes only if the call is still as read (an atomic compare-and-set: the
# merge is made in Python, where the JSON is); answers 1 (written), 0 (no such call)
# or -1 (changed meanwhile: read it again).
_LUA_UPDATE_CALL: Final = _lua("update_call")

# A player's play session (``play_sessions``: its JSON but for ``seen``; ``play_seen``:
# when a connection of theirs was last seen, apart so that a touch is one small write).
# ARGV: prefix, player, the session read ('' none), its seen read ('' none), the new
# session, its seen. Writes only if both are still as read (an atomic compare-and-set:
# the caller's rule is run in Python, ``rule=``); answers 1 (written) or 0
# (changed meanwhile: read it again).
_LUA_PLAY_SET: Final = _lua("play_set")

# What a bet is checked against (issue 36). KEYS (tracked: ``server.connect.tracking``): the
# restrictions, limits, play sessions, their seen, the player's flows (if limits); ARGV: the player.
_LUA_BET_READS: Final = _lua("bet_reads")

# ARGV: prefix, table id. A table closed before the commit took closed tables off the
# open list ('tables') is taken off it, unless it was opened again.
_LUA_UNLIST: Final = _lua("unlist")

# ARGV: prefix, now, players...: each one's seen becomes now, unless it is later
# already or they have no session.
_LUA_PLAY_TOUCH: Final = _lua("play_touch")

# The operator's calls made once: a hash per key (``fingerprint``, ``body``: the record)
# that expires. ARGV: the key, the fingerprint, the record, the milliseconds to keep it.
# A claim answers the record kept, or (nothing kept) keeps this one and answers false.
_LUA_CLAIM_CALL: Final = _lua("claim_call")

# Keep the answer's record if the key is still this fingerprint's.
_LUA_ANSWER_CALL: Final = _lua("answer_call")
