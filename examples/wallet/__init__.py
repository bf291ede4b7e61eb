"""The reference operator wallet: the other side of docs/wallet.md §3, as a real HTTP server.

``python -m examples.wallet --port 0 --db wallet.sqlite3 --secret KEY`` serves
``POST /balance``, ``/debit``, ``/credit`` and ``/rollback``, signed as docs/wallet.md §1
says (with Chemmy's own :mod:`server.wallet.signing`, so the two sides cannot drift
apart), and keeps the players' balances and every transaction in SQLite.

It is written to be read. The modules are the parts every operator's wallet has:

- :mod:`.ledger`: the money. Each ``transaction_id`` is applied at most once and a
  repeat is answered with the first answer; a debit checks funds, blocks and limits; a
  rollback that comes before its debit is remembered so that the late debit is refused.
  A real wallet keeps its players' accounts in its own system; the rules are the ones to
  copy.
- :mod:`.service`: the HTTP side: read the body, check the signature over the bytes
  received, parse, answer JSON.
- :mod:`.faults`: what a real wallet does not have: failures injected on cue through an
  unsigned ``/_control/`` API answered on loopback only, and a log of every request, so
  that Chemmy's tests can see how it behaves when the wallet misbehaves.

docs/wallet.md §5 says how to run it and what each fault does.
"""
