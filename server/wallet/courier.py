"""The courier: delivers the credits and rollbacks waiting in the store until the
operator's wallet acknowledges each one (docs/wallet.md §3, "Retries").

One task per process. It reads the due calls from the store (an outbox written in the
settlement's own commit, so a stored settlement always has its credits waiting), sends
those of the tables this process serves (and of tables no process serves any more: a
closed table's), and writes down each answer (:func:`~server.wallet.base.closing_outcome`):
``acknowledged``, ``failed`` (refused for good: a person must look, and may send it again
or resolve it: ``server.net.operator_wallet``), or another try later (0.5 s, 1 s, 2 s, …
one a minute): a refusal for the player's session or account is never taken as final.
After a kill -9 or a cluster's failover, the next owner's courier finds the same calls
and sends them with the same ids: the wallet applies each once.

After a credit is acknowledged the player's mirror balance is set from the wallet's
answer (``on_balance``), as docs/wallet.md says: a balance after settlement.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from collections.abc import Awaitable, Callable
from typing import Any, Final

from server.store.base import Store, StoreError

from .base import OK, SESSION_OR_ACCOUNT, Wallet, WalletAnswer, closing_outcome

__all__ = ["Courier", "backoff"]

log = logging.getLogger("chemmy.wallet")

FIRST_RETRY: Final = 0.5
MAX_RETRY: Final = 60.0
#: How often the courier looks when nothing woke it.
POLL: Final = 0.5
#: Calls in flight at once.
PARALLEL: Final = 32


def backoff(attempts: int) -> float:
    """Seconds before try ``attempts + 1``: doubling from 0.5 s to a minute, jittered."""
    base: float = min(MAX_RETRY, FIRST_RETRY * 2 ** max(0, attempts - 1))
    return base * random.uniform(0.8, 1.2)


class Courier:
    """Sends due calls while it runs. ``serves(table)`` says whether this process
    should send a table's calls; ``on_balance(player, balance)`` hears the balance an
    acknowledged credit or rollback reports."""

    def __init__(
        self,
        store: Store,
        wallet: Wallet,
        *,
        serves: Callable[[str], bool] = lambda table: True,
        on_balance: Callable[[str, int], Awaitable[None]] | None = None,
        on_sent: Callable[[str, str], None] | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.store = store
        self.wallet = wallet
        self.serves = serves
        self.on_balance = on_balance
        self.on_sent = on_sent
        self.clock = clock
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._busy: set[str] = set()  # transaction ids being sent now

    def start(self) -> None:
        self._task = asyncio.create_task(self.run(), name="wallet-courier")

    def wake(self) -> None:
        """New calls were stored: look now."""
        self._wake.set()

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def run(self) -> None:
        while True:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(POLL):
                    await self._wake.wait()
            self._wake.clear()
            try:
                await self.round()
            except StoreError as exc:  # the store is down: the calls wait there
                log.warning("wallet courier: the store cannot be read (%s)", exc)
            except Exception:
                log.exception("wallet courier failed; going on")

    async def round(self) -> int:
        """Send every call due now; how many were sent."""
        due = await self.store.due_wallet_calls(self.clock(), limit=500)
        mine = [c for c in due if c["transaction_id"] not in self._busy and self.serves(c["table"])]
        gate = asyncio.Semaphore(PARALLEL)

        async def one(call: dict[str, Any]) -> None:
            async with gate:
                await self.send(call)

        await asyncio.gather(*(one(c) for c in mine))
        return len(mine)

    async def send(self, call: dict[str, Any]) -> WalletAnswer:
        """Send one call once and store what came of it."""
        txn = call["transaction_id"]
        self._busy.add(txn)
        try:
            answer = await self.wallet.deliver(call)
            await self._record(call, answer)
        finally:
            self._busy.discard(txn)
        if self.on_sent is not None:
            self.on_sent(call["kind"], answer.status if answer.clear else "retry")
        return answer

    async def _record(self, call: dict[str, Any], answer: WalletAnswer) -> None:
        now = self.clock()
        txn, attempts = call["transaction_id"], int(call["attempts"]) + 1
        outcome = closing_outcome(answer)
        if outcome == "acknowledged":
            changes: dict[str, Any] = {"state": "acknowledged"}
        elif outcome == "failed":  # a 4xx: refused for good
            changes = {"state": "failed", "error": answer.status}
            log.error(
                "wallet: %s %s refused for good (%s: %s); it needs a person",
                call["kind"],
                txn,
                answer.status,
                answer.message,
            )
        else:
            if answer.clear and answer.status in SESSION_OR_ACCOUNT:
                log.error(
                    "wallet: %s %s refused for the player's session or account (%s); a"
                    " wallet must apply credits and rollbacks whatever they are: sent again",
                    call["kind"],
                    txn,
                    answer.status,
                )
            changes = {"next_at": now + backoff(attempts), "error": answer.message}
        changes.update(attempts=attempts, updated=now, answer=answer.to_dict())
        await self.store.update_wallet_call(txn, changes)
        if answer.status != OK:
            return
        if call["kind"] == "rollback" and call.get("reference"):
            await self.store.update_wallet_call(
                call["reference"], {"state": "rolled_back", "updated": now}
            )
        if self.on_balance is not None and answer.balance is not None:
            await self.on_balance(call["player"], answer.balance)
