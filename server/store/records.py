"""The pure checks and encodings every store applies to what it keeps: table rows,
parts and events, round and shoe records and their index, the round search, the hold
audit and the audit report.

It must never do I/O nor decide a rule of the game (the table decides; these only check
shapes and encode).
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Mapping, Sequence
from typing import Any, TypeGuard

import orjson

from server.ledger.rules import MAX_AMOUNT
from server.protocol.errors import BadWalletCall, StoreError  # (the error tree: there)
from server.store.base import (
    ROUNDS_LIMIT,
    RoundFilter,
    RoundIndex,
    RoundQuery,
    ShoeIndex,
    TableRow,
)


def own_copy(exc: BaseException) -> BaseException:
    """A copy of ``exc`` for one caller of a group that failed together, so that the
    callers do not raise (and add their tracebacks to) one shared object."""
    try:
        copy = type(exc)(*exc.args)
    except Exception:  # an exception that cannot be made again from its args
        return exc
    copy.__cause__, copy.__suppress_context__ = exc.__cause__, exc.__suppress_context__
    return copy


def check_row(row: TableRow) -> tuple[str, str]:
    """Check a table row; its config and state as JSON (the config dumped once: issue 36)."""
    if not isinstance(row, TableRow):
        raise StoreError(f"not a table row: {type(row).__name__}")
    if not isinstance(row.table_id, str) or not row.table_id:
        raise StoreError("a table row has a table id")
    for name in ("seq", "epoch"):
        value = getattr(row, name)
        if not _is_int(value) or not 0 <= value <= MAX_AMOUNT:
            raise StoreError(f"table {row.table_id!r}: {name} is a whole number >= 0")
    if not isinstance(row.closed, bool):
        raise StoreError(f"table {row.table_id!r}: closed is true or false")
    config, kept = row.config, _configs.get(row.table_id)  # (the same at every step)
    if kept is None or kept[0] is not config or kept[1] != config:  # (changed in place)
        text = dump_state(config)
        if len(_configs) >= 10_000:  # (bounded: tables made and closed over months)
            _configs.clear()
        kept = _configs[row.table_id] = (config, orjson.loads(text), text)
    return kept[2], dump_state(row.state)


_configs: dict[str, tuple[Any, Any, str]] = {}  # a table's config, a copy, its JSON: once


def check_event(event: Mapping[str, Any]) -> tuple[int, str]:
    """Check one stored event (``{"seq", "kind", "data", "private"}``); return its seq
    and its JSON text."""
    if not isinstance(event, Mapping):
        raise StoreError(f"an event is a mapping, not {type(event).__name__}")
    seq = event.get("seq")
    if not _is_int(seq) or not 0 <= seq <= MAX_AMOUNT:
        raise StoreError("an event has a whole-number seq >= 0")
    if not isinstance(event.get("kind"), str):
        raise StoreError(f"event {seq}: kind is a string")
    return seq, dump_state(event)


def check_parts(row: TableRow) -> tuple[bool, list[tuple[str, str | None]]]:
    """Check a commit's parts (:class:`TableRow`): whether every part stored goes first
    (a table created, or closed), and each part's key with its JSON text (None: the
    part goes)."""
    parts = row.parts or {}
    if not isinstance(parts, Mapping):
        raise StoreError(f"table {row.table_id!r}: parts are a mapping")
    out: list[tuple[str, str | None]] = []
    for key, part in sorted(parts.items()):
        if not isinstance(key, str) or not key:
            raise StoreError(f"table {row.table_id!r}: a part's key is a string")
        if part is not None and not isinstance(part, Mapping):
            raise StoreError(f"table {row.table_id!r}: part {key!r} is a mapping or None")
        out.append((key, None if part is None else dump_state(part)))
    return row.state is None or row.closed, out


def check_events(
    table: TableRow | None, events: Sequence[Mapping[str, Any]]
) -> list[tuple[int, str]]:
    """Check a commit's events: they need the table row and rise strictly by seq."""
    if not events:
        return []
    if table is None:
        raise StoreError("events are stored with their table's row")
    prepared = [check_event(event) for event in events]
    if any(b[0] <= a[0] for a, b in itertools.pairwise(prepared)):
        raise StoreError(f"table {table.table_id!r}: a step's events rise by seq")
    return prepared


def follows(after: int, events: list[tuple[int, str]], top: int) -> list[dict[str, Any]] | None:
    """The answer of :meth:`Store.events_after`: ``events`` (seq, JSON) are the kept
    events with a seq above ``after``, ascending; ``top`` is the table's latest seq (its
    row's or its last event's). They are served only if they run from ``after + 1`` to
    ``top`` without a gap: otherwise some were pruned (or never stored)."""
    if not _is_int(after) or after < 0:
        raise StoreError("events are asked for after a whole-number seq >= 0")
    top = max([top, *(seq for seq, _ in events[-1:])])
    if after >= top:
        return []
    expected = range(after + 1, top + 1)
    if len(events) != len(expected) or any(
        seq != want for (seq, _), want in zip(events, expected, strict=False)
    ):
        return None
    return [json.loads(body) for _, body in events]


def dump_state(value: Any) -> str:
    """Serialize a table's state, config or event, made on every step (issue 23: ``orjson``,
    a tenth of the standard library's time). The same JSON as :func:`dump_json`, but
    non-finite floats come out as ``null`` (the table makes none); :class:`StoreError` if
    not JSON-able (bytes, an integer past 64 bits...). ``OPT_NON_STR_KEYS`` (keys not
    strings) slows every dict (issue 36: twice a row's time): tried if the quick way fails."""
    for option in (None, orjson.OPT_NON_STR_KEYS):
        try:
            return orjson.dumps(value, option=option).decode()
        except TypeError as exc:
            error = exc
    raise StoreError(f"not JSON-able: {error}") from None


def dump_json(value: Any) -> str:
    """Serialize table state or a record; :class:`StoreError` if it is not JSON-able."""
    try:
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise StoreError(f"not JSON-able: {exc}") from None


def _is_int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def record_time(record: Mapping[str, Any]) -> float:
    """A round record's ``time`` as the stores index it: a finite number, else 0.0."""
    value = record.get("time")
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    return 0.0


def round_query(query: RoundQuery) -> RoundFilter:
    """A :meth:`Store.round_records` query, checked (:class:`StoreError`)."""
    if not isinstance(query, RoundQuery):
        raise StoreError("round records are asked for with a RoundQuery")
    since, until, table, player = query.since, query.until, query.table, query.player
    round_id, limit, before = query.round_id, query.limit, query.before
    low, high = check_span(since, until)
    for name, value in (("table", table), ("player", player), ("round_id", round_id)):
        if value is not None and not isinstance(value, str):
            raise StoreError(f"{name} is a string")
    if not _is_int(limit):
        raise StoreError("a limit is a whole number")
    if before is not None:
        if (
            not isinstance(before, tuple | list)
            or len(before) != 2
            or not isinstance(before[0], int | float)
            or isinstance(before[0], bool)
            or not math.isfinite(before[0])
            or not isinstance(before[1], str)
        ):
            raise StoreError("before is (time, round_id)")
        before = (float(before[0]), before[1])
    return RoundFilter(low, high, table, player, round_id, max(0, min(limit, ROUNDS_LIMIT)), before)


def index_record(record: Mapping[str, Any]) -> RoundIndex | ShoeIndex:
    """Check a record and extract the fields a store indexes."""
    kind = record.get("kind")
    if kind == "round":
        round_id = record.get("round_id")
        table = record.get("table")
        shoe_no = record.get("shoe_no")
        coup_no = record.get("coup_no")
        players = record.get("players")
        if not isinstance(round_id, str) or not round_id or not isinstance(table, str):
            raise StoreError("a round record has a round_id and a table")
        if not _is_int(shoe_no) or not _is_int(coup_no):
            raise StoreError(f"round {round_id!r}: shoe_no and coup_no are integers")
        if not isinstance(players, list | tuple) or not all(
            isinstance(player, str) for player in players
        ):
            raise StoreError(f"round {round_id!r}: players is a list of player ids")
        return RoundIndex(
            round_id, table, shoe_no, coup_no, tuple(dict.fromkeys(players)), record_time(record)
        )
    if kind == "shoe":
        table = record.get("table")
        shoe_no = record.get("shoe_no")
        if not isinstance(table, str) or not table or not _is_int(shoe_no):
            raise StoreError("a shoe record has a table and an integer shoe_no")
        if not -MAX_AMOUNT <= shoe_no <= MAX_AMOUNT:
            raise StoreError(f"shoe {shoe_no}: out of range")
        return ShoeIndex(table, shoe_no, record.get("revealed", True) is not False)
    raise StoreError(f"a record's kind is 'round' or 'shoe', not {kind!r}")


def check_span(since: float | None, until: float | None) -> tuple[float, float]:
    """The ``[since, until)`` of :meth:`Store.wallet_totals` (and of
    :meth:`Store.round_records`), open ends made infinite."""
    for value in (since, until):
        if value is not None and (
            not isinstance(value, int | float) or isinstance(value, bool) or math.isnan(value)
        ):
            raise BadWalletCall("since and until are Unix times in seconds")
    return (
        -math.inf if since is None else float(since),
        math.inf if until is None else float(until),
    )
