"""The reference operator wallet (``examples/wallet``) as a real subprocess, for any test.

``with reference_wallet(tmp_path, secret) as wallet:`` starts
``python -m examples.wallet --port 0`` on a database file in ``tmp_path/wallet/``
through the test kit's launcher (:class:`tests.kit.Process`: the port is read from the
line it prints once it listens), and stops it at the end. The :class:`ReferenceWallet`
it yields is what a test needs:

- :attr:`~ReferenceWallet.url`, :attr:`~ReferenceWallet.secret`: Chemmy's
  ``--wallet-url`` and ``--wallet-secret`` (``secret=None`` and ``keys``: the wallet
  holds Chemmy's public keys instead, ``--chemmy-key``);
- :meth:`~ReferenceWallet.call`: a wallet call signed as Chemmy signs it (or not, or
  badly, or at another time), the :class:`httpx.Response` back;
- :meth:`~ReferenceWallet.faults`, :meth:`~ReferenceWallet.reset`,
  :meth:`~ReferenceWallet.set_player`, :meth:`~ReferenceWallet.state`,
  :meth:`~ReferenceWallet.log`, :meth:`~ReferenceWallet.balance`,
  :meth:`~ReferenceWallet.end_session`,
  :meth:`~ReferenceWallet.transaction`, :meth:`~ReferenceWallet.wait_for_log`: the
  wallet's ``/_control/`` API (docs/wallet.md §5);
- :meth:`~ReferenceWallet.kill` (``kill -9``) and :meth:`~ReferenceWallet.restart`
  (on the same database, and by default the same port, so a Chemmy pointed at it
  finds it again). Faults and the request log do not survive a restart; balances
  and transactions do.

Every wait is scaled by ``CHEMMY_TESTS_TIMEOUT_FACTOR`` (:func:`tests.kit.scaled`).
"""

from __future__ import annotations

import contextlib
import json
import re
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import httpx
from cryptography.hazmat.primitives import serialization

from server.wallet.signing import HEADER, PrivateKey, signature_header
from tests.kit import Process, scaled

__all__ = ["LISTENING", "SECRET", "ReferenceWallet", "reference_wallet", "write_keys"]

#: The line the wallet prints on stdout once it listens.
LISTENING = re.compile(r"^listening on http://(?P<host>[^\s/:]+):(?P<port>\d+)$")
#: A wallet secret for tests (Chemmy wants 32 bytes or more).
SECRET = "reference-wallet-test-secret-0123456789abcdef"


class ReferenceWallet:
    """``python -m examples.wallet`` on ``home/wallet.sqlite3`` (see the module's doc)."""

    def __init__(
        self,
        home: Path,
        secret: str | None = SECRET,
        *,
        currency: str = "EUR",
        start_balance: int = 100_000,
        host: str = "127.0.0.1",
        keys: Mapping[str, Path] | None = None,
        game: str | None = None,
        known_players_only: bool = False,
    ) -> None:
        home.mkdir(parents=True, exist_ok=True)
        self.home = home
        self.host = host
        self.secret = secret
        self.db = home / "wallet.sqlite3"
        self._options = ["--currency", currency, "--start-balance", str(start_balance)]
        for kid, path in (keys or {}).items():
            self._options += ["--chemmy-key", f"{kid}={path}"]
        if game is not None:
            self._options += ["--game", game]
        if known_players_only:
            self._options.append("--known-players-only")
        self.process = Process(self._command(0), ready=LISTENING, merge_stdout=True)
        # No keep-alive: a fault that drops a connection never leaves a dead one pooled.
        self._http = httpx.Client(
            timeout=scaled(10), limits=httpx.Limits(max_keepalive_connections=0)
        )

    def _command(self, port: int) -> list[str]:
        command = [sys.executable, "-m", "examples.wallet", "--host", self.host]
        command += ["--port", str(port), "--db", str(self.db)]
        if self.secret is not None:
            command += ["--secret", self.secret]
        return command + self._options

    # -- the process -------------------------------------------------------------------
    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT``: Chemmy's ``--wallet-url``."""
        assert self.process.port, "not started"
        host = "127.0.0.1" if self.process.host == "0.0.0.0" else self.process.host
        return f"http://{host}:{self.process.port}"

    def start(self) -> None:
        self.process.start()

    def kill(self) -> None:
        """``kill -9``: every connection drops; the database keeps what was committed."""
        self.process.kill()

    def restart(self, *, keep_port: bool = True) -> None:
        """Kill the wallet if it runs, and start it again on the same database (and, with
        ``keep_port``, the same port: the same :attr:`url`)."""
        port = self.process.port if keep_port else 0
        self.kill()
        self.process.args = self._command(port)
        self.process.start()

    def close(self) -> None:
        """Stop the wallet (SIGTERM, then SIGKILL) and close the HTTP client."""
        try:
            self.process.stop()
        finally:
            self._http.close()

    # -- calls as Chemmy makes them ----------------------------------------------------
    def call(
        self,
        endpoint: str,
        body: Mapping[str, Any] | bytes,
        *,
        secret: str | None = None,
        now: float | None = None,
        signature: str | None = None,
        timeout: float | None = None,
    ) -> httpx.Response:
        """``POST /<endpoint>`` with ``body`` (a dict is sent as JSON), signed with
        ``secret`` (default the wallet's) at ``now`` (default the clock), or with the
        ``Chemmy-Signature`` header ``signature`` as given ("" for none). Raises what
        httpx raises when the wallet drops the connection or holds it past ``timeout``."""
        data = body if isinstance(body, bytes) else json.dumps(body).encode("utf-8")
        path = f"/{endpoint}"
        if signature is None:
            shared = secret if secret is not None else self.secret
            assert shared is not None, "sign with a key pair: give signature"
            signature = signature_header(
                shared.encode("utf-8"), time.time() if now is None else now, "POST", path, data
            )
        headers = {"Content-Type": "application/json"}
        if signature:
            headers[HEADER] = signature
        return self._http.post(
            self.url + path,
            content=data,
            headers=headers,
            timeout=scaled(10) if timeout is None else timeout,
        )

    # -- the control API ---------------------------------------------------------------
    def _control(self, method: str, name: str, body: Mapping[str, Any] | None = None) -> Any:
        answer = self._http.request(method, f"{self.url}/_control/{name}", json=body)
        assert answer.status_code == 200, answer.text
        return answer.json()

    def faults(self, *rules: Mapping[str, Any], latency: float = 0.0) -> dict[str, Any]:
        """Put these fault rules (and ``latency`` seconds on every answer) in force, in
        place of the ones before: ``faults({"endpoint": "debit", "fault": "http500",
        "count": 2})``. The faults in force, as the wallet has them."""
        answer = self._control("POST", "faults", {"latency": latency, "rules": list(rules)})
        faults: dict[str, Any] = answer["faults"]
        return faults

    def reset(self) -> None:
        """No more faults, and every request a ``timeout``, ``slow``, ``held`` or ``drip``
        holds goes on now."""
        self._control("POST", "reset", {})

    def set_player(self, player: str, **settings: Any) -> dict[str, Any]:
        """Set ``balance``, ``blocked``, ``debit_limit``, ``daily_limit`` (None: no
        limit) or ``currency`` of ``player`` (created if new); the player after."""
        answer = self._control("POST", "players", {"player": player, **settings})
        row: dict[str, Any] = answer["player"]
        return row

    def end_session(self, session: str, ended: bool = True) -> None:
        """The player logged out of ``session`` at the operator (``ended=False``: back)."""
        self._control("POST", "sessions", {"session": session, "ended": ended})

    def state(self) -> dict[str, Any]:
        """``{"players": {id: {...}}, "ended_sessions": [...], "transactions": [...],
        "faults": {...}}``."""
        state: dict[str, Any] = self._control("GET", "state")
        return state

    def log(self) -> list[dict[str, Any]]:
        """Every wallet request received since the start, in order: ``endpoint``,
        ``transaction_id``, ``request_id``, ``player``, ``game``, ``session``, ``brand``,
        ``jurisdiction``, ``kid`` (the key of Chemmy's that signed it; None: the shared
        secret), ``http`` (None: no answer), ``status``, ``fault``, ``repeat``."""
        requests: list[dict[str, Any]] = self._control("GET", "log")["requests"]
        return requests

    def balance(self, player: str) -> int:
        """``player``'s balance now, from :meth:`state` (not a signed call)."""
        balance: int = self.state()["players"][player]["balance"]
        return balance

    def wait_for_log(self, predicate: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
        """The first log entry ``predicate`` is true of, waiting (scaled 10 s) for it to
        come: a request the caller gave up on may reach the wallet later."""
        deadline = time.monotonic() + scaled(10)
        while True:
            found = [entry for entry in self.log() if predicate(entry)]
            if found:
                return found[0]
            assert time.monotonic() < deadline, f"no such request in {self.log()}"
            time.sleep(0.02)

    def transaction(self, transaction_id: str) -> dict[str, Any]:
        """One transaction of :meth:`state`."""
        transactions: list[dict[str, Any]] = self.state()["transactions"]
        found = [t for t in transactions if t["transaction_id"] == transaction_id]
        assert found, f"no transaction {transaction_id}"
        return found[0]


@contextlib.contextmanager
def reference_wallet(
    tmp_path: Path, secret: str | None = SECRET, **options: Any
) -> Iterator[ReferenceWallet]:
    """The reference wallet running on ``tmp_path/wallet/``, stopped at the end;
    ``options`` are :class:`ReferenceWallet`'s (``currency``, ``start_balance``,
    ``host``, ``keys``, ``game``, ``known_players_only``)."""
    wallet = ReferenceWallet(tmp_path / "wallet", secret, **options)
    try:
        wallet.start()
        yield wallet
    finally:
        wallet.close()


def write_keys(home: Path, name: str, key: PrivateKey) -> tuple[Path, Path]:
    """The private key's PEM file and its public half's."""
    home.mkdir(parents=True, exist_ok=True)
    private, public = home / f"{name}.pem", home / f"{name}.pub.pem"
    private.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    public.write_bytes(
        key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )
    return private, public
