"""The operator's subcommands of ``chemmy``: reconciliation and table controls.

* ``chemmy transactions``: every call Chemmy made to the operator's seamless wallet,
  with its state (docs/wallet.md §4), newest first; ``--totals`` the totals per day,
  table, currency, kind and state instead. ``--json`` prints what the server answered.
* ``chemmy void ROUND --reason TEXT``: void a round that cannot finish (every wager
  back; docs/operations.md §8); ``chemmy table pause|resume|close TABLE``: the table
  controls of the same section.

The calls are signed with the operator key (``--operator-key`` or
``$CHEMMY_OPERATOR_KEY``) exactly as the server checks them (docs/wallet.md §1). The
server is ``--url`` (``ws://`` or ``http://``; ``$CHEMMY_URL``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import uuid
from typing import Any, TypeAlias
from urllib.parse import quote, urlencode, urlsplit, urlunsplit

from client_cli.common import add_url_arg, server_url
from client_cli.main import CliError

__all__ = ["fetch", "post", "register", "run_table", "run_transactions", "run_void"]

Subparsers: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"

STATES = ("pending", "acknowledged", "refused", "rolled_back", "failed", "cancelled")


def register(subparsers: Subparsers) -> None:
    p = subparsers.add_parser(
        "transactions",
        help="the wallet calls Chemmy made, for reconciliation (operators)",
        description="List every call Chemmy made to the operator's seamless wallet "
        "(debits, credits, rollbacks) with its state, newest first, or their totals "
        "per day and table (--totals). Signed with the operator key.",
    )
    add_url_arg(p)
    p.add_argument(
        "--operator-key",
        default=os.environ.get("CHEMMY_OPERATOR_KEY"),
        help="the server's --operator-key (default $CHEMMY_OPERATOR_KEY)",
    )
    p.add_argument("--state", choices=STATES, help="only calls in this state")
    p.add_argument("--player", help="only this player's calls")
    p.add_argument("--table", help="only this table's calls")
    p.add_argument("--round", dest="round_id", help="only this round's calls")
    p.add_argument("--limit", type=int, default=100, help="at most this many (1-1000)")
    p.add_argument("--totals", action="store_true", help="totals per day, table and state")
    p.add_argument("--json", action="store_true", help="print the server's answer as JSON")
    p.set_defaults(run=run_transactions)

    v = subparsers.add_parser(
        "void",
        help="void a round that cannot finish: every wager back (operators)",
        description="Void the table's current round (its id is <table>-<shoe>-<coup>): "
        "every wager goes back, the round is recorded void with the reason, the players "
        "are told (docs/operations.md §8). A settled round cannot be voided.",
    )
    v.add_argument("round_id", metavar="ROUND", help="the round's id, e.g. t1-3-14")
    v.add_argument("--reason", required=True, help="why (1-200 characters), kept and shown")
    _operator_args(v)
    v.set_defaults(run=run_void)

    t = subparsers.add_parser(
        "table",
        help="pause, resume or close a table (operators)",
        description="pause: no new coup starts (one being dealt finishes); resume: play "
        "goes on; close: the table closes (a coup in progress is refunded).",
    )
    t.add_argument("action", choices=("pause", "resume", "close"))
    t.add_argument("table", metavar="TABLE")
    _operator_args(t)
    t.set_defaults(run=run_table)


def _operator_args(p: argparse.ArgumentParser) -> None:
    add_url_arg(p)
    p.add_argument(
        "--operator-key",
        default=os.environ.get("CHEMMY_OPERATOR_KEY"),
        help="the server's --operator-key (default $CHEMMY_OPERATOR_KEY)",
    )
    p.add_argument("--json", action="store_true", help="print the server's answer as JSON")


def _http_base(url: str) -> str:
    parts = urlsplit(url)
    scheme = {"ws": "http", "wss": "https"}.get(parts.scheme, parts.scheme)
    if scheme not in ("http", "https") or not parts.netloc:
        raise CliError(f"not a server URL: {url}")
    return urlunsplit((scheme, parts.netloc, "", "", ""))


def fetch(url: str, key: str, path: str, query: dict[str, Any]) -> dict[str, Any]:
    """GET ``path`` of the operator API, signed; the JSON answer (or a CliError)."""
    import httpx

    from server.wallet.signing import HEADER, signature_header

    target = path + ("?" + urlencode(query) if query else "")
    header = signature_header(key.encode("utf-8"), time.time(), "GET", target, b"")
    try:
        response = httpx.get(_http_base(url) + target, headers={HEADER: header}, timeout=10)
    except httpx.HTTPError as exc:
        raise CliError(f"cannot reach {url}: {exc}") from None
    try:
        body = response.json()
    except ValueError:
        body = {}
    if response.status_code != 200:
        message = body.get("message") or body.get("status") or response.reason_phrase
        raise CliError(f"the server refused: {response.status_code} {message}")
    if not isinstance(body, dict):
        raise CliError("the server's answer is not a JSON object")
    return body


def post(url: str, key: str, path: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
    """POST ``body`` (JSON) to ``path`` of the operator API, signed, under a new
    ``Idempotency-Key`` (each command is a new call: docs/operator-api.md); the JSON
    answer."""
    import httpx

    from server.wallet.signing import HEADER, signature_header

    raw = b"" if body is None else json.dumps(body).encode("utf-8")
    header = signature_header(key.encode("utf-8"), time.time(), "POST", path, raw)
    headers = {
        HEADER: header,
        "Content-Type": "application/json",
        "Idempotency-Key": uuid.uuid4().hex,
    }
    try:
        response = httpx.post(_http_base(url) + path, content=raw, headers=headers, timeout=30)
    except httpx.HTTPError as exc:
        raise CliError(f"cannot reach {url}: {exc}") from None
    return _answer(response)


def _answer(response: Any) -> dict[str, Any]:
    try:
        body = response.json()
    except ValueError:
        body = {}
    if response.headers.get("Idempotent-Replayed") == "true":
        print(
            "(the server's answer to the same signed call made before: nothing was done again)",
            file=sys.stderr,
        )
    if response.status_code != 200:
        message = body.get("message") or body.get("status") or response.reason_phrase
        raise CliError(f"the server refused: {response.status_code} {message}")
    if not isinstance(body, dict):
        raise CliError("the server's answer is not a JSON object")
    return body


def _key(args: argparse.Namespace) -> str:
    if not args.operator_key:
        raise CliError("give the operator key: --operator-key or $CHEMMY_OPERATOR_KEY")
    return str(args.operator_key)


def run_void(args: argparse.Namespace) -> int:
    if not 1 <= len(args.reason) <= 200 or not args.reason.strip():
        raise CliError("--reason is 1-200 characters")
    path = f"/operator/v1/rounds/{quote(args.round_id, safe='')}/void"
    body = post(server_url(args), _key(args), path, {"reason": args.reason})
    if args.json:
        print(json.dumps(body, indent=2, ensure_ascii=False))
    else:
        print(f"round {body.get('round_id')} voided: every wager went back")
    return 0


def run_table(args: argparse.Namespace) -> int:
    path = f"/operator/v1/tables/{quote(args.table, safe='')}/{args.action}"
    body = post(server_url(args), _key(args), path)
    if args.json:
        print(json.dumps(body, indent=2, ensure_ascii=False))
    elif args.action == "close":
        print(f"table {body.get('table')} closed")
    else:
        print(f"table {body.get('table')}: {'paused' if body.get('paused') else 'resumed'}")
    return 0


def run_transactions(args: argparse.Namespace) -> int:
    url = server_url(args)
    if not args.operator_key:
        raise CliError("give the operator key: --operator-key or $CHEMMY_OPERATOR_KEY")
    if not 1 <= args.limit <= 1000:
        raise CliError("--limit is 1 to 1000")
    if args.totals:
        body = fetch(url, args.operator_key, "/operator/v1/transactions/totals", {})
        rows = body.get("totals", [])
        if args.json:
            print(json.dumps(body, indent=2, ensure_ascii=False))
            return 0
        columns = ("day", "table", "currency", "kind", "state", "count", "amount")
        _print_rows(rows, columns)
        return 0
    query = {
        k: v
        for k, v in (
            ("state", args.state),
            ("player", args.player),
            ("table", args.table),
            ("round_id", args.round_id),
            ("limit", args.limit),
        )
        if v is not None
    }
    body = fetch(url, args.operator_key, "/operator/v1/transactions", query)
    if args.json:
        print(json.dumps(body, indent=2, ensure_ascii=False))
        return 0
    columns = ("created", "transaction_id", "kind", "player", "amount", "currency", "state")
    rows = [
        {**row, "created": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(row["created"]))}
        for row in body.get("transactions", [])
    ]
    _print_rows(rows, columns)
    if body.get("next_cursor") is not None:
        print(f"(more: the next page starts after cursor {body['next_cursor']})")
    return 0


def _print_rows(rows: list[dict[str, Any]], columns: tuple[str, ...]) -> None:
    if not rows:
        print("no wallet calls")
        return
    cells = [[("" if r.get(c) is None else str(r.get(c))) for c in columns] for r in rows]
    widths = [max(len(c), *(len(row[i]) for row in cells)) for i, c in enumerate(columns)]
    print("  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True)).rstrip())
    for row in cells:
        print("  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)).rstrip())
