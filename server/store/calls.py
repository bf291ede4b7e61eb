"""The shape of the calls a store keeps: the wallet calls' outbox (docs/wallet.md §3) and
the operator's calls made once (docs/operator-api.md), checked and merged the same way by
every store.

It must never do I/O nor make a wallet call; it only checks and merges records.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Final

from server.ledger.rules import MAX_AMOUNT
from server.protocol.errors import (  # (the error tree: defined there, named here too)
    BadWalletCall,
    StoreError,
)
from server.store.base import (
    _OPERATOR_CALL_KEY_MAX,
    OPERATOR_CALL_KEEP_MAX,
    WALLET_CALL_CHANGES,
    WALLET_CALL_KINDS,
    WALLET_CALL_STATES,
    WALLET_CALLS_LIMIT,
)
from server.store.records import _is_int, check_span, dump_json


def check_operator_call(key: object, fingerprint: object, keep: object) -> float:
    """Refuse an operator call's record no store may hold (a caller's bug); ``keep``
    as a float."""
    for name, value in (("key", key), ("fingerprint", fingerprint)):
        if not isinstance(value, str) or not 1 <= len(value) <= _OPERATOR_CALL_KEY_MAX:
            raise StoreError(f"an operator call's {name} is 1-{_OPERATOR_CALL_KEY_MAX} characters")
    if isinstance(keep, bool) or not isinstance(keep, int | float):
        raise StoreError("an operator call is kept a number of seconds")
    if not 0 < keep <= OPERATOR_CALL_KEEP_MAX:
        raise StoreError(f"an operator call is kept 0-{OPERATOR_CALL_KEEP_MAX:.0f} seconds")
    return float(keep)


def operator_call_record(fingerprint: str, answer: Mapping[str, Any] | None) -> str:
    """An operator call's record as stored: ``{"fingerprint", "answer"}`` in JSON;
    :class:`StoreError` for an answer that is not a JSON object."""
    if answer is not None and not isinstance(answer, Mapping):
        raise StoreError("an operator call's answer is a JSON object")
    return dump_json({"fingerprint": fingerprint, "answer": answer})


# -- wallet calls: their shape, shared by the implementations ---------------------------

#: The fields of a wallet call that are non-empty strings.
_CALL_STRINGS: Final = ("request_id", "player", "table", "round_id")
#: Its times: Unix seconds, stored as floats.
_CALL_TIMES: Final = ("next_at", "created", "updated")
#: Its free fields (JSON kept as given), what each may be, and what a missing one is.
_CALL_FREE: Final[dict[str, tuple[tuple[type, ...], Any]]] = {
    "body": ((dict,), {}),
    "answer": ((dict, type(None)), None),
    "reference": ((str, type(None)), None),
    "reason": ((str, type(None)), None),
    "error": ((str, type(None)), None),
}


def prepare_wallet_call(call: Mapping[str, Any]) -> tuple[dict[str, Any], str]:
    """Check a wallet call (see :func:`check_wallet_call`); return it as stored (without
    its ``seq``) and its JSON text."""
    if not isinstance(call, Mapping):
        raise BadWalletCall(f"a wallet call is a mapping, not {type(call).__name__}")
    txn = call.get("transaction_id")
    if not isinstance(txn, str) or not txn:
        raise BadWalletCall("a wallet call has a transaction_id (a non-empty string)")
    out = dict(call)
    out.pop("seq", None)  # the store's

    def bad(what: str) -> BadWalletCall:
        return BadWalletCall(f"wallet call {txn!r}: {what}")

    if out.get("kind") not in WALLET_CALL_KINDS:
        raise bad(f"kind is one of {', '.join(WALLET_CALL_KINDS)}")
    if out.get("state") not in WALLET_CALL_STATES:
        raise bad(f"state is one of {', '.join(WALLET_CALL_STATES)}")
    for name in _CALL_STRINGS:
        if not isinstance(out.get(name), str) or not out[name]:
            raise bad(f"{name} is a non-empty string")
    currency = out.get("currency")
    if currency is not None and (not isinstance(currency, str) or not currency):
        raise bad("currency is a non-empty string or null")
    out["currency"] = currency
    for name in ("amount", "attempts"):
        value = out.get(name)
        if not _is_int(value) or not 0 <= value <= MAX_AMOUNT:
            raise bad(f"{name} is a whole number from 0 to 2**53 - 1")
    for name in _CALL_TIMES:
        value = out.get(name)
        if not isinstance(value, int | float) or isinstance(value, bool):
            raise bad(f"{name} is a Unix time in seconds")
        if not (math.isfinite(value) and value >= 0):
            raise bad(f"{name} is a Unix time in seconds")
        out[name] = float(value)
    for name, (types, missing) in _CALL_FREE.items():
        value = out.get(name, missing)
        if not isinstance(value, types):
            raise bad(f"{name} is a {' or '.join(t.__name__ for t in types)}")
        out[name] = value
    resolutions = out.get("resolutions", [])  # only once a person did something about it
    if not isinstance(resolutions, list) or not all(isinstance(r, dict) for r in resolutions):
        raise bad("resolutions is a list of objects")
    try:
        text = dump_json(out)
    except StoreError as exc:
        raise bad(str(exc)) from None
    return json.loads(text), text


def check_wallet_call(call: Mapping[str, Any]) -> dict[str, Any]:
    """Refuse (:class:`BadWalletCall`, a :class:`StoreError` and a ``ValueError``) a
    wallet call of the wrong shape; return it as a store keeps it.

    A wallet call is a JSON-able dict: ``transaction_id`` (a non-empty string, unique:
    the key), ``kind`` (:data:`WALLET_CALL_KINDS`), ``request_id``, ``player``,
    ``table``, ``round_id`` (non-empty strings), ``amount`` (0 to 2**53 - 1),
    ``currency`` (a string, or ``None`` for play money), ``state``
    (:data:`WALLET_CALL_STATES`), ``attempts`` (a whole number >= 0), ``next_at`` (when
    to try it next), ``created`` and ``updated`` (Unix times; kept as floats), and the
    free fields kept as given: ``body`` (the request's body, a dict; ``{}`` if missing),
    ``answer`` (a dict or ``None``), ``reference``, ``reason`` and ``error`` (strings or
    ``None``; ``None`` if missing), ``resolutions`` (when a person sent it again or
    resolved it: a list of objects, ``server.operator.wallet``), and any other
    JSON-able field. A store adds ``seq``
    (a ``seq`` given here is dropped)."""
    return prepare_wallet_call(call)[0]


def merge_wallet_call(
    stored: Mapping[str, Any], changes: Mapping[str, Any]
) -> tuple[dict[str, Any], str]:
    """A stored call with ``changes`` merged in, checked (see :func:`check_wallet_changes`
    and :func:`check_wallet_call`), and its JSON text; without ``seq``."""
    return prepare_wallet_call({**stored, **check_wallet_changes(changes)})


def check_wallet_changes(changes: Mapping[str, Any]) -> dict[str, Any]:
    """Refuse changes to anything but a call's progress (:data:`WALLET_CALL_CHANGES`)."""
    if not isinstance(changes, Mapping):
        raise BadWalletCall(f"changes are a mapping, not {type(changes).__name__}")
    fixed = set(changes) - WALLET_CALL_CHANGES
    if fixed:
        raise BadWalletCall(
            f"only {', '.join(sorted(WALLET_CALL_CHANGES))} of a wallet call may change,"
            f" not {', '.join(sorted(map(str, fixed)))}"
        )
    return dict(changes)


def wallet_limit(limit: int) -> int:
    """``limit`` within 0 to :data:`WALLET_CALLS_LIMIT`."""
    if not _is_int(limit):
        raise BadWalletCall("a limit is a whole number")
    return max(0, min(limit, WALLET_CALLS_LIMIT))


def check_due_kinds(kinds: Sequence[str]) -> tuple[str, ...]:
    """The kinds :meth:`Store.due_wallet_calls` is asked for, checked."""
    if isinstance(kinds, str):
        kinds = (kinds,)
    found = tuple(dict.fromkeys(kinds))
    if any(kind not in WALLET_CALL_KINDS for kind in found):
        raise BadWalletCall(f"wallet call kinds are among {', '.join(WALLET_CALL_KINDS)}")
    return found


def check_due_time(now: float) -> float:
    """The ``now`` of :meth:`Store.due_wallet_calls`, as a float."""
    if not isinstance(now, int | float) or isinstance(now, bool) or math.isnan(now):
        raise BadWalletCall("now is a Unix time in seconds")
    return float(now)


def wallet_filters(
    *,
    state: str | None = None,
    player: str | None = None,
    table: str | None = None,
    round_id: str | None = None,
    kind: str | None = None,
    before_seq: int | None = None,
) -> dict[str, str]:
    """The filters of :meth:`Store.wallet_calls` that were given, checked, as the
    fields a call must hold (``before_seq`` is only checked)."""
    given = {"state": state, "player": player, "table": table, "round_id": round_id}
    filters = {name: value for name, value in (given | {"kind": kind}).items() if value is not None}
    if any(not isinstance(value, str) for value in filters.values()):
        raise BadWalletCall("wallet call filters are strings")
    if state is not None and state not in WALLET_CALL_STATES:
        raise BadWalletCall(f"a wallet call's state is one of {', '.join(WALLET_CALL_STATES)}")
    if kind is not None and kind not in WALLET_CALL_KINDS:
        raise BadWalletCall(f"a wallet call's kind is one of {', '.join(WALLET_CALL_KINDS)}")
    if before_seq is not None and not _is_int(before_seq):
        raise BadWalletCall("before_seq is a whole number")
    return filters


def wallet_call_matches(call: Mapping[str, Any], filters: Mapping[str, str]) -> bool:
    """Whether ``call`` holds every field of ``filters`` (:func:`wallet_filters`)."""
    return all(call.get(name) == value for name, value in filters.items())


def wallet_totals(
    calls: Iterable[Mapping[str, Any]], since: float | None = None, until: float | None = None
) -> list[dict[str, Any]]:
    """The answer of :meth:`Store.wallet_totals` from ``calls`` (stored calls, any
    order): those ``created`` in ``[since, until)`` counted and summed per ``(day,
    table, currency, kind, state)``, sorted by those (play money's ``None`` currency
    before every code)."""
    low, high = check_span(since, until)
    sums: dict[tuple[str, str, str | None, str, str], list[int]] = {}
    for call in calls:
        created = call["created"]
        if not low <= created < high:
            continue
        day = datetime.fromtimestamp(created, tz=UTC).strftime("%Y-%m-%d")
        group = (day, call["table"], call["currency"], call["kind"], call["state"])
        found = sums.setdefault(group, [0, 0])
        found[0] += 1
        found[1] += call["amount"]

    def order(group: tuple[str, str, str | None, str, str]) -> tuple[str, str, str, str, str]:
        day, table, currency, kind, state = group
        return day, table, currency or "", kind, state

    names = ("day", "table", "currency", "kind", "state")
    return [
        {**dict(zip(names, group, strict=True)), "count": count, "amount": amount}
        for group, (count, amount) in sorted(sums.items(), key=lambda item: order(item[0]))
    ]
