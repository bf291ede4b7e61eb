"""The full-screen Chemmy client (``chemmy play``), built with Textual.

- :mod:`.app` — :class:`ChemmyApp`: the connection, the model, the command queue;
- :mod:`.lobby` — the tables; :mod:`.table` — the table screen;
- :mod:`.screens` — history, the roads and odds, the rules;
- :mod:`.popups` — the cut, the options, a break and the reality check;
- :mod:`.keys` — every key and button label; ``chemmy.tcss`` — the layout.

Only :mod:`client_cli.play` imports this package, when ``chemmy play`` runs, so the other
subcommands never load Textual. Nothing here decides a rule of the game.
"""

from __future__ import annotations

from client_cli.options import Options
from client_cli.tui.app import ChemmyApp
from client_cli.tui.lobby import LobbyScreen
from client_cli.tui.popups import BreakScreen, CutScreen, OptionsScreen, RealityScreen
from client_cli.tui.screens import HelpScreen, HistoryScreen, RoadsScreen, rules_text
from client_cli.tui.table import TableScreen, chip_values

__all__ = [
    "BreakScreen",
    "ChemmyApp",
    "CutScreen",
    "HelpScreen",
    "HistoryScreen",
    "LobbyScreen",
    "Options",
    "OptionsScreen",
    "RealityScreen",
    "RoadsScreen",
    "TableScreen",
    "chip_values",
    "rules_text",
]
