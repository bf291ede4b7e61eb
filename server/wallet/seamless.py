"""The operator's seamless wallet, called over HTTP (docs/wallet.md §3).

Every call is a signed ``POST`` (:mod:`server.wallet.signing`: HMAC under
``--wallet-secret``, or Ed25519/RSA under ``--wallet-signing-key-file``, as
``--wallet-signature`` says) with a JSON body, made with one pooled
``httpx.AsyncClient``; the signed path is the ``--wallet-url``'s own path followed by
the call's (``/chemmy/debit`` for ``https://wallet.example/chemmy``). What an answer
means is decided in one place, :func:`read_answer`: ``200`` with ``status: ok``
applied; ``200`` with another status refused; ``401``, ``408``, ``429``, ``5xx``, a
timeout, a reset or a ``200`` without a status: no clear answer (retry with the same
ids); any other answer (a ``3xx`` too: redirects are not followed) refused for good,
its ``status`` the body's, else ``http_<code>`` (a credit or rollback then ``failed``,
unless refused for the player's session or account: it is sent again all the same,
:func:`server.wallet.base.closing_outcome`). It never logs a key or a body.

Each call has one deadline for the whole exchange (docs/wallet.md §3, "Timeouts"): the
wait for a pooled connection, connecting, sending, and every read of the answer, however
it is dribbled, end together when it passes (``asyncio.timeout`` around the request, not
httpx's per-read timeouts). A debit's deadline is its coup's (``--wallet-timeout``); a
credit, rollback or balance call has ``--wallet-call-timeout`` each.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
import uuid
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import urlsplit

import httpx

from .base import OK, UNAVAILABLE, WalletAnswer, WalletError
from .calls import session_fields
from .signing import HEADER, HmacSigner, Signer

__all__ = ["SeamlessWallet", "read_answer"]

log = logging.getLogger("chemmy.wallet")

#: Seconds between a debit's tries while its deadline allows, doubling to the cap.
RETRY_FIRST = 0.05
RETRY_CAP = 0.5
#: Seconds one credit, rollback or balance call may take, from asking for a connection to
#: the answer's last byte (``--wallet-call-timeout``).
CALL_TIMEOUT = 10.0
#: Connections to the wallet at once, and those kept alive between calls.
MAX_CONNECTIONS = 200
KEEPALIVE_CONNECTIONS = 50


def read_answer(response: httpx.Response) -> WalletAnswer:
    """What an HTTP answer of the wallet means (docs/wallet.md §3, "Status codes")."""
    code = response.status_code
    try:
        body = response.json()
    except ValueError:
        body = None
    if not isinstance(body, dict):
        body = {}
    status = body.get("status")
    message = str(body.get("message", ""))[:500]
    balance = body.get("balance")
    if not isinstance(balance, int) or isinstance(balance, bool):
        balance = None
    if code == 200 and isinstance(status, str) and status:
        return WalletAnswer(status, True, balance, message, code)
    if code in (200, 401, 408, 429) or code >= 500:
        # Our signature refused (a configuration error: retried once it is fixed), the
        # request not read in time, the wallet busy or failing, or an answer we cannot
        # read: no clear answer.
        return WalletAnswer(UNAVAILABLE, False, None, message or f"HTTP {code}", code)
    if not isinstance(status, str) or not status or status == OK:
        status = f"http_{code}"  # (an "ok" with another HTTP status is not an ok)
    return WalletAnswer(status, True, balance, message, code)


class SeamlessWallet:
    """A :class:`~server.wallet.base.Wallet` that is the operator's own."""

    mode = "seamless"
    confirms_holds = True
    takes_deposits = False

    def __init__(
        self,
        url: str,
        signer: str | Signer,
        *,
        game: str = "chemmy",
        clock: Callable[[], float] = time.time,
        transport: httpx.AsyncBaseTransport | None = None,
        call_timeout: float = CALL_TIMEOUT,
    ) -> None:
        self.url = url.rstrip("/")
        self._base_path = urlsplit(self.url).path
        #: A shared secret (text) signs with HMAC, as before key pairs.
        self._signer = HmacSigner(signer.encode("utf-8")) if isinstance(signer, str) else signer
        self.game: str | None = game
        self._clock = clock
        #: Seconds a credit, rollback or balance call may take, all of it.
        self.call_timeout = call_timeout
        # httpx's own timeouts bound each read apart; the whole call is bounded in _post.
        self._client = httpx.AsyncClient(
            timeout=httpx.Timeout(None),
            limits=httpx.Limits(
                max_connections=MAX_CONNECTIONS, max_keepalive_connections=KEEPALIVE_CONNECTIONS
            ),
            transport=transport,
        )

    def __repr__(self) -> str:
        return f"SeamlessWallet({self.url!r})"  # never the secret

    async def close(self) -> None:
        await self._client.aclose()

    # -- one call ------------------------------------------------------------------------
    async def _post(self, endpoint: str, body: dict[str, Any], timeout: float) -> WalletAnswer:
        """Send one call; no clear answer once ``timeout`` seconds have passed, whatever
        the wallet was doing (a connection not free, a connect, a dribbled answer)."""
        data = json.dumps(body, separators=(",", ":"), sort_keys=True).encode()
        path = f"{self._base_path}/{endpoint}"
        headers = {
            "Content-Type": "application/json",
            HEADER: self._signer.header(self._clock(), "POST", path, data),
        }
        try:
            async with asyncio.timeout(timeout):  # the whole call, not each read
                response = await self._client.post(
                    f"{self.url}/{endpoint}", content=data, headers=headers
                )
        except TimeoutError:
            return WalletAnswer(UNAVAILABLE, False, None, f"no answer within {timeout:.3g} s")
        except httpx.HTTPError as exc:  # a reset, a refused connection, a broken answer
            return WalletAnswer(UNAVAILABLE, False, None, type(exc).__name__)
        answer = read_answer(response)
        if answer.http_status == 401:
            log.error(
                "the wallet refused Chemmy's signature (%s): check --wallet-secret, or the"
                " key and key id it holds for Chemmy",
                answer.status,
            )
        return answer

    async def balance(
        self, player: str, currency: str | None, session: Mapping[str, Any] | None = None
    ) -> int:
        body = {
            "request_id": f"b-{uuid.uuid4().hex}",
            "player": player,
            "currency": currency,
            **session_fields(session, self.game),
        }
        answer = await self._post("balance", body, self.call_timeout)
        if not answer.ok or answer.balance is None:
            why = f"{answer.status}: {answer.message}" if answer.message else answer.status
            raise WalletError(f"the wallet gave no balance for {player} ({why})")
        return answer.balance

    async def debit(self, call: dict[str, Any], deadline: float) -> WalletAnswer:
        """Try until a clear answer or ``deadline`` (monotonic): the same ids every time."""
        wait = RETRY_FIRST
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return WalletAnswer(UNAVAILABLE, False, None, "no answer in time")
            answer = await self._post("debit", call["body"], left)
            if answer.clear:
                return answer
            left = deadline - time.monotonic()
            if left <= wait:
                return answer
            await asyncio.sleep(wait)
            wait = min(wait * 2, RETRY_CAP)

    async def deliver(self, call: dict[str, Any]) -> WalletAnswer:
        return await self._post(call["kind"], call["body"], self.call_timeout)
