"""The courier: delivers the credits and rollbacks waiting in the store until the
operator's wallet acknowledges each one (docs/wallet.md §3, "Retries").

One per process. It reads the due calls from the store (an outbox written in the
settlement's own commit, so a stored settlement always has its credits waiting), sends
those of the tables this process serves (and of tables no process serves any more: a
closed table's), and writes down each answer (:func:`~server.wallet.base.closing_outcome`):
``acknowledged``, ``failed`` (refused for good: a person must look, and may send it again
or resolve it: ``server.operator.wallet``), or another try later (0.5 s, 1 s, 2 s, …
one a minute): a refusal for the player's session or account is never taken as final.
After a kill -9 or a cluster's failover, the next owner's courier finds the same calls
and sends them with the same ids: the wallet applies each once.

Every call goes on its own (docs/wallet.md §3, "Timeouts"): a task each, at most
:data:`PARALLEL` at once, each bounded by the wallet's ``--wallet-call-timeout``; the
courier never waits for one call before sending the next, so one held or dribbled
credit delays no other.

Before a player's debit, the croupier asks :meth:`Courier.deliver_first` to deliver
that player's credits and rollbacks still unanswered (docs/wallet.md §3, "The order of
a player's calls"), so that a player who just won is debited after the win is credited.

A balance comes to the player's mirror (``on_balance``) from an acknowledged credit or
rollback only when its answer cannot be a repeat's (a repeat carries the first answer's
balance, docs/wallet.md §3): the call was stored by this process and this is its first
sending, and no other call of the player's was in flight meanwhile. Otherwise the
courier asks the wallet's ``/balance`` once the player's calls in flight are done.

It must never drop a call, send one that is not stored, or take a balance that may be
old as the player's balance.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, Final

from server.protocol.errors import StoreError
from server.store.base import WALLET_CALLS_LIMIT, Store

from .base import (
    OK,
    SESSION_OR_ACCOUNT,
    UNAVAILABLE,
    Wallet,
    WalletAnswer,
    WalletError,
    closing_outcome,
)
from .mirror import mirror_generation

__all__ = ["Courier", "backoff"]

log = logging.getLogger("chemmy.wallet")

FIRST_RETRY: Final = 0.5
MAX_RETRY: Final = 60.0
#: How often the courier looks when nothing woke it.
POLL: Final = 0.5
#: Calls in flight at once (each on a connection of its own; the wallet's pool has 200,
#: so debits always find one free).
PARALLEL: Final = 64
#: Seconds between tries of a player's unanswered call before their debit, doubling to
#: the cap (as a debit's own tries: server.wallet.seamless).
FIRST_FIRST: Final = 0.05
FIRST_CAP: Final = 0.5
#: Seconds past now that no pending call is due later than (a retry waits at most
#: ``MAX_RETRY`` and a fifth).
LATEST: Final = 86_400.0
#: How many call ids stored here, not sent yet, the courier remembers.
FRESH_KEPT: Final = 100_000


def backoff(waited: float, *, again: bool = False) -> float:
    """Seconds before a call's next try, after a try that came ``waited`` seconds after
    the one before was scheduled: twice that, from 0.5 s to a minute, jittered (0.5 s,
    1 s, 2 s, …); ``again`` (a try made early, before a debit) keeps the wait as it was,
    so that a player's debits do not push their credit's next try away."""
    base = min(MAX_RETRY, max(FIRST_RETRY, waited if again else 2 * waited))
    return base * random.uniform(0.8, 1.2)


def _unanswered(call: dict[str, Any]) -> bool:
    """A pending call the wallet has never answered clearly (it may not have it yet)."""
    answer = call.get("answer")
    return not (isinstance(answer, dict) and answer.get("clear"))


class Courier:
    """Sends due calls while it runs. ``serves(table)`` says whether this process
    should send a table's calls, ``owns(table)`` whether it alone does (it runs the
    table: no other process sends its calls); ``on_balance(player, balance)`` hears the
    player's balance at the wallet after an acknowledged credit or rollback."""

    def __init__(
        self,
        store: Store,
        wallet: Wallet,
        *,
        serves: Callable[[str], bool] = lambda table: True,
        owns: Callable[[str], bool] = lambda table: True,
        on_balance: Callable[[str, int, int | None], Awaitable[None]] | None = None,
        on_sent: Callable[[str, str], None] | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.store = store
        self.wallet = wallet
        self.serves = serves
        self.owns = owns
        self.on_balance = on_balance
        self.on_sent = on_sent
        self.clock = clock
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        #: The calls being sent now, by transaction id (one task each).
        self._flights: dict[str, asyncio.Task[WalletAnswer]] = {}
        #: Set once a call's answer is stored (before the balance is looked at).
        self._answered: dict[str, asyncio.Future[WalletAnswer]] = {}
        #: Calls this process stored and has not sent yet: their first answer is no repeat.
        self._fresh: set[str] = set()
        #: Each player's calls in flight, how many of their calls started or landed
        #: while any was in flight (answers that may have crossed), and the players whose
        #: balance is in doubt (player -> currency).
        self._flying: Counter[str] = Counter()
        self._moves: Counter[str] = Counter()
        self._doubt: dict[str, str | None] = {}

    def start(self) -> None:
        self._task = asyncio.create_task(self.run(), name="wallet-courier")

    def wake(self, calls: Iterable[dict[str, Any]] = ()) -> None:
        """New calls were stored (by this process: ``calls``): look now."""
        for call in calls:
            if len(self._fresh) >= FRESH_KEPT:
                self._fresh.clear()  # forgotten calls only cost a /balance each
            self._fresh.add(call["transaction_id"])
        self._wake.set()

    async def stop(self) -> None:
        tasks = [t for t in (self._task, *self._flights.values()) if t is not None]
        for task in tasks:
            task.cancel()  # a call cut short stays pending: sent again, same ids
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def run(self) -> None:
        while True:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(POLL):
                    await self._wake.wait()
            self._wake.clear()
            try:
                await self.round(wait=False)
            except StoreError as exc:  # the store is down: the calls wait there
                log.warning("wallet courier: the store cannot be read (%s)", exc)
            except Exception:
                log.exception("wallet courier failed; going on")

    async def round(self, *, wait: bool = True) -> int:
        """Send every call due now that is not on its way already (as many as
        :data:`PARALLEL` allows); how many went. With ``wait``, until each is answered."""
        room = PARALLEL - len(self._flights)
        if room <= 0:
            return 0
        # (those in flight are due too, until answered: room is made for them)
        due = await self.store.due_wallet_calls(self.clock(), limit=500 + len(self._flights))
        mine = [
            c for c in due if c["transaction_id"] not in self._flights and self.serves(c["table"])
        ][:room]
        tasks = [self._launch(call) for call in mine]
        if wait and tasks:
            await asyncio.wait(tasks)
        return len(mine)

    def _launch(self, call: dict[str, Any], early: bool = False) -> asyncio.Task[WalletAnswer]:
        """The task sending ``call`` (the one already on its way, if it is)."""
        txn = call["transaction_id"]
        task = self._flights.get(txn)
        if task is not None:
            return task
        self._answered[txn] = asyncio.get_running_loop().create_future()
        task = asyncio.create_task(self._fly(call, early), name=f"wallet-{call['kind']}-{txn}")
        self._flights[txn] = task

        def landed(done: asyncio.Task[WalletAnswer]) -> None:
            self._flights.pop(txn, None)
            answered = self._answered.pop(txn, None)
            if answered is not None and not answered.done():  # ended with nothing stored
                answered.set_result(WalletAnswer(UNAVAILABLE, False, None, "not sent"))
            self._wake.set()  # room for another call

        task.add_done_callback(landed)
        return task

    async def _fly(self, call: dict[str, Any], early: bool) -> WalletAnswer:
        """:meth:`send` as a task of its own: what goes wrong is logged, never raised."""
        try:
            return await self.send(call, early=early)
        except StoreError as exc:  # the answer not stored: the call is sent again later
            log.warning("wallet courier: %s not stored (%s)", call["transaction_id"], exc)
        except Exception:
            log.exception("wallet courier: sending %s failed; going on", call["transaction_id"])
        return WalletAnswer(UNAVAILABLE, False, None, "not stored")

    async def send(self, call: dict[str, Any], *, early: bool = False) -> WalletAnswer:
        """Send one call once and store what came of it; ``early``: before its time (a
        debit of the player's waits for it)."""
        txn, player = call["transaction_id"], call["player"]
        # Its first sending by anyone: stored here, not sent before, by no other process.
        first = int(call["attempts"]) == 0 and txn in self._fresh and self.owns(call["table"])
        self._fresh.discard(txn)
        self._flying[player] += 1
        self._moves[player] += 1
        moves = self._moves[player]
        try:
            answer = await self.wallet.deliver(call)
            # Alone: no other call of the player's started, landed or flew meanwhile.
            alone = self._moves[player] == moves and self._flying[player] == 1
            await self._record(call, answer, early)
            answered = self._answered.get(txn)
            if answered is not None and not answered.done():
                answered.set_result(answer)
            if answer.status == OK and call["kind"] in ("credit", "rollback"):
                await self._balance_after(call, answer, first and alone)
        finally:
            self._flying[player] -= 1
            self._moves[player] += 1
            if self._flying[player] <= 0:
                del self._flying[player], self._moves[player]
        if self.on_sent is not None:
            self.on_sent(call["kind"], answer.status if answer.clear else "retry")
        if player in self._doubt and player not in self._flying:
            await self._ask_balance(player, self._doubt.pop(player))
        return answer

    async def _record(self, call: dict[str, Any], answer: WalletAnswer, early: bool) -> None:
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
        else:  # tried again later: the wait doubles (not for a try made early)
            if answer.clear and answer.status in SESSION_OR_ACCOUNT:
                log.error(
                    "wallet: %s %s refused for the player's session or account (%s); a"
                    " wallet must apply credits and rollbacks whatever they are: sent again",
                    call["kind"],
                    txn,
                    answer.status,
                )
            waited = max(0.0, float(call["next_at"]) - float(call["updated"]))
            wait = backoff(waited, again=early)
            changes = {"next_at": now + wait, "error": answer.message}
        changes.update(attempts=attempts, updated=now, answer=answer.to_dict())
        await self.store.update_wallet_call(txn, changes)
        call.update(changes)  # a try again (deliver_first) counts from here
        if answer.status == OK and call["kind"] == "rollback" and call.get("reference"):
            await self.store.update_wallet_call(
                call["reference"], {"state": "rolled_back", "updated": now}
            )

    async def _balance_after(self, call: dict[str, Any], answer: WalletAnswer, fresh: bool) -> None:
        """The player's balance after an acknowledged credit or rollback: the answer's,
        when it cannot be a repeat's; else asked of the wallet once their calls land."""
        if self.on_balance is None:
            return
        if fresh and answer.balance is not None and call["player"] not in self._doubt:
            await self.on_balance(call["player"], answer.balance, None)
        else:
            self._doubt[call["player"]] = call.get("currency")

    async def _ask_balance(self, player: str, currency: str | None) -> None:
        if self.on_balance is None:
            return
        since = mirror_generation(self.store, player)  # (a slow answer: older than any since)
        try:
            balance = await self.wallet.balance(player, currency)
        except WalletError as exc:  # the mirror stays; the next balance sets it
            log.warning("wallet: no balance for %s after a repeated call (%s)", player, exc)
            return
        await self.on_balance(player, balance, since)

    async def deliver_first(
        self, players: Iterable[str], deadline: float
    ) -> dict[str, asyncio.Task[bool]]:
        """Before ``players``' debits: send each of their credits and rollbacks the wallet
        has not answered clearly yet, now, whatever their backoff, trying again while
        ``deadline`` (``time.monotonic()``) allows. For each player who has one, a task:
        True once the wallet has answered each of theirs, False if one is still
        unanswered at the deadline (their debit must not go)."""
        wanted = set(players)
        if not wanted:
            return {}
        try:
            # every pending call: none is due later than a retry's longest wait from now
            later = self.clock() + LATEST
            pending = await self.store.due_wallet_calls(later, limit=WALLET_CALLS_LIMIT)
        except StoreError as exc:  # cannot tell: the debits go (the store wrote them)
            log.warning("wallet courier: earlier calls not read before debits (%s)", exc)
            return {}
        mine: dict[str, list[dict[str, Any]]] = {}
        for call in pending:
            if call["player"] in wanted and _unanswered(call):
                mine.setdefault(call["player"], []).append(call)
        return {
            player: asyncio.create_task(self._all_answered(calls, deadline))
            for player, calls in mine.items()
        }

    async def _all_answered(self, calls: list[dict[str, Any]], deadline: float) -> bool:
        answered = await asyncio.gather(*(self._until_answered(c, deadline) for c in calls))
        return all(answered)

    async def _until_answered(self, call: dict[str, Any], deadline: float) -> bool:
        """Send ``call`` (or join its sending) until the wallet answers it clearly or
        ``deadline`` passes; whether it answered. The sending goes on past the deadline."""
        wait = FIRST_FIRST
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            self._launch(call, early=float(call["next_at"]) > self.clock())
            answered = self._answered[call["transaction_id"]]
            try:
                answer = await asyncio.wait_for(asyncio.shield(answered), left)
            except TimeoutError:
                return False
            if answer.clear:
                return True
            await asyncio.sleep(min(wait, max(0.0, deadline - time.monotonic())))
            wait = min(wait * 2, FIRST_CAP)
            try:  # as stored now (its tries so far; answered meanwhile by another process?)
                stored = await self.store.wallet_call(call["transaction_id"])
            except StoreError:
                continue
            if stored is None or stored["state"] != "pending" or not _unanswered(stored):
                return True
            call = stored
