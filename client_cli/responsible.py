"""``chemmy break``: a time-out or a self-exclusion from play (issue 21), and what is in
force.

* ``chemmy break``: says whether a break or a self-exclusion is in force, and until when;
* ``chemmy break PERIOD``: takes one from now: ``24h``, ``week``, ``month`` (a break) or
  ``exclude_6m``, ``exclude_1y``, ``exclude_5y`` (a self-exclusion). It asks first (type
  ``yes``), or ``--yes`` confirms it beforehand. Once taken, it cannot be shortened: until
  it ends the server refuses to seat you or take your bets (``player_blocked``), and the
  chips you have placed come back.

It needs a lasting identity (``--token`` or ``$CHEMMY_TOKEN``): a guest is a new player
on every connection. Exit status: 0 done (or not confirmed: nothing taken); 1 the server
refused or could not be reached; 2 a usage error.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any, TypeAlias

from client_cli.common import who
from client_cli.main import CliError
from client_cli.scripts import _common, _note_guest, _run

if TYPE_CHECKING:
    from client_cli.connection import Connection

__all__ = ["PERIODS", "register"]

Subparsers: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"

#: The server's periods (docs/protocol.md §6 ``take_break``) and what each is, as help.
PERIODS = {
    "24h": "a break of 24 hours",
    "week": "a break of a week",
    "month": "a break of a month (30 days)",
    "exclude_6m": "a self-exclusion of 6 months",
    "exclude_1y": "a self-exclusion of a year",
    "exclude_5y": "a self-exclusion of 5 years",
}


def register(subparsers: Subparsers) -> None:
    """Add ``break`` to the ``chemmy`` parser."""
    p = subparsers.add_parser(
        "break",
        help="take a break from play, or exclude yourself",
        description="Without PERIOD: what is in force. With PERIOD, from now on: "
        + "; ".join(f"{k}: {v}" for k, v in PERIODS.items())
        + ". It cannot be shortened: until it ends you cannot sit or bet.",
    )
    p.add_argument("period", nargs="?", choices=tuple(PERIODS), metavar="PERIOD")
    p.add_argument("--yes", action="store_true", help="confirm it without being asked")
    _common(p)
    p.set_defaults(run=run_break)


def run_break(args: argparse.Namespace) -> int:
    from client_cli.sentences import restriction_text

    _note_guest(args)
    if args.period is not None and not args.yes and not _confirmed(args.period):
        print("Nothing taken.", file=sys.stderr)
        return 0

    async def ask(conn: Connection) -> dict[str, Any]:
        if args.period is None:
            reply = await conn.request("responsible")
        else:
            reply = await conn.request("take_break", period=args.period)
        return {"player": conn.player, "restriction": reply.get("restriction")}

    who(args)  # (a bad --url is a usage error before anything is asked)
    return _run(args, ask, lambda r: restriction_text(r["restriction"]))


def _confirmed(period: str) -> bool:
    """Ask on the terminal; refuse to guess when nobody is there to answer."""
    if not sys.stdin.isatty():
        raise CliError("break: give --yes to confirm it (there is no terminal to ask)")
    answer = input(
        f"Take {PERIODS[period]} from now? It cannot be shortened: until it ends you "
        "cannot sit or bet. Type yes to confirm: "
    )
    return answer.strip().lower() == "yes"
