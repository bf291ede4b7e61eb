"""``chemmy play [--url URL] [--table T] [--token TOKEN | --guest] [--name N] [--speed 1-5]``:
sit at a table.

Only the argument parsing lives here; the full-screen Textual client is
:mod:`client_cli.tui`, imported when the command runs (so ``chemmy odds`` never loads
Textual).
"""

from __future__ import annotations

import argparse
from typing import TypeAlias

from client_cli.common import add_identity_args, add_url_arg, who

__all__ = ["register", "run_play"]

Subparsers: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"


def register(subparsers: Subparsers) -> None:
    """Add ``play`` to the ``chemmy`` parser."""
    p = subparsers.add_parser(
        "play",
        help="play at a table (full-screen)",
        description="The full-screen table: the lobby, then seats, bets, the squeeze, "
        "the roads and the odds. Keys and mouse; press ? at the table for help.",
    )
    add_url_arg(p)
    p.add_argument("--table", metavar="T", help="go straight to this table")
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

    w = who(args)
    app = ChemmyApp(w.url, token=w.token, guest=w.guest, name=w.name, table=args.table)
    if args.speed is not None:
        app.options = replace(app.options, speed=args.speed)
    result = app.run()
    return int(result or 0)
