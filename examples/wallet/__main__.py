"""``python -m examples.wallet``: run the reference wallet (docs/wallet.md §5).

    python -m examples.wallet --port 8300 --db wallet.sqlite3 --secret KEY

then start Chemmy with ``--wallet seamless --wallet-url http://127.0.0.1:8300
--wallet-secret KEY``. The key may come from ``WALLET_SECRET`` instead of the command
line (where other users of the machine can read it). Or, so that the wallet holds no
key that could sign a credit, give it Chemmy's public key instead,
``--chemmy-key KID=chemmy.pub.pem`` (twice while Chemmy switches keys), and start
Chemmy with ``--wallet-signature ed25519`` (or ``rsa``) ``--wallet-signing-key-file
chemmy.pem --wallet-key-id KID``. Once it listens it prints
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
from pathlib import Path
from types import FrameType

from server.wallet.signing import load_public_key, parse_key_list

from .ledger import Ledger
from .service import WalletServer

#: Chemmy refuses keys shorter than this (server/process/config.py); so does the wallet.
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
    parser.add_argument(
        "--chemmy-key",
        action="append",
        default=[],
        metavar="KID=PATH",
        help="a public key of Chemmy's (PEM, Ed25519 or RSA) and its key id; give two"
        " while Chemmy switches keys",
    )
    parser.add_argument(
        "--game", default=None, help="the one game code taken (Chemmy's --wallet-game)"
    )
    parser.add_argument(
        "--known-players-only",
        action="store_true",
        help="no player is created on first sight: one not set through /_control/players"
        " is unknown_player",
    )
    parser.add_argument("--currency", default="EUR", help="the currency of new players")
    parser.add_argument(
        "--start-balance",
        type=int,
        default=100_000,
        help="what a player the wallet has never seen starts with, in minor units",
    )
    args = parser.parse_args(argv)
    if args.secret is not None and len(args.secret.encode("utf-8")) < MIN_SECRET_BYTES:
        parser.error(f"--secret (or WALLET_SECRET) must be at least {MIN_SECRET_BYTES} bytes")
    if args.secret is None and not args.chemmy_key:
        parser.error("give --secret (or WALLET_SECRET), or Chemmy's public key (--chemmy-key)")
    try:
        args.keys = {
            kid: load_public_key(Path(path).read_bytes())
            for kid, path in parse_key_list(args.chemmy_key).items()
        }
    except (OSError, ValueError) as exc:
        parser.error(f"--chemmy-key: {exc}")
    return args


def _stop(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(0)


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(argv)
    ledger = Ledger(args.db, args.currency, args.start_balance, known_only=args.known_players_only)
    secret = None if args.secret is None else args.secret.encode("utf-8")
    server = WalletServer((args.host, args.port), ledger, secret, keys=args.keys, game=args.game)
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
