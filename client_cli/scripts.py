"""Online one-shot subcommands of ``chemmy``: plain text for people, ``--json`` for machines.

* ``chemmy tables``: the lobby: every table with its limits, seats taken and phase;
* ``chemmy balance``: your balance and what is available to bet;
* ``chemmy deposit AMOUNT``: add money (AMOUNT in the player's currency, as the hello
  reply says: ``25`` or ``12.50`` of play money, no decimals in JPY; ``--key K`` makes a
  retried deposit count once);
* ``chemmy history``: your last rounds (up to 100) and their net result.

Each connects (``--url``, default ``ws://127.0.0.1:8765`` or ``$CHEMMY_URL``), says
hello with ``--token``/``$CHEMMY_TOKEN`` or as a guest, asks, prints and closes. A
guest is a new player on every connection, so ``balance`` and ``history`` of a lasting
identity need a token. :func:`fetch_shoe_record` serves ``chemmy verify --table T``.
Every amount printed is in the player's currency (:mod:`client_cli.money`, set by the
hello; play money for guests), and the lobby lists only that currency's tables.

Exit status: 0 done; 1 the server refused or could not be reached; 2 a usage error.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import uuid
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeAlias, TypeVar

from client_cli.common import Who, add_identity_args, add_url_arg, who
from client_cli.main import CliError

if TYPE_CHECKING:
    from client_cli.connection import Connection

__all__ = ["add_verify_server_args", "fetch_shoe_record", "register"]

Subparsers: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"
T = TypeVar("T")

EXIT_REFUSED = 1
GUEST_NOTE = (
    "note: a guest is a new player on every connection; "
    "use --token or $CHEMMY_TOKEN for a lasting balance and history"
)


class Refused(Exception):
    """The server said no, or could not be reached: one line on stderr, exit 1."""


def register(subparsers: Subparsers) -> None:
    """Add ``tables``, ``balance``, ``deposit`` and ``history`` to the ``chemmy`` parser."""
    p = subparsers.add_parser(
        "tables",
        help="list the server's tables",
        description="The lobby: tables, limits, seats taken, phase.",
    )
    _common(p)
    p.set_defaults(run=run_tables)

    p = subparsers.add_parser(
        "balance", help="your balance", description="Your balance and what is available to bet."
    )
    _common(p)
    p.set_defaults(run=run_balance)

    p = subparsers.add_parser(
        "deposit",
        help="add play money",
        description="Add play money to your balance. AMOUNT is in currency units (25, 12.50).",
    )
    p.add_argument("amount", metavar="AMOUNT", help="how much, e.g. 25 or 12.50")
    p.add_argument(
        "--key",
        metavar="KEY",
        help="an idempotency key: a deposit retried with the same key counts once",
    )
    _common(p)
    p.set_defaults(run=run_deposit)

    p = subparsers.add_parser(
        "history",
        help="your last rounds",
        description="Your last rounds (at most 100), newest first.",
    )
    p.add_argument(
        "--limit",
        type=_limit,
        default=100,
        metavar="N",
        help="how many rounds, 1-100 (default 100)",
    )
    _common(p)
    p.set_defaults(run=run_history)


def _common(p: argparse.ArgumentParser) -> None:
    add_url_arg(p)
    add_identity_args(p)
    p.add_argument("--json", action="store_true", help="print JSON for machines")


def _limit(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if not 1 <= n <= 100:
        raise argparse.ArgumentTypeError(f"must be 1-100, not {n}")
    return n


# ---------------------------------------------------------------------------- running


async def _with_connection(w: Who, fn: Callable[[Connection], Awaitable[T]]) -> T:
    from client_cli.connection import Connection, ConnectionLost, ServerError

    conn = Connection(
        w.url, token=w.token, guest=w.guest, name=w.name, reconnect=False, open_timeout=10
    )
    try:
        await conn.start()
    except ConnectionLost as exc:
        raise Refused(str(exc)) from None
    except ServerError as exc:
        raise Refused(f"the server refused hello: {exc.message}") from None
    try:
        return await fn(conn)
    except ServerError as exc:
        raise Refused(f"the server refused: {exc.message} ({exc.code})") from None
    except ConnectionLost as exc:
        raise Refused(f"the connection dropped: {exc}") from None
    finally:
        await conn.close()


def _run(
    args: argparse.Namespace,
    fn: Callable[[Connection], Awaitable[dict[str, Any]]],
    show: Callable[[dict[str, Any]], str],
) -> int:
    w = who(args)
    try:
        result = asyncio.run(_with_connection(w, fn))
    except Refused as exc:
        print(f"chemmy: {args.command}: {exc}", file=sys.stderr)
        return EXIT_REFUSED
    if args.json:
        print(json.dumps(result, ensure_ascii=False, indent=2, sort_keys=True))
    else:
        print(show(result))
    return 0


def _note_guest(args: argparse.Namespace) -> None:
    if who(args).guest and not args.json:
        print(GUEST_NOTE, file=sys.stderr)


# ---------------------------------------------------------------------------- tables


def run_tables(args: argparse.Namespace) -> int:
    async def fetch(conn: Connection) -> dict[str, Any]:
        reply = await conn.request("tables")
        return {"tables": list(reply.get("tables") or [])}

    return _run(args, fetch, format_tables)


def format_tables(result: dict[str, Any]) -> str:
    from client_cli.money import format_money

    rows = [("TABLE", "NAME", "LIMITS", "TIE MAX", "SEATS", "PHASE", "SHOE", "COUP")]
    for t in result["tables"]:
        lim = t.get("limits") or {}
        rows.append(
            (
                str(t.get("table")),
                str(t.get("name", "")),
                f"{format_money(int(lim.get('min', 0)))}-{format_money(int(lim.get('max', 0)))}",
                format_money(int(lim.get("tie_max", 0))),
                f"{t.get('seated', 0)}/{t.get('seats', 0)}",
                str(t.get("phase", "")),
                str(t.get("shoe_no", "")),
                str(t.get("coup_no", "")),
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join(
        "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows
    )


# ---------------------------------------------------------------------------- balance


def run_balance(args: argparse.Namespace) -> int:
    _note_guest(args)

    async def fetch(conn: Connection) -> dict[str, Any]:
        reply = await conn.request("balance")
        return {
            "player": conn.player,
            "name": conn.identity.get("name"),
            "guest": bool(conn.identity.get("guest")),
            "balance": reply.get("balance"),
            "available": reply.get("available"),
        }

    return _run(args, fetch, format_balance)


def format_balance(r: dict[str, Any]) -> str:
    from client_cli.money import format_money

    line = f"Balance {format_money(int(r['balance']))}"
    if r.get("available") is not None and r["available"] != r["balance"]:
        line += f" (available {format_money(int(r['available']))})"
    return f"{line} — {r.get('name')} ({r.get('player')})"


# ---------------------------------------------------------------------------- deposit


def run_deposit(args: argparse.Namespace) -> int:
    from client_cli.money import parse_money

    try:  # a first look, as play money: read again once the currency is known
        amount = parse_money(args.amount, currency=None)
    except ValueError as exc:
        if "decimals" not in str(exc):  # (three are fine in KWD)
            raise CliError(f"deposit: {exc}") from None
        amount = 1
    if amount <= 0:
        raise CliError(f"deposit: the amount must be positive, not {args.amount!r}")
    key = args.key or f"cli-{uuid.uuid4().hex}"
    if len(key) > 64:
        raise CliError("deposit: --key is at most 64 characters")
    _note_guest(args)

    async def deposit(conn: Connection) -> dict[str, Any]:
        nonlocal amount
        try:  # again, in the player's currency (the hello's): no decimals in JPY
            amount = parse_money(args.amount)
        except ValueError as exc:
            raise CliError(f"deposit: {exc}") from None
        reply = await conn.request("deposit", amount=amount, mid=key)
        return {
            "player": conn.player,
            "name": conn.identity.get("name"),
            "deposited": amount,
            "balance": reply.get("balance"),
            "duplicate": bool(reply.get("duplicate")),
            "key": key,
        }

    return _run(args, deposit, format_deposit)


def format_deposit(r: dict[str, Any]) -> str:
    from client_cli.money import format_money

    if r.get("duplicate"):
        return f"Already deposited (key {r['key']}): balance {format_money(int(r['balance']))}"
    return f"Deposited {format_money(int(r['deposited']))}: balance {format_money(int(r['balance']))} — {r.get('name')} ({r.get('player')})"


# ---------------------------------------------------------------------------- history


def run_history(args: argparse.Namespace) -> int:
    _note_guest(args)

    async def fetch(conn: Connection) -> dict[str, Any]:
        from client_cli.history import history_net, round_summary

        reply = await conn.request("history", limit=args.limit)
        records = list(reply.get("rounds") or [])
        me = conn.player or ""
        return {
            "player": me,
            "name": conn.identity.get("name"),
            "rounds": [round_summary(r, me) for r in records],
            "net": history_net(records, me),
        }

    return _run(args, fetch, format_history)


def format_history(r: dict[str, Any]) -> str:
    from client_cli.money import format_money
    from client_cli.sentences import AREA_NAMES

    rounds = r["rounds"]
    if not rounds:
        return f"No rounds recorded for {r.get('name')} ({r.get('player')})"
    rows = [("ROUND", "RESULT", "PLAYER", "BANKER", "YOUR BETS", "NET", "BALANCE")]
    for x in rounds:
        bets = (
            ", ".join(f"{AREA_NAMES.get(a, a)} {format_money(v)}" for a, v in x["bets"].items())
            or "-"
        )
        after = x.get("balance_after")
        rows.append(
            (
                str(x["round_id"]),
                str(x["result"]),
                " ".join(x["player"]),
                " ".join(x["banker"]),
                bets,
                format_money(int(x["net"]), sign=True),
                format_money(int(after)) if isinstance(after, int) else "-",
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = [
        "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in rows
    ]
    lines.append(f"{len(rounds)} rounds, net {format_money(int(r['net']), sign=True)}")
    return "\n".join(lines)


# ---------------------------------------------------------------------------- verify --table


def add_verify_server_args(p: argparse.ArgumentParser) -> None:
    """``chemmy verify --table T [--shoe N] [--url URL]``: fetch the record first."""
    p.add_argument("--table", metavar="T", help="fetch the table's revealed shoe from the server")
    p.add_argument(
        "--shoe",
        type=int,
        metavar="N",
        help="with --table: the shoe number (default: the last revealed)",
    )
    add_url_arg(p)
    add_identity_args(p, name=False)


def fetch_shoe_record(args: argparse.Namespace) -> dict[str, Any]:
    """The revealed shoe record named by ``--table``/``--shoe``, from the server of
    ``--url`` (or ``$CHEMMY_URL``)."""
    if getattr(args, "source", None):
        raise CliError("verify: give a FILE or --table, not both")
    if not args.table:
        raise CliError("verify: give a FILE, or --table T to fetch the table's revealed shoe")
    w = who(args)

    async def fetch(conn: Connection) -> dict[str, Any]:
        reply = await conn.request("shoe_record", table=args.table, shoe=args.shoe)
        record = reply.get("record")
        if not isinstance(record, dict):
            raise Refused("the server sent no shoe record")
        return record

    try:
        return asyncio.run(_with_connection(w, fetch))
    except Refused as exc:
        raise CliError(f"verify: {exc}") from None
