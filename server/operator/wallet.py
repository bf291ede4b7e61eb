"""What a person does about a wallet call refused for good (docs/wallet.md §4, "Failed
calls"): send it again, or resolve it with what the operator's wallet really did.

A credit or rollback the wallet refused with a ``4xx`` is ``failed``: Chemmy stops
sending it and reconciliation shows it red until someone looks at the wallet's side.

- ``POST /operator/v1/wallet/calls/{transaction_id}/retry`` (``{"note": "..."}``
  optional): the call is ``pending`` again and the courier sends it at once, with the
  same ids (the wallet fixed whatever made it refuse). A repeat, once the call went
  on, changes nothing (``changed: false``).
- ``POST /operator/v1/wallet/calls/{transaction_id}/resolve`` with ``{"outcome":
  "applied" | "not_applied", "note": "..."}``: what the operator found in its wallet.
  ``applied`` (the player's balance at the wallet has the call in it: applied late, or
  by hand; for a rollback, the stake is back or was never taken): the call is
  ``acknowledged`` (a rollback's debit ``rolled_back``), and Chemmy's ledger, which
  moved the money when the coup settled or was voided, stays as it is. ``not_applied``
  (the wallet did not move it and will not: the operator kept the money): the call is
  ``cancelled`` and one ledger entry moves its ``amount`` from ``wallet:<player>`` to
  ``house`` (``ledger_key("wallet_resolved", transaction_id)``), undoing in Chemmy's books what
  the wallet never did; the player's mirror follows at their next balance. A repeat
  with the same outcome changes nothing (and completes a resolution cut short by the
  store: the ledger key is posted once); another outcome is ``409
  already_resolved``.

Both change the call only from ``failed``, in one compare-and-set
(``Store.update_wallet_call(only_from=...)``): of two people resolving it at once, one
does. Each keeps an audit line in the call's ``resolutions`` (``action``, ``outcome``,
``by``: who signed or whose token, ``at``, ``note``), listed with it by ``GET
/operator/v1/transactions``, and is logged at warning (``chemmy.wallet``). Served on
the one operator router, so every rule of its POSTs holds here too. Never decides a
rule of the game; never moves money but by that one entry.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from server.ledger import rules as ledger
from server.ledger.accounts import Entry
from server.operator.api import OperatorAPI, OperatorCall, OperatorRefusal
from server.operator.context import OperatorSide
from server.operator.reconciliation import public
from server.protocol.text import clean_text

if TYPE_CHECKING:
    pass

__all__ = ["NOTE_MAX", "OUTCOMES", "install", "resolution_of"]

log = logging.getLogger("chemmy.wallet")

#: What the operator may find a failed call came to at its wallet.
OUTCOMES: Final = ("applied", "not_applied")
#: The state each outcome leaves the call in.
_STATE: Final = {"applied": "acknowledged", "not_applied": "cancelled"}
#: The longest note (characters, after the one text check of names and chat).
NOTE_MAX: Final = 500


def resolution_of(call: Mapping[str, Any]) -> Entry | None:
    """The ledger entry of a credit or rollback resolved ``not_applied``: its amount
    back from the player's side to the house, the wallet having kept it (None for 0)."""
    if not call["amount"]:
        return None
    return ledger.resolution_entry(
        call["transaction_id"], call["player"], int(call["amount"]), call["round_id"]
    )


def _note(body: Mapping[str, Any], *, required: bool) -> str | None:
    value = body.get("note")
    if value is None and not required:
        return None
    try:
        note = clean_text(value)
    except ValueError as exc:
        raise OperatorRefusal(400, "bad_request", f"note: {exc}") from None
    if not 1 <= len(note) <= NOTE_MAX:
        raise OperatorRefusal(400, "bad_request", f"note: 1 to {NOTE_MAX} characters")
    return note


def _body(call: OperatorCall, allowed: frozenset[str]) -> dict[str, Any]:
    body = call.json() if call.request.body else {}
    unknown = sorted(set(body) - allowed)
    if unknown:
        raise OperatorRefusal(400, "bad_request", f"no field {unknown[0][:40]!r} here")
    return body


def _last(stored: Mapping[str, Any]) -> Mapping[str, Any]:
    resolutions = stored.get("resolutions") or []
    return resolutions[-1] if resolutions else {}


def _not_failed(stored: Mapping[str, Any]) -> OperatorRefusal:
    return OperatorRefusal(
        409, "not_failed", f"the call is {stored['state']}, not failed: nothing for a person to do"
    )


def _answer(stored: Mapping[str, Any], changed: bool) -> dict[str, Any]:
    return {"status": "ok", "changed": changed, "transaction": public(stored)}


class _FailedCalls:
    """The two routes over ``ctx``."""

    def __init__(self, ctx: OperatorSide) -> None:
        self.ctx = ctx

    async def found(self, txn: str) -> dict[str, Any]:
        stored = await self.ctx.store.wallet_call(txn)
        if stored is None:
            raise OperatorRefusal(404, "not_found", f"no wallet call {txn[:80]!r}")
        return stored

    async def retry(self, call: OperatorCall) -> Mapping[str, Any]:
        body = _body(call, frozenset({"note"}))
        note = _note(body, required=False)
        stored = await self.found(call.params["transaction_id"])
        now = time.time()
        line = {"action": "retry", "outcome": None, "by": str(call.caller), "at": now}
        line["note"] = note
        if stored["state"] == "failed":
            changes = {
                "state": "pending",
                "next_at": now,
                "updated": now,
                "resolutions": [*(stored.get("resolutions") or []), line],
            }
            after = await self.ctx.store.update_wallet_call(
                stored["transaction_id"], changes, only_from="failed"
            )
            assert after is not None  # (calls are never deleted)
            if _last(after) == line:
                log.warning(
                    "wallet: %s %s sent again, as %s asked (%s)",
                    after["kind"],
                    after["transaction_id"],
                    line["by"],
                    note or "no note",
                )
                if self.ctx.courier is not None:
                    self.ctx.courier.wake()
                return _answer(after, True)
            stored = after  # someone else moved it meanwhile: judged as it is now
        if (
            stored["state"] in ("pending", "acknowledged")
            and _last(stored).get("action") == "retry"
        ):
            return _answer(stored, False)  # asked before: it went on
        raise _not_failed(stored)

    async def resolve(self, call: OperatorCall) -> Mapping[str, Any]:
        body = _body(call, frozenset({"outcome", "note"}))
        outcome = body.get("outcome")
        if outcome not in OUTCOMES:
            raise OperatorRefusal(400, "bad_request", f"outcome is one of {', '.join(OUTCOMES)}")
        note = _note(body, required=True)
        stored = await self.found(call.params["transaction_id"])
        now = time.time()
        line = {"action": "resolve", "outcome": outcome, "by": str(call.caller), "at": now}
        line["note"] = note
        changed = False
        if stored["state"] == "failed":
            changes = {
                "state": _STATE[outcome],
                "updated": now,
                "resolutions": [*(stored.get("resolutions") or []), line],
            }
            after = await self.ctx.store.update_wallet_call(
                stored["transaction_id"], changes, only_from="failed"
            )
            assert after is not None
            changed = _last(after) == line
            stored = after
        last = _last(stored)
        if last.get("action") != "resolve" or stored["state"] not in _STATE.values():
            raise _not_failed(stored)
        if last.get("outcome") != outcome:
            raise OperatorRefusal(
                409,
                "already_resolved",
                f"the call was resolved {last.get('outcome')} by {last.get('by')}",
            )
        await self._carry_out(stored, outcome, now)
        if changed:
            log.warning(
                "wallet: %s %s resolved %s by %s (%s)",
                stored["kind"],
                stored["transaction_id"],
                outcome,
                line["by"],
                note,
            )
        return _answer(stored, changed)

    async def _carry_out(self, stored: Mapping[str, Any], outcome: str, now: float) -> None:
        """What the outcome moves; again on a repeat (each step is idempotent), so that a
        resolution the store cut short is completed by asking again."""
        store = self.ctx.store
        debit = stored.get("reference") if stored["kind"] == "rollback" else None
        if outcome == "applied" and debit is not None:  # as the courier does on its ok
            closed = await store.wallet_call(debit)
            if closed is not None and closed["state"] != "rolled_back":
                await store.update_wallet_call(debit, {"state": "rolled_back", "updated": now})
        entry = resolution_of(stored) if outcome == "not_applied" else None
        if entry is not None:
            await store.commit(entries=[entry])


def install(api: OperatorAPI, ctx: OperatorSide) -> None:
    """Add ``retry`` and ``resolve`` of a failed wallet call to ``api``."""
    calls = _FailedCalls(ctx)
    api.add("POST", "/operator/v1/wallet/calls/{transaction_id}/retry", calls.retry)
    api.add("POST", "/operator/v1/wallet/calls/{transaction_id}/resolve", calls.resolve)
