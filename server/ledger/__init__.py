"""The ledger: the accounts money moves between, the entries that move it, and the money
rules every store keeps, each written once.

- :mod:`.accounts`: the account names (``player:``, ``stake:``, ``held:``, ``house``,
  ``cashier``, ``operator``, ``wallet:``), :class:`~.accounts.Entry`, the
  :class:`~.accounts.Wallet` a table posts to and the pure
  :class:`~.accounts.MemoryWallet`;
- :mod:`.rules`: the guarded accounts, the range, key idempotency, the epoch fence, the
  constructors of every entry outside settlement, and the SQL and Lua text the stores
  take these rules from;
- :mod:`.flows`: what each entry adds to a player's usage per UTC day, and the guards
  (limits) a commit holds on it;
- :mod:`.audit`: every hold has exactly one outcome; what ``Store.audit`` reports.

Pure: no I/O, no clock but what a caller hands in. The table (which makes the entries of
play, in settlement) and the stores (which keep them) both read it; it reads neither.
"""
