"""Where players' money lives: Chemmy's own ledger, or the operator's wallet (docs/wallet.md)."""
