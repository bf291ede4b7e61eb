"""``chemmy play [--url URL] [--table T [--table T2 ...]] [--token TOKEN | --guest] [--name N]
[--speed 1-5]``: sit at a table, or follow and bet at up to four at once (issue 37 §2:
Tab switches between them).

Only the argument parsing lives here; the full-screen Textual client is
:mod:`client_cli.tui`, imported when the command runs (so ``chemmy odds`` never loads
Textual).
"""

from __future__ import annotations

import argparse
from typing import TypeAlias

from client_cli.common import add_identity_args, add_url_arg, table_url, who
from client_cli.main import CliError

__all__ = ["register", "run_play"]

Subparsers: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"

MAX_TABLES = 4  # as client_cli.tui.app.MAX_TABLES (not imported here: no Textual yet)


def register(subparsers: Subparsers) -> None:
    """Add ``play`` to the ``chemmy`` parser."""
    p = subparsers.add_parser(
        "play",
        help="play at a table (full-screen)",
        description="The full-screen table: the lobby, then seats, bets, the squeeze, "
        "the roads and the odds. Keys and mouse; press ? at the table for help. Follow and "
        f"bet at up to {MAX_TABLES} tables at once: give --table for each (or press j at a "
        "table to join another from the lobby); Tab, Shift+Tab and F1-F4 switch between "
        "them, and a line of tabs shows each table's phase and what waits on you there.",
    )
    add_url_arg(p)
    p.add_argument(
        "--table",
        action="append",
        metavar="T",
        help=f"go straight to this table; repeat it for up to {MAX_TABLES} tables",
    )
    add_identity_args(p)
    p.add_argument(
        "--speed",
        type=int,
        choices=range(1, 6),
        metavar="1-5",
        help="game speed for this run (default: your saved Options; 4 at first)",
    )
    p.set_defaults(run=run_play)


def run_play(args: argparse.Namespace) -> int:
    from dataclasses import replace

    from client_cli.tui import ChemmyApp

    tables = list(dict.fromkeys(args.table or ()))
    if len(tables) > MAX_TABLES:
        raise CliError(f"play: at most {MAX_TABLES} tables (--table), not {len(tables)}")
    w = who(args)
    # One table: its connection says so, for a load balancer that routes by table.
    url = table_url(w.url, tables[0]) if len(tables) == 1 else w.url
    app = ChemmyApp(url, token=w.token, guest=w.guest, name=w.name, table=tables)
    if args.speed is not None:
        app.options = replace(app.options, speed=args.speed)
    result = app.run()
    return int(result or 0)
