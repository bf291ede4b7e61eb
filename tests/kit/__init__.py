"""The test and bench toolkit: one launcher, one protocol client, one table driver.

Everything that talks to a live Chemmy server from a test or a benchmark comes from here:

- :mod:`.launch`: :class:`ServerProcess`, ``chemmy-server`` as a subprocess on port 0
  (the port read from its listening line), killed, terminated and restarted on the same
  database; :class:`Process` for any other such child; :func:`refused_port`;
  :func:`run_bench`, a benchmark run as a person runs it.
- :mod:`.inproc`: :class:`~.inproc.Net`, servers in the test's own process, for tests
  that look inside one (the ``net`` fixture of tests/server). Imported on its own
  (``from tests.kit.inproc import Net``) so that the rest of the kit does not load the server.
- :mod:`.client`: :class:`Client`, the recording protocol client; :func:`open_player`,
  :func:`open_guest`, :func:`http_get`.
- :mod:`.game`: :class:`Game`, the table driver (:meth:`Game.to_betting`, the one "play
  until betting opens"; :meth:`Game.play_coup`), and :class:`CoupLog`.
- :mod:`.oracle`: the rules as GAME_RULES.md states them, to check the server against;
  what a frame may not show.
- :mod:`.timing` and :mod:`.tables`: the one timeout factor
  (``CHEMMY_TESTS_TIMEOUT_FACTOR``), test table definitions and secrets.
- :mod:`.operator`: :class:`~.operator.SignedOperator`, calls to a server's operator API signed
  with the tests' operator key, and :func:`~.operator.audited`, the books checked.
- :mod:`.crash`: the crash and drain tests' table of three players over a server
  subprocess, and their checks of the database it left.

The package has one name, ``tests.kit``, to the tests (pytest's ``pythonpath`` puts the
repository root first), the benchmarks (run from the root as ``python -m bench.NAME``)
and ``scripts/cluster`` (which puts the root on its path); ``tests`` is a package of its
own (tests/__init__.py), so no other ``tests`` installed anywhere can stand in for it.
Nothing here is imported by the server or the client: this is test code.
"""

from __future__ import annotations

from .client import (
    FORMATS,
    JSON,
    MSGPACK,
    Client,
    Frame,
    ProtocolProblem,
    decode_frame,
    encode_frame,
    http_get,
    open_guest,
    open_player,
)
from .game import PROMPTS, CoupLog, Game, StylePolicy
from .launch import ROOT, Process, ServerProcess, refused_port, run_bench
from .oracle import (
    BALANCE_KEYS,
    CARD,
    baccarat,
    card_points,
    expected_payout,
    total,
    walk,
    without_actions,
)
from .tables import OTHER_SECRET, SECRET, server_toml, table_def, timers
from .timing import TIMEOUT_FACTOR, scaled

__all__ = [
    "BALANCE_KEYS",
    "CARD",
    "FORMATS",
    "JSON",
    "MSGPACK",
    "OTHER_SECRET",
    "PROMPTS",
    "ROOT",
    "SECRET",
    "TIMEOUT_FACTOR",
    "Client",
    "CoupLog",
    "Frame",
    "Game",
    "Process",
    "ProtocolProblem",
    "ServerProcess",
    "StylePolicy",
    "baccarat",
    "card_points",
    "decode_frame",
    "encode_frame",
    "expected_payout",
    "http_get",
    "open_guest",
    "open_player",
    "refused_port",
    "run_bench",
    "scaled",
    "server_toml",
    "table_def",
    "timers",
    "total",
    "walk",
    "without_actions",
]
