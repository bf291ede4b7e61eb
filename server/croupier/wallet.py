"""One table's wallet, as the croupier keeps it: the synchronous wallet the pure table
decides with, filled from the store and emptied into it with each step.

A table moves money only between its own accounts and its players' — ``player:<id>``,
``stake:<table>:<id>``, ``held:<table>`` and ``house`` — and the store checks every
movement again, atomically, where the balances live (no ``player:`` or ``stake:``
account below zero, each key once). So this wallet is not the truth about anyone's
money, only this table's view of it:

- ``stake:`` and ``held:`` accounts are this table's alone: their balances here are
  exact (loaded from the store when the table starts or is restored, then moved only by
  this table's steps);
- ``player:`` balances are a cache: loaded when a player joins or sits, refreshed from
  every commit's result (which carries each touched player's balance after it) and when
  a bet was refused for want of funds (another table, or a deposit, may have moved
  them). If the cache was too high, the store refuses the commit (``Overdrawn``), the
  step is undone and the bet refused: never an overdraft, never money made up;
- ``house`` is never checked here (it may go below zero): only its changes matter.

Nothing here outlives a step: the entries of a step are drained into its commit, and no
key is remembered afterwards (the store is where a key is known), so a step undone
after a failed commit leaves no trace, and retried, posts each entry once.

Pure data: no I/O (the actor does the loading and the committing).
"""

from __future__ import annotations

from collections.abc import Iterable

from server.ledger.accounts import GUARDED_PREFIXES, DuplicateEntry, Entry, InsufficientFunds

__all__ = ["TableWallet"]


class TableWallet:
    """The :class:`~server.ledger.accounts.Wallet` of one table in the server."""

    def __init__(
        self, balances: dict[str, int] | None = None, *, confirms_holds: bool = False
    ) -> None:
        self.balances: dict[str, int] = dict(balances or {})
        #: The operator's seamless wallet takes each coup's wagers before the cards.
        self.confirms_holds = confirms_holds
        self.pending: list[Entry] = []
        self._keys: set[str] = set()  # this step's keys only

    def balance(self, account: str) -> int:
        return self.balances.get(account, 0)

    def accounts(self) -> list[str]:
        return list(self.balances)

    def transfer(
        self, key: str, src: str, dst: str, amount: int, kind: str, round_id: str | None = None
    ) -> None:
        """Post one entry for this step (see :meth:`server.ledger.accounts.Wallet.transfer`)."""
        if key in self._keys:
            raise DuplicateEntry(f"ledger key {key!r} was posted twice in one step")
        if not isinstance(amount, int) or isinstance(amount, bool) or amount <= 0:
            raise ValueError(f"a transfer is a positive whole amount, not {amount!r}")
        if src == dst:
            raise ValueError("a transfer needs two accounts")
        if src.startswith(GUARDED_PREFIXES) and self.balance(src) < amount:
            raise InsufficientFunds(f"{src} has {self.balance(src)}, needs {amount}")
        self.balances[src] = self.balance(src) - amount
        self.balances[dst] = self.balance(dst) + amount
        self._keys.add(key)
        self.pending.append(Entry(key, src, dst, amount, kind, round_id))

    def drain(self) -> list[Entry]:
        """This step's entries, for its commit; the wallet forgets them."""
        out, self.pending = self.pending, []
        self._keys.clear()
        return out

    def load(self, balances: Iterable[tuple[str, int]]) -> None:
        """Balances as the store has them now."""
        for account, amount in balances:
            self.balances[account] = amount
