"""The operator's side of a test: calls to a server's ``/operator/v1/`` API signed with
the operator key (docs/wallet.md §1), each a new call (a new ``Idempotency-Key``, a
signature not made before: :class:`Signer`), and the books audited after."""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

import httpx

from server.wallet.signing import signature_header

__all__ = ["KEY", "SignedOperator", "Signer", "audited"]

#: The operator key the tests' servers are given (``operator_key``).
KEY = "the-operators-key-for-the-tests-0123456789"


class Signer:
    """Signs each new call at a whole second no call of the same method, target and body
    was signed at before (now, or a second earlier than the last one), so that two calls
    are two signed requests: the server answers a signed request it has seen with the
    first answer (docs/operator-api.md "Idempotency"), as it must a replay."""

    def __init__(self, key: bytes) -> None:
        self.key = key
        self._last: dict[tuple[str, str, bytes], int] = {}

    def __call__(self, method: str, target: str, body: bytes, at: float | None = None) -> str:
        """The ``Chemmy-Signature`` header; ``at`` signs at that time as asked."""
        if at is None:
            last = self._last.get((method, target, body))
            t = int(time.time()) if last is None else min(int(time.time()), last - 1)
            self._last[(method, target, body)] = t
            at = t
        return signature_header(self.key, at, method, target, body)


class SignedOperator:
    """Signed calls to the operator API of the server on ``port``."""

    def __init__(self, port: int, key: str = KEY) -> None:
        self.key = key.encode()
        self.sign = Signer(self.key)
        self.http = httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=10)

    async def post(self, path: str, body: Any, *, key: str | None = None) -> httpx.Response:
        """A signed POST under the ``Idempotency-Key`` ``key`` (None: a new one)."""
        raw = json.dumps(body).encode()
        sign = self.sign("POST", path, raw)
        headers = {
            "Content-Type": "application/json",
            "Chemmy-Signature": sign,
            "Idempotency-Key": key or uuid.uuid4().hex,
        }
        return await self.http.post(path, content=raw, headers=headers)

    async def get(self, path: str) -> httpx.Response:
        sign = signature_header(self.key, time.time(), "GET", path, b"")
        return await self.http.get(path, headers={"Chemmy-Signature": sign})

    async def aclose(self) -> None:
        await self.http.aclose()


async def audited(server: Any) -> None:
    """The store's books: conserved, each balance its ledger sum, every hold one outcome."""
    audit = await server.store.audit()
    assert audit["sum"] == 0 and audit["ledger_matches"] and audit["holds_ok"], audit
