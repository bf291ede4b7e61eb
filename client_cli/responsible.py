"""``chemmy break``: a time-out or a self-exclusion from play (issue 21), and what is in
force; ``chemmy limits``: the limits you set on your own play.

* ``chemmy break``: says whether a break or a self-exclusion is in force, and until when;
* ``chemmy break PERIOD``: takes one from now: ``24h``, ``week``, ``month`` (a break) or
  ``exclude_6m``, ``exclude_1y``, ``exclude_5y`` (a self-exclusion). It asks first (type
  ``yes``), or ``--yes`` confirms it beforehand. Once taken, it cannot be shortened: until
  it ends the server refuses to seat you or take your bets (``player_blocked``), and the
  chips you have placed come back.

* ``chemmy limits``: every limit in force, in plain words (``Daily loss limit: 50.00 —
  12.00 left``), a raise or a removal that waits its 24 hours as pending;
* ``chemmy limits set KIND AMOUNT``: set one: KIND is ``loss_day``, ``loss_week``,
  ``loss_month``, ``wager_day`` … ``wager_month``, ``deposit_day`` … ``deposit_month``
  (AMOUNT in your currency as you would write it: ``50`` or ``12.50``) or ``session``
  (AMOUNT in minutes). A lower limit applies at once, a higher one after 24 hours;
* ``chemmy limits remove KIND``: remove one (after 24 hours).

They need a lasting identity (``--token`` or ``$CHEMMY_TOKEN``): a guest is a new player
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

__all__ = ["PERIODS", "register", "run_limits"]

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

    from client_cli.sentences import LIMIT_KINDS

    p = subparsers.add_parser(
        "limits",
        help="the limits you set on your own play",
        description="Without arguments: the limits in force. 'set KIND AMOUNT' sets one,"
        " 'remove KIND' removes one. KIND: " + ", ".join(LIMIT_KINDS) + "; AMOUNT in your"
        " currency (50, 12.50), or minutes for session. A lower limit applies at once; a"
        " higher one, or a removal, after 24 hours.",
    )
    p.add_argument(
        "words",
        nargs="*",
        metavar="set KIND AMOUNT | remove KIND",
        help="what to change (nothing: show the limits)",
    )
    _common(p)
    p.set_defaults(run=run_limits)


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


def _limit_change(words: list[str]) -> tuple[str, str, str | None] | None:
    """``[]`` -> None (show); ``set KIND AMOUNT`` / ``remove KIND`` -> (action, kind,
    amount); anything else is a usage error."""
    from client_cli.sentences import LIMIT_KINDS

    if not words:
        return None
    url = next((w for w in words if "://" in w), None)
    if url is not None:  # a server URL given where the command takes something else
        raise CliError(
            f"limits: unrecognized argument: {url} (give the server as --url URL, or set"
            " $CHEMMY_URL)"
        )
    action, rest = words[0], words[1:]
    if action not in ("set", "remove") or len(rest) != (2 if action == "set" else 1):
        raise CliError("limits: give nothing, 'set KIND AMOUNT' or 'remove KIND'")
    kind = rest[0]
    if kind not in LIMIT_KINDS:
        raise CliError(f"limits: not a limit: {kind!r} (one of {', '.join(LIMIT_KINDS)})")
    return action, kind, rest[1] if action == "set" else None


def _limit_amount(kind: str, text: str) -> int:
    """AMOUNT as the server takes it: minor units of the player's currency (read once
    the hello has said which), or whole minutes for ``session``."""
    from client_cli.money import parse_money

    if kind == "session":
        if not text.isdigit() or not 1 <= int(text) <= 1440:
            raise CliError(f"limits: a session limit is whole minutes, 1 to 1440, not {text!r}")
        return int(text)
    try:
        amount = parse_money(text)
    except ValueError as exc:
        raise CliError(f"limits: {exc}") from None
    if amount <= 0:
        raise CliError(f"limits: the amount must be positive, not {text!r}")
    return amount


def _first_look(kind: str, text: str) -> None:
    """A usage error before anything is asked: not minutes, not money (read as play
    money here: how many decimals the player's currency takes is the hello's)."""
    from client_cli.money import parse_money

    if kind == "session":
        _limit_amount(kind, text)
        return
    try:
        amount = parse_money(text, currency=None)
    except ValueError as exc:
        if "decimals" not in str(exc):  # (three are fine in KWD)
            raise CliError(f"limits: {exc}") from None
        return
    if amount <= 0:
        raise CliError(f"limits: the amount must be positive, not {text!r}")


def run_limits(args: argparse.Namespace) -> int:
    from client_cli.sentences import limit_change_text, limits_text

    change = _limit_change(list(args.words))
    if change is not None and change[2] is not None:
        _first_look(change[1], change[2])
    _note_guest(args)

    async def ask(conn: Connection) -> dict[str, Any]:
        if change is None:
            reply = await conn.request("limits")
        elif change[0] == "set":
            amount = _limit_amount(change[1], str(change[2]))  # in the hello's currency
            reply = await conn.request("set_limit", kind=change[1], amount=amount)
        else:
            reply = await conn.request("remove_limit", kind=change[1])
        out = {"player": conn.player, "limits": reply.get("limits") or {}}
        out["session"] = reply.get("session")
        if change is not None:
            out["changed"] = change[1]
        return out

    def show(result: dict[str, Any]) -> str:
        text = limits_text(result)
        if "changed" in result:
            return f"{limit_change_text(result['changed'], result)}\n{text}"
        return text

    who(args)
    return _run(args, ask, show)


def _confirmed(period: str) -> bool:
    """Ask on the terminal; refuse to guess when nobody is there to answer."""
    if not sys.stdin.isatty():
        raise CliError("break: give --yes to confirm it (there is no terminal to ask)")
    answer = input(
        f"Take {PERIODS[period]} from now? It cannot be shortened: until it ends you "
        "cannot sit or bet. Type yes to confirm: "
    )
    return answer.strip().lower() == "yes"
