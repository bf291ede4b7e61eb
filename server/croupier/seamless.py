"""A table actor's side of an operator's seamless wallet (docs/wallet.md §3): the debit
run of each round while the table waits in DEBITING, the rollbacks of debits without a
clear answer, the player's mirror set from the operator's balance at a join, and the
credits and rollbacks each step's commit carries.

The calls are stored before they are sent (reconcilable), and the table hears who stands
through its own command (``Debited``), queued like any other: the table decides what a
refusal means. It never steps the table, never moves money in the ledger itself (the
wallet and the store do) and never decides a rule.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

from server.protocol.errors import ChemmyError, StoreError
from server.table.state import Phase
from server.vocabulary import commands as c
from server.wallet.base import Wallet, WalletAnswer, WalletError
from server.wallet.calls import closing_calls, debit_call, rollback_call, transaction_id
from server.wallet.mirror import sync_mirror

from .retry import retrying

if TYPE_CHECKING:
    from .actor import TableActor

__all__ = ["HELD_BACK", "BeforeDebits", "Seamless"]

log = logging.getLogger("chemmy.croupier")

#: Delivers the given players' unanswered credits and rollbacks before their debits,
#: until a deadline (``time.monotonic()``): for each player who has one, whether the
#: wallet answered all of them in time (server.wallet.courier.Courier.deliver_first).
BeforeDebits = Callable[[list[str], float], Awaitable[Mapping[str, Awaitable[bool]]]]
#: Why a debit was not sent: the player's earlier credit or rollback still unanswered at
#: the debits' deadline (docs/wallet.md §3, "The order of a player's calls").
HELD_BACK = "an earlier credit or rollback of the player's was not answered in time"


class Seamless:
    """The operator's wallet ``money`` as one table actor uses it."""

    def __init__(self, actor: TableActor, money: Wallet, timeout: float) -> None:
        self.actor = actor
        self.money = money
        #: ``--wallet-timeout``: one deadline bounds a coup's debits, one a join's balance.
        self.timeout = timeout
        self._task: asyncio.Task[None] | None = None
        self._debited_round: str | None = None

    @property
    def table_id(self) -> str:
        return self.actor.table_id

    def cancel(self) -> None:
        """Stop the debit run in progress: whoever runs the table next (this process
        again, or a new owner after a failover) debits again, with the same ids."""
        if self._task is not None:
            self._task.cancel()

    def closing_calls(
        self,
        last: dict[str, Any],
        state: dict[str, Any],
        records: list[dict[str, Any]],
        parts: Mapping[str, dict[str, Any]],
    ) -> list[dict[str, Any]]:
        """With a wallet that confirms holds, the credits and rollbacks of the step from
        ``last`` to ``state`` (every wager closed: the bettors' without a seat too, whose
        wagers are in their stored ``parts``)."""
        if not self.money.confirms_holds:
            return []
        actor = self.actor
        return closing_calls(
            last,
            state,
            records,
            actor.currency,
            actor.clock(),
            game=self.money.game,
            parts=parts,
        )

    async def mirror(self, player: str, session: dict[str, Any] | None = None) -> None:
        """Set the player's mirror from the operator's balance (a join, in the session
        the join came from). A wallet that cannot say leaves it as it was: the debit
        decides anyway."""
        try:
            async with asyncio.timeout(self.timeout):  # the table waits meanwhile
                balance = await self.money.balance(player, self.actor.currency, session)
        except (WalletError, TimeoutError) as exc:
            log.warning(
                "table %s: no balance for %s from the wallet (%s)", self.table_id, player, exc
            )
            return
        await sync_mirror(self.actor.store, player, balance, [self.table_id])

    # -- a round's debits ---------------------------------------------------------------
    def maybe_debit(self) -> None:
        """The table waits in DEBITING: debit its wagers (once per round here; a new
        owner, after a failover, debits again with the same ids)."""
        table = self.actor.table
        if table.phase is not Phase.DEBITING or table.debiting is None:
            return
        if self._debited_round == table.round_id:
            return
        self._debited_round = table.round_id
        self._task = asyncio.create_task(
            self._debit(table.round_id, {p: dict(b) for p, b in table.debiting.items()}),
            name=f"debits-{self.table_id}",
        )

    async def _debit(self, rid: str, debiting: dict[str, dict[str, int]]) -> None:
        """One debit per player, all at once; the table hears who stands (Debited). A
        debit with no clear answer by the deadline is refused and rolled back."""
        try:
            refused = await self._debit_all(rid, debiting)
        except Exception:  # a bug here must not leave the table waiting for ever
            log.exception("table %s: debiting round %s failed", self.table_id, rid)
            refused = dict.fromkeys(debiting, "wallet_unavailable")
            await self.roll_back(rid, debiting, "debit_unanswered")
        await self._tell_debited(rid, refused)

    def _calls(self, rid: str, debiting: dict[str, dict[str, int]]) -> list[dict[str, Any]]:
        """The round's debit calls, one per player."""
        actor, now = self.actor, self.actor.clock()
        return [
            debit_call(
                self.table_id,
                rid,
                pid,
                bets,
                actor.currency,
                now,
                session=actor.session_of(pid),
                game=self.money.game,
            )
            for pid, bets in sorted(debiting.items())
        ]

    async def _debit_all(self, rid: str, debiting: dict[str, dict[str, int]]) -> dict[str, str]:
        """Debit the round's wagers: player -> the refusal of each who does not stand.
        One deadline, ``--wallet-timeout`` from now, bounds all of it (docs/wallet.md §3,
        "Timeouts"): storing the calls, each player's earlier credits and rollbacks
        delivered first (§3, "The order of a player's calls"), each debit's tries."""
        money, hooks = self.money, self.actor.hooks
        started = time.monotonic()
        deadline = started + self.timeout
        calls = self._calls(rid, debiting)
        await self._store_calls(calls)  # written before they are sent: reconcilable
        # A debit an owner before a crash gave up on (its rollback stored) stays refused:
        # sent again, its repeat would be answered ok while the rollback undoes it.
        given_up = await self._given_up(calls)
        refused = dict.fromkeys(sorted(call["player"] for call in given_up), "wallet_unavailable")
        calls = [call for call in calls if call not in given_up]
        # A player's credit or rollback the wallet has not answered goes first: their
        # debit never overtakes it, and one still unanswered at the deadline holds the
        # debit back (each player's debit goes as soon as their own calls are answered).
        first: Mapping[str, Awaitable[bool]] = {}
        if hooks.before_debits is not None and calls:
            first = await hooks.before_debits([call["player"] for call in calls], deadline)

        async def debit(call: dict[str, Any]) -> WalletAnswer | None:
            ahead = first.get(call["player"])
            if ahead is not None and not await ahead:
                return None  # held back: never sent
            return await money.debit(call, deadline)

        answers = await asyncio.gather(*(debit(call) for call in calls))
        if hooks.on_debits is not None:
            outcomes = [
                "not_sent" if a is None else a.status if a.clear else "retry" for a in answers
            ]
            hooks.on_debits(time.monotonic() - started, outcomes)
        unanswered = await self._record_answers(calls, answers, debiting, refused)
        if unanswered:
            await self.roll_back(rid, unanswered, "debit_unanswered")
        return refused

    async def _record_answers(
        self,
        calls: list[dict[str, Any]],
        answers: list[WalletAnswer | None],
        debiting: dict[str, dict[str, int]],
        refused: dict[str, str],
    ) -> dict[str, dict[str, int]]:
        """Each debit's answer stored with its call, and each refusal put in ``refused``;
        the wagers of the debits to roll back (never sent, or no clear answer)."""
        unanswered: dict[str, dict[str, int]] = {}
        results: list[tuple[dict[str, Any], dict[str, Any]]] = []
        for call, answer in zip(calls, answers, strict=True):
            pid = call["player"]
            changes: dict[str, Any] = {"updated": self.actor.clock()}
            if answer is None:  # never sent; rolled back all the same, so it never can be
                refused[pid] = "wallet_unavailable"
                unanswered[pid] = debiting[pid]
                changes["error"] = HELD_BACK
                results.append((call, changes))
                continue
            changes.update(attempts=1, answer=answer.to_dict())
            if answer.ok:
                changes["state"] = "acknowledged"
            else:
                refused[pid] = (
                    answer.status if answer.status in c.DEBIT_REFUSALS else "wallet_unavailable"
                )
                changes["error"] = answer.status
                if answer.clear:
                    changes["state"] = "refused"
                else:  # it may yet land: roll it back, so that it cannot
                    unanswered[pid] = debiting[pid]
            results.append((call, changes))
        store = self.actor.store
        for call, changes in results:
            with contextlib.suppress(StoreError):
                stored = await store.wallet_call(call["transaction_id"])
                if stored is not None and stored["state"] == "pending":  # not rolled back
                    await store.update_wallet_call(call["transaction_id"], changes)
        return unanswered

    async def roll_back(self, rid: str, wagers: dict[str, dict[str, int]], reason: str) -> None:
        """Store a rollback of each of ``wagers``' debits, then have them delivered."""
        actor, now = self.actor, self.actor.clock()
        calls = [
            rollback_call(
                self.table_id,
                rid,
                pid,
                sum(bets.values()),
                actor.currency,
                now,
                reason,
                session=actor.session_of(pid),
                game=self.money.game,
            )
            for pid, bets in sorted(wagers.items())
        ]
        await self._store_calls(calls)
        if actor.hooks.on_calls is not None:
            actor.hooks.on_calls(calls)

    async def _tell_debited(self, rid: str, refused: dict[str, str]) -> None:
        """Step Debited, again after a failed step (the store down), while the table
        still waits for this round's debits."""
        actor = self.actor

        def waiting() -> bool:
            table = actor.table
            return not (actor.closed or actor.lost) and (
                table.phase is Phase.DEBITING and table.round_id == rid
            )

        await retrying(
            lambda: actor.call(c.Debited(round_id=rid, refused=refused)),
            errors=ChemmyError,
            what=f"debits of {rid} not stepped",
            table_id=self.table_id,
            going_on=waiting,
        )

    async def _given_up(self, calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The debits of ``calls`` whose rollback is stored already (reading again while
        the store cannot say)."""
        store = self.actor.store

        async def read() -> list[dict[str, Any]]:
            return [
                call
                for call in calls
                if await store.wallet_call(
                    transaction_id(call["round_id"], call["player"], "rollback")
                )
                is not None
            ]

        found = await retrying(
            read, errors=StoreError, what="wallet calls not read", table_id=self.table_id
        )
        return found or []

    async def _store_calls(self, calls: list[dict[str, Any]]) -> None:
        """Store ``calls`` (pending), trying again while the store cannot."""
        store = self.actor.store

        async def write() -> None:
            await store.commit(calls=calls)  # type: ignore[call-arg]

        await retrying(
            write, errors=StoreError, what="wallet calls not stored", table_id=self.table_id
        )
