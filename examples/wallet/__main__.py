"""``python -m examples.wallet``: run the reference wallet (docs/wallet.md §5).

    python -m examples.wallet --port 8300 --db wallet.sqlite3 --secret KEY

then start Chemmy with ``--wallet seamless --wallet-url http://127.0.0.1:8300
--wallet-secret KEY``. The key may come from ``WALLET_SECRET`` instead of the command
line (where other users of the machine can read it). Once it listens it prints
``listening on http://HOST:PORT`` on stdout (with ``--port 0``, the port the system
chose), and a line on stderr for each call. SIGTERM or Ctrl-C stops it; the balances
and transactions are in the database file, the faults and the request log are not.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from collections.abc import Sequence
from types import FrameType

from .ledger import Ledger
from .service import WalletServer

#: Chemmy refuses keys shorter than this (server/net/config.py); so does the wallet.
MIN_SECRET_BYTES = 32


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m examples.wallet",
        description="The reference operator wallet for Chemmy's seamless mode (docs/wallet.md).",
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on")
    parser.add_argument("--port", type=int, default=8300, help="port (0: any free one)")
    parser.add_argument("--db", default="wallet.sqlite3", help="the SQLite file of balances")
    parser.add_argument(
        "--secret",
        default=os.environ.get("WALLET_SECRET"),
        help="the key Chemmy signs its calls with (its --wallet-secret; or WALLET_SECRET)",
    )
    parser.add_argument("--currency", default="EUR", help="the currency of new players")
    parser.add_argument(
        "--start-balance",
        type=int,
        default=100_000,
        help="what a player the wallet has never seen starts with, in minor units",
    )
    args = parser.parse_args(argv)
    if not args.secret or len(args.secret.encode("utf-8")) < MIN_SECRET_BYTES:
        parser.error(f"--secret (or WALLET_SECRET) of at least {MIN_SECRET_BYTES} bytes is needed")
    return args


def _stop(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(0)


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    ledger = Ledger(args.db, args.currency, args.start_balance)
    server = WalletServer((args.host, args.port), ledger, args.secret.encode("utf-8"))
    signal.signal(signal.SIGTERM, _stop)
    print(f"listening on {server.url}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
        ledger.close()
        sys.stderr.flush()


if __name__ == "__main__":
    main()
