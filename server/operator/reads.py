"""The operator's read-only views (issue 21, "Operator API"; docs/operator-api.md):
rounds, one round's report, tables, players, and totals.

- ``GET /operator/v1/rounds``: round records newest first (``since``, ``until``: Unix
  seconds of the record's ``time``, ``[since, until)``; ``table``, ``player``,
  ``round_id``; ``limit`` 1-1000, default 100; ``cursor`` from the last page's
  ``next_cursor``); ``format=csv`` gives the same page as a CSV (:data:`CSV_COLUMNS`),
  its next cursor in the ``Chemmy-Next-Cursor`` header.
- ``GET /operator/v1/rounds/{round_id}``: the whole record, and once its shoe is
  revealed, the shoe record exactly as ``chemmy verify FILE`` reads it, with what the
  server's own check of it found.
- ``GET /operator/v1/tables``: each open table's lobby line, its owner process, the
  watchers connected here and its last coup.
- ``GET /operator/v1/players``: who is connected to this process, at which tables;
  ``GET /operator/v1/players/{player}``: their money, rounds and ledger.
- ``GET /operator/v1/totals``: coups, staked, returned, commission and house result per
  UTC day (or per range), table and currency, from the round records (each record
  names its currency: :class:`Currencies`).

Every view reads the store (shared by a cluster's processes), but for what only a
process knows: its connections (``players``, ``watchers``). It never writes anything.
"""

from __future__ import annotations

import base64
import binascii
import csv
import io
import json
import math
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, Final

from server.engine.shoe import ShoeError, verify
from server.ledger.accounts import player_account
from server.operator.api import OperatorAPI, OperatorCall, OperatorRefusal
from server.operator.context import OperatorSide
from server.operator.http import HttpResponse
from server.operator.reconciliation import _number, _one
from server.protocol.errors import StoreUnavailable
from server.store.base import HISTORY_LIMIT, ROUNDS_LIMIT, RoundQuery

__all__ = ["CSV_COLUMNS", "decode_cursor", "encode_cursor", "install", "money_of"]

#: The columns of ``GET /operator/v1/rounds?format=csv``, one row per round.
CSV_COLUMNS: Final = (
    "time",
    "utc",
    "round_id",
    "table",
    "shoe_no",
    "coup_no",
    "outcome",
    "player_cards",
    "banker_cards",
    "player_total",
    "banker_total",
    "staked",
    "returned",
    "commission",
    "house_result",
    "players",
    "currency",
)
NEXT_CURSOR_HEADER: Final = "Chemmy-Next-Cursor"


def encode_cursor(record: Mapping[str, Any]) -> str:
    """The cursor after ``record``: its ``(time, round_id)``, opaque (base64url JSON)."""
    order = [record.get("time", 0.0), record["round_id"]]
    raw = json.dumps(order, separators=(",", ":"), ensure_ascii=False).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[float, str]:
    """``(time, round_id)`` from :func:`encode_cursor`; ``400 bad_request`` otherwise."""
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        when, round_id = json.loads(raw.decode())
    except (binascii.Error, UnicodeDecodeError, ValueError, TypeError):
        raise OperatorRefusal(400, "bad_request", "cursor is a next_cursor given back") from None
    if (
        not isinstance(when, int | float)
        or isinstance(when, bool)
        or not math.isfinite(when)
        or not isinstance(round_id, str)
    ):
        raise OperatorRefusal(400, "bad_request", "cursor is a next_cursor given back")
    return float(when), round_id


def money_of(record: Mapping[str, Any]) -> dict[str, int]:
    """A round's money: ``staked`` (every held wager), ``returned`` (stakes given back
    and wins), ``commission`` and ``house_result`` (``staked - returned``: GGR)."""
    bets = record.get("bets") or []
    staked = sum(int(b.get("stake", 0)) for b in bets)
    returned = sum(int(b.get("returned", 0)) for b in bets)
    return {
        "staked": staked,
        "returned": returned,
        "commission": int(record.get("commission", 0)),
        "house_result": staked - returned,
    }


def _utc(when: float) -> str:
    return datetime.fromtimestamp(when, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _day(when: float) -> str:
    return datetime.fromtimestamp(when, tz=UTC).strftime("%Y-%m-%d")


def csv_row(record: Mapping[str, Any], currency: str | None = None) -> list[Any]:
    """One round as a row of :data:`CSV_COLUMNS`, in ``currency`` (empty: play money)."""
    when = float(record.get("time", 0.0))
    money = money_of(record)
    return [
        repr(when),
        _utc(when),
        record.get("round_id"),
        record.get("table"),
        record.get("shoe_no"),
        record.get("coup_no"),
        record.get("outcome"),
        " ".join(record.get("player") or []),
        " ".join(record.get("banker") or []),
        record.get("player_total"),
        record.get("banker_total"),
        money["staked"],
        money["returned"],
        money["commission"],
        money["house_result"],
        " ".join(record.get("players") or []),
        currency or "",
    ]


def _whole(call: OperatorCall, name: str, low: int, high: int, default: int) -> int:
    """The query's whole number ``name`` in ``[low, high]`` (``default`` if absent)."""
    value = _number(call, name, low, high)
    if value is not None and value != int(value):
        raise OperatorRefusal(400, "bad_request", f"{name} is a whole number from {low} to {high}")
    return default if value is None else int(value)


def _last_coup(record: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if record is None:
        return None
    keys: tuple[str, ...]
    keys = ("round_id", "time", "shoe_no", "coup_no", "outcome", "player", "banker")
    keys += ("player_total", "banker_total", "natural")
    voided = {"void": bool(record.get("void")), "reason": record.get("reason")}
    return {k: record.get(k) for k in keys} | voided | money_of(record)


class Currencies:
    """Each round record's currency: the record's own ``currency`` (``None``: play
    money); for a record stored before round records carried one, its table's currency
    now (:meth:`Reads.currencies`: the stored and the open tables; ``None`` for a table
    gone), read once, when a record first needs it."""

    def __init__(self, reads: Reads) -> None:
        self.reads = reads
        self.known: dict[str, str | None] | None = None

    async def of(self, record: Mapping[str, Any]) -> str | None:
        if "currency" in record:
            own = record["currency"]
            return own if isinstance(own, str) else None
        if self.known is None:
            self.known = await self.reads.currencies()
        return self.known.get(str(record.get("table")))


class Reads:
    """The read-only operator views of one server (each a route)."""

    def __init__(self, side: OperatorSide) -> None:
        self.side = side
        self.store = side.store

    async def rounds(self, call: OperatorCall) -> Mapping[str, Any] | HttpResponse:
        filters: dict[str, Any] = {
            name: value
            for name in ("table", "player", "round_id")
            if (value := _one(call, name)) is not None
        }
        since = _number(call, "since", 0, 2**40)
        until = _number(call, "until", 0, 2**40)
        limit = _whole(call, "limit", 1, ROUNDS_LIMIT, 100)
        cursor = _one(call, "cursor")
        form = _one(call, "format") or "json"
        if form not in ("json", "csv"):
            raise OperatorRefusal(400, "bad_request", "format is json or csv")
        found = await self.store.round_records(
            RoundQuery(
                since=since,
                until=until,
                limit=limit,
                before=None if cursor is None else decode_cursor(cursor),
                **filters,
            )
        )
        after = encode_cursor(found[-1]) if len(found) == limit else None
        if form == "json":
            return {"rounds": found, "next_cursor": after}
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\r\n")
        writer.writerow(CSV_COLUMNS)
        currencies = Currencies(self)
        writer.writerows([csv_row(record, await currencies.of(record)) for record in found])
        headers = () if after is None else ((NEXT_CURSOR_HEADER, after),)
        return HttpResponse(
            200,
            {},
            headers,
            raw=out.getvalue().encode("utf-8"),
            content_type="text/csv; charset=utf-8",
        )

    async def one_round(self, call: OperatorCall) -> Mapping[str, Any]:
        record = await self.store.round_record(call.params["round_id"])
        if record is None:
            raise OperatorRefusal(404, "not_found", "no round of that id is recorded")
        shoe = await self.store.shoe_record(str(record["table"]), int(record["shoe_no"]))
        if shoe is not None and shoe.get("revealed") is False:
            shoe = None
        checked: dict[str, Any] | None = None
        in_shoe: bool | None = None
        if shoe is not None:
            try:
                report = verify(shoe)
                checked = {
                    "ok": report.ok,
                    "coups_checked": report.coups_checked,
                    "problems": list(report.problems),
                }
            except (ShoeError, ValueError, KeyError, TypeError) as exc:
                checked = {"ok": False, "coups_checked": 0, "problems": [str(exc)]}
            # The dealt coups, in order; a round voided before its cards or ended undealt
            # has none (and its coup_no counts no cards, so it is no index into them).
            cards = {"player": record.get("player"), "banker": record.get("banker")}
            if cards["player"] and cards["banker"]:
                in_shoe = cards in (shoe.get("coups") or [])
        return {
            "round": record,
            "currency": await Currencies(self).of(record),
            "money": money_of(record),
            "shoe_revealed": shoe is not None,
            "shoe": shoe,
            "verified": checked,
            "cards_in_shoe": in_shoe,
        }

    async def tables(self, call: OperatorCall) -> Mapping[str, Any]:
        lines = await self.side.lobby.tables()
        ids = [str(line["table"]) for line in lines]
        cluster = self.side.croupier.cluster
        if cluster is None:
            owners: dict[str, str | None] = {t: self.side.bus.node for t in ids}
        else:
            try:
                owners = await cluster.owners(ids)
            except StoreUnavailable as exc:  # (Redis' errors, translated by Leases)
                raise StoreUnavailable(f"the leases cannot be read: {exc}") from None
        watching: dict[str, int] = {}
        for session in self.side.sessions.values():
            for tid in session.tables:
                watching[tid] = watching.get(tid, 0) + 1
        out = []
        for line, tid in zip(lines, ids, strict=True):
            last = await self.store.round_records(RoundQuery(table=tid, limit=1))
            out.append(
                {
                    **line,
                    "owner": owners.get(tid),
                    "watchers_here": watching.get(tid, 0),
                    "last_coup": _last_coup(last[0] if last else None),
                }
            )
        return {"process": self.side.bus.node, "tables": out}

    def online(self) -> dict[str, dict[str, Any]]:
        found: dict[str, dict[str, Any]] = {}
        for session in self.side.sessions.values():
            who = session.identity
            if who is None:
                continue
            seen = found.setdefault(
                who.player_id,
                {
                    "player": who.player_id,
                    "name": who.name,
                    "guest": who.guest,
                    "tables": [],
                    "sessions": [],
                },
            )
            seen["sessions"].append(
                {
                    "session": session.id,
                    "address": session.address,
                    "format": session.fmt,
                    "tables": sorted(session.tables),
                }
            )
            seen["tables"] = sorted(set(seen["tables"]) | session.tables)
        return found

    async def players(self, call: OperatorCall) -> Mapping[str, Any]:
        found = self.online()
        table = _one(call, "table")
        listed = [
            found[pid] for pid in sorted(found) if table is None or table in found[pid]["tables"]
        ]
        return {"process": self.side.bus.node, "players": listed}

    async def one_player(self, call: OperatorCall) -> Mapping[str, Any]:
        pid = call.params["player"]
        rounds_limit = _whole(call, "rounds", 0, HISTORY_LIMIT, HISTORY_LIMIT)
        ledger_limit = _whole(call, "entries", 0, 1000, 100)
        name = await self.store.player_name(pid)
        entries = await self.store.ledger(account=player_account(pid), limit=ledger_limit)
        here = self.online().get(pid)
        if name is None and not entries and here is None:
            raise OperatorRefusal(404, "not_found", "no player of that id is known")
        balance, available = await self.side.money(pid)
        return {
            "player": pid,
            "name": name if name is not None else (here or {}).get("name"),
            "currency": await self.store.player_currency(pid),
            "balance": balance,
            "available": available,
            "online": here is not None,
            "sessions": [] if here is None else here["sessions"],
            "tables": [] if here is None else here["tables"],
            "rounds": await self.store.history(pid, rounds_limit),
            "ledger": [entry.to_dict() for entry in entries],
        }

    async def currencies(self) -> dict[str, str | None]:
        known: dict[str, str | None] = {}
        for row in await self.store.load_tables():
            known[row.table_id] = row.config.get("currency")
        for line in await self.side.lobby.tables():
            known[str(line["table"])] = line.get("currency")
        return known

    async def totals(self, call: OperatorCall) -> Mapping[str, Any]:
        since = _number(call, "since", 0, 2**40)
        until = _number(call, "until", 0, 2**40)
        table = _one(call, "table")
        per = _one(call, "per") or "day"
        if per not in ("day", "range"):
            raise OperatorRefusal(400, "bad_request", "per is day or range")
        currencies = Currencies(self)
        sums: dict[tuple[str | None, str, str | None], dict[str, int]] = {}
        before: tuple[float, str] | None = None
        while True:
            page = await self.store.round_records(
                RoundQuery(since=since, until=until, table=table, limit=ROUNDS_LIMIT, before=before)
            )
            for record in page:
                tid = str(record.get("table"))
                day = _day(float(record.get("time", 0.0))) if per == "day" else None
                key = (day, tid, await currencies.of(record))
                group = sums.setdefault(key, dict.fromkeys(_SUMS, 0))
                group["coups"] += 1
                for name, value in money_of(record).items():
                    group[name] += value
            if len(page) < ROUNDS_LIMIT:
                break
            before = (float(page[-1].get("time", 0.0)), str(page[-1]["round_id"]))
        ordered = sorted(sums.items(), key=lambda i: (i[0][0] or "", i[0][1], i[0][2] or ""))
        rows = [
            {"day": day, "table": tid, "currency": currency, **found}
            for (day, tid, currency), found in ordered
        ]
        by_currency: dict[str | None, dict[str, int]] = {}
        for (_, _, currency), found in ordered:
            group = by_currency.setdefault(currency, dict.fromkeys(_SUMS, 0))
            for name in _SUMS:
                group[name] += found[name]
        return {
            "since": since,
            "until": until,
            "per": per,
            "totals": rows,
            "by_currency": [
                {"currency": currency, **found}
                for currency, found in sorted(by_currency.items(), key=lambda i: i[0] or "")
            ],
        }


def install(api: OperatorAPI, side: OperatorSide) -> None:
    """Add the read-only operator views to ``api``."""
    reads = Reads(side)
    api.add("GET", "/operator/v1/rounds", reads.rounds)
    api.add("GET", "/operator/v1/rounds/{round_id}", reads.one_round)
    api.add("GET", "/operator/v1/tables", reads.tables)
    api.add("GET", "/operator/v1/players", reads.players)
    api.add("GET", "/operator/v1/players/{player}", reads.one_player)
    api.add("GET", "/operator/v1/totals", reads.totals)


_SUMS: Final = ("coups", "staked", "returned", "commission", "house_result")
