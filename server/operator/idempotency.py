"""The operator's state-changing calls, each made once (docs/operator-api.md
"Idempotency"; issue 33: a captured signed call replayed within the signature's 300 s
acted again).

Every call to ``/operator/v1/`` with another method than ``GET`` or ``HEAD`` carries an
``Idempotency-Key`` header (:func:`idempotency_key`: 1-128 printable ASCII characters,
a new one for each new call, the same one for a retry), and :func:`once` makes it at
most once:

- the key, with who calls (two callers' keys never meet), is claimed in the store
  (``Store.claim_operator_call``), atomically over every process of a cluster, with
  the request's fingerprint (SHA-256 of the method, the path and query, and the body);
- the claim that gets it makes the call and keeps its answer, whatever it is (a
  refusal, a ``5xx`` too: an answer in doubt stays in doubt), for :data:`KEEP`;
- a repeat of the same request under the key is answered that first answer, with
  ``Idempotent-Replayed: true``, and changes nothing; another request under it is
  refused ``409 idempotency_key_reused``; a repeat while the first is still being
  answered, or whose first never finished (its process stopped), ``409
  idempotency_key_in_use``.

The key is not covered by the signature (docs/wallet.md §1 signs the method, the path
and the body), so a captured signed request could be sent again under a new key: each
signature is claimed too (``sig:<v1>``), bound to the key it first came with, and a
request whose signature was seen is answered under that first key, whatever key it
carries now: a signed request acts once. (Under a bearer token the token itself is the
credential; the key makes its holder's retries safe.)

Never logs a key, a body or an answer; decides no rule of the calls themselves.
"""

from __future__ import annotations

import base64
import hashlib
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final

from server.operator.http import HttpRequest, HttpResponse
from server.protocol.errors import StoreError
from server.store.base import Store

__all__ = [
    "HEADER",
    "KEEP",
    "MAX_KEY",
    "REPLAYED",
    "SAFE_METHODS",
    "BadKey",
    "Conflict",
    "idempotency_key",
    "once",
]

log = logging.getLogger("chemmy.operator")

#: The request header that names a call.
HEADER: Final = "Idempotency-Key"
#: The answer header of a repeat answered with the first answer.
REPLAYED: Final = "Idempotent-Replayed"
#: How long a key and its first answer are kept (seconds): a day, far longer than a
#: signature is taken (300 s either side of its ``t``, docs/wallet.md §1).
KEEP: Final = 24 * 3600.0
#: The longest key (characters).
MAX_KEY: Final = 128
#: The methods that change nothing, and need no key.
SAFE_METHODS: Final = frozenset({"GET", "HEAD"})


class BadKey(Exception):
    """No ``Idempotency-Key`` (``code`` ``idempotency_key_required``), or one of the
    wrong shape (``bad_request``): HTTP 400."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class Conflict(Exception):
    """The key or the signature was used before for something else, or the first call
    under the key is not answered yet: HTTP 409 ``code``."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def idempotency_key(request: HttpRequest) -> str:
    """The request's key, or :class:`BadKey`."""
    value = request.headers.get(HEADER.lower())
    if value is None:
        raise BadKey(
            "idempotency_key_required",
            f"send an {HEADER} header with every call that changes something: a new key "
            f"for each new call (1-{MAX_KEY} printable ASCII characters, e.g. a UUID), "
            "the same key for a retry",
        )
    if not (1 <= len(value) <= MAX_KEY and all(" " <= ch <= "~" for ch in value)):
        raise BadKey("bad_request", f"{HEADER} is 1-{MAX_KEY} printable ASCII characters")
    return value


def _digest(*parts: bytes) -> str:
    hashed = hashlib.sha256()
    for part in parts:  # (each part's length first: no two lists of parts meet)
        hashed.update(b"%d:" % len(part))
        hashed.update(part)
    return hashed.hexdigest()


async def once(
    store: Store,
    request: HttpRequest,
    caller: str,
    signature: str | None,
    key: str,
    make: Callable[[], Awaitable[HttpResponse]],
    keep: float = KEEP,
) -> HttpResponse:
    """The answer to ``request`` by ``caller`` under ``key``: ``make()``'s the first
    time, the first answer again for a repeat. ``signature``: the request's ``v1``
    (lowercase hex) when it was signed. Raises :class:`Conflict`, and ``StoreError``
    when the store cannot claim the key (nothing was done)."""
    claimed = "call:" + _digest(caller.encode(), key.encode())
    printed = _digest(request.method.encode(), request.target.encode(), request.body)
    if signature is not None:
        seen = await store.claim_operator_call("sig:" + signature, claimed, keep)
        if seen is not None:
            claimed = str(seen["fingerprint"])  # the key it first came with
    first = await store.claim_operator_call(claimed, printed, keep)
    if first is not None:
        if first["fingerprint"] != printed:
            raise Conflict(
                "idempotency_key_reused",
                f"this {HEADER} was used for another request (another method, path or "
                "body): use a new key for a new call",
            )
        kept = first["answer"]
        if kept is None:
            raise Conflict(
                "idempotency_key_in_use",
                f"the call under this {HEADER} is still being answered, or its answer was "
                "not kept (its process stopped): look at what it did before you send it "
                "again under a new key",
            )
        return _replayed(kept, caller)
    response = await make()
    try:
        await store.answer_operator_call(claimed, printed, _kept(response), keep)
    except StoreError as exc:
        log.warning(
            "the answer to an operator call (%s %s) was not kept (%s): a repeat of its key "
            "is answered 409 idempotency_key_in_use",
            request.method,
            request.path[:200],
            exc,
        )
    return response


def _kept(response: HttpResponse) -> dict[str, Any]:
    """An answer as the store keeps it (JSON)."""
    raw = None if response.raw is None else base64.b64encode(response.raw).decode("ascii")
    return {
        "status": response.status,
        "body": dict(response.body),
        "headers": [[name, value] for name, value in response.headers],
        "raw": raw,
        "content_type": response.content_type,
    }


def _replayed(kept: Mapping[str, Any], caller: str) -> HttpResponse:
    """The first answer again, saying it is one."""
    raw = kept.get("raw")
    headers = tuple((str(name), str(value)) for name, value in kept.get("headers", ()))
    return HttpResponse(
        int(kept["status"]),
        dict(kept.get("body") or {}),
        (*headers, (REPLAYED, "true")),
        caller,
        None if raw is None else base64.b64decode(raw),
        str(kept.get("content_type") or "application/json"),
    )
