"""The operator's side of a test: calls to a server's ``/operator/v1/`` API signed with
the operator key (docs/wallet.md §1), and the books audited after."""

from __future__ import annotations

import json
import time
from typing import Any

import httpx

from server.wallet.signing import signature_header

__all__ = ["KEY", "SignedOperator", "audited"]

#: The operator key the tests' servers are given (``operator_key``).
KEY = "the-operators-key-for-the-tests-0123456789"


class SignedOperator:
    """Signed calls to the operator API of the server on ``port``."""

    def __init__(self, port: int, key: str = KEY) -> None:
        self.key = key.encode()
        self.http = httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=10)

    async def post(self, path: str, body: Any) -> httpx.Response:
        raw = json.dumps(body).encode()
        sign = signature_header(self.key, time.time(), "POST", path, raw)
        headers = {"Content-Type": "application/json", "Chemmy-Signature": sign}
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
