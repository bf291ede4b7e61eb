"""The operator's API under ``/operator/v1/``: one router, one authentication.

Every request ``server.operator.http`` reads whole comes to
:meth:`OperatorAPI.respond`, which

1. answers ``404 {"status": "not_found"}`` to everything while the API is off (no
   ``--operator-key`` and no JWT key: nobody could be let in);
2. refuses ``429 rate_limited`` (with ``Retry-After``), before looking at its
   credentials, a request from an address that failed to authenticate too often
   (:class:`AuthFailures`: :data:`FAILURES_BURST` failures, then one more every
   :data:`FAILURES_REFILL` seconds; the address behind ``--trusted-proxies`` as for the
   players' limits, IPv6 by its /64; each process counts its own);
3. authenticates the caller (:class:`OperatorAuth`, docs/wallet.md §1): a
   ``Chemmy-Signature`` under ``--operator-key``, or ``Authorization: Bearer <JWT>``
   naming an operator (``Identity.is_operator``: one of ``--operator-players``, or a
   ``roles`` claim holding ``"operator"``). Refused: ``401`` ``bad_signature``,
   ``stale_signature`` or ``unauthorized`` (a missing, invalid or expired token, or a
   header that is not ASCII), ``403`` ``forbidden`` (a valid token of a player who is
   not an operator);
4. finds the route: ``404 not_found`` for a path with none, ``405
   method_not_allowed`` (with ``Allow``) for another method;
5. for every method but ``GET`` and ``HEAD``, makes the call once by its
   ``Idempotency-Key`` (``server.operator.idempotency``: ``400 idempotency_key_required``
   without one; a repeat gets the first answer, and so does a signed request sent again
   under another key; ``409 idempotency_key_reused``, ``idempotency_key_in_use``);
6. calls it, by the request's ``deadline`` (``504 timeout`` after it). A route is
   ``async (OperatorCall) -> dict``: the dict is the ``200`` answer; it refuses by
   raising :class:`OperatorRefusal` (status, code, sentence). A store that cannot be
   reached is ``503 store_unavailable``, any other store error ``500 store_failed``.

Adding a route is one line: ``api.add("GET", "/operator/v1/transactions", handler)``;
a ``POST`` route is made once by its key with nothing more to write. Every refusal's
body is ``{"status": <code>, "message": <a sentence>}``. Each call is logged once by
``server.operator.http`` (who, method, path, status); nothing here logs a body.
"""

from __future__ import annotations

import asyncio
import json
import math
import re
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Final
from urllib.parse import unquote

from server.limits.local import Network, forwarded_address
from server.operator import idempotency
from server.operator.http import HttpRequest, HttpResponse, OperatorExchange, error_response
from server.process.auth import Authenticator, AuthError
from server.protocol.errors import (
    OperatorRefusal,  # (defined with the error tree)
    StoreError,
    StoreUnavailable,
)
from server.store.base import Store
from server.wallet import signing

__all__ = [
    "API_PREFIX",
    "FAILURES_BURST",
    "FAILURES_REFILL",
    "AuthFailures",
    "Caller",
    "OperatorAPI",
    "OperatorAuth",
    "OperatorCall",
    "OperatorRefusal",
    "Route",
]

API_PREFIX: Final = "/operator/v1/"
#: Failed authentications an address may make at once, and the seconds after which it
#: may make one more (:class:`AuthFailures`): 20 at once, then 20 a minute.
FAILURES_BURST: Final = 20
FAILURES_REFILL: Final = 3.0


@dataclass(frozen=True, slots=True)
class Caller:
    """Who made an operator call: ``how`` is ``"signature"`` (``name`` ``operator``: the
    shared key; else the id of the operator's public key that verified it) or
    ``"token"`` (``name`` is then the token's ``sub``)."""

    how: str
    name: str
    #: A signed call's ``v1`` (lowercase hex): a signed request is taken once
    #: (``server.operator.idempotency``).
    signature: str | None = field(default=None, compare=False)

    def __str__(self) -> str:
        if self.how == "signature":
            return "operator-key" if self.name == "operator" else f"operator-key:{self.name}"
        return f"token:{self.name}"


@dataclass(frozen=True, slots=True)
class OperatorCall:
    """One authenticated call, as a route sees it: ``params`` are the path's
    ``{name}`` segments (``/operator/v1/rounds/{round_id}``), URL-decoded."""

    request: HttpRequest
    caller: Caller
    params: Mapping[str, str] = field(default_factory=dict)

    def json(self) -> dict[str, Any]:
        """The body as a JSON object; ``400 bad_request`` otherwise (not UTF-8, not
        JSON, ``NaN``/``Infinity``, or not an object)."""
        try:
            value = json.loads(self.request.body.decode("utf-8"), parse_constant=_no_constant)
        except (UnicodeDecodeError, ValueError, RecursionError):
            raise OperatorRefusal(400, "bad_request", "the body is not JSON") from None
        if not isinstance(value, dict):
            raise OperatorRefusal(400, "bad_request", "the body is a JSON object")
        return value

    def param(self, name: str) -> str:
        """The query parameter ``name``, given once; ``400 bad_request`` otherwise."""
        values = self.request.query.get(name, [])
        if len(values) != 1:
            raise OperatorRefusal(400, "bad_request", f"give {name}= once in the query")
        return values[0]


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


#: A route: the ``200`` answer's body (or a whole :class:`HttpResponse`: a CSV), or an
#: :class:`OperatorRefusal`.
Route = Callable[[OperatorCall], Awaitable[Mapping[str, Any] | HttpResponse]]
_PARAM = re.compile(r"\{([a-z_]+)\}")


class OperatorAuth:
    """docs/wallet.md §1 for the operator's calls to Chemmy: a signature under ``key``
    (``--operator-key``) or under one of the operator's ``public_keys`` (by key id,
    ``--operator-public-keys``: two while the operator switches keys), or a bearer
    token ``tokens`` verifies that names an operator. ``clock`` is the receiver's (Unix
    seconds)."""

    def __init__(
        self,
        key: str | bytes | None,
        tokens: Authenticator | None,
        clock: Callable[[], float] = time.time,
        public_keys: Mapping[str, signing.PublicKey] | None = None,
    ) -> None:
        self.key = key.encode("utf-8") if isinstance(key, str) else key
        self.tokens = tokens if tokens is not None and tokens.accepts_tokens else None
        self.clock = clock
        self.public_keys = dict(public_keys or {})

    @property
    def signed(self) -> bool:
        """Whether signed calls are taken (a shared key, or a public key)."""
        return self.key is not None or bool(self.public_keys)

    @property
    def enabled(self) -> bool:
        """Whether anyone could be let in."""
        return self.signed or self.tokens is not None

    def check(self, request: HttpRequest) -> Caller:
        """Who made ``request``; raises :class:`OperatorRefusal` (401, 403)."""
        signature = request.headers.get(signing.HEADER.lower())
        bearer = _bearer(request.headers.get("authorization"))
        if signature is not None and self.signed:
            if not (signature.isascii() and request.target.isascii()):
                raise OperatorRefusal(
                    401, "bad_signature", f"{signing.HEADER} is not a signature (docs/wallet.md §1)"
                )
            try:
                kid = signing.verify_request(
                    signature,
                    self.clock(),
                    request.method,
                    request.target,
                    request.body,
                    hmac_key=self.key,
                    public_keys=self.public_keys,
                )
            except signing.SignatureError as exc:
                raise OperatorRefusal(401, exc.status, exc.message) from None
            except (ValueError, TypeError):  # (a shape verify did not foresee: not a signature)
                raise OperatorRefusal(
                    401, "bad_signature", f"{signing.HEADER} is not a signature (docs/wallet.md §1)"
                ) from None
            return Caller("signature", kid or "operator", _signed(signature))
        if bearer is not None and self.tokens is not None:
            if not bearer.isascii():
                raise OperatorRefusal(401, "unauthorized", "the token is not a JWT")
            try:
                identity = self.tokens.authenticate(bearer)
            except AuthError as exc:
                raise OperatorRefusal(401, "unauthorized", exc.message) from None
            if not identity.is_operator:
                raise OperatorRefusal(403, "forbidden", "the token's player is not an operator")
            return Caller("token", identity.player_id)
        if self.signed:
            raise OperatorRefusal(
                401, "bad_signature", f"sign the request ({signing.HEADER}, docs/wallet.md §1)"
            )
        raise OperatorRefusal(401, "unauthorized", "send Authorization: Bearer <operator token>")


def _signed(header: str) -> str:
    """The signature itself of a verified signature header (``v1=`` lowercase, or the
    key pair's ``ed25519=`` / ``rsa-sha256=``): what a replay carries again, whatever
    ``Idempotency-Key`` is sent with it."""
    parts = dict(p.strip().split("=", 1) for p in header.split(",") if "=" in p)
    for name in ("v1", "ed25519", "rsa-sha256"):
        if name in parts:
            value = parts[name]
            return f"{name}={value.lower() if name == 'v1' else value}"
    return header


class AuthFailures:
    """Failed authentications per address: :data:`FAILURES_BURST` at once, then one more
    every :data:`FAILURES_REFILL` seconds (a bucket of tokens, one spent by each
    failure); at most ``most`` addresses are remembered (the least recently failed are
    forgotten first). ``clock``: monotonic seconds."""

    def __init__(
        self,
        burst: int = FAILURES_BURST,
        refill: float = FAILURES_REFILL,
        *,
        most: int = 10_000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.burst = burst
        self.refill = refill
        self.most = most
        self.clock = clock
        self._left: dict[str, tuple[float, float]] = {}  # address -> (tokens, at)

    def _tokens(self, address: str) -> float:
        found = self._left.get(address)
        if found is None:
            return float(self.burst)
        tokens, at = found
        return min(float(self.burst), tokens + (self.clock() - at) / self.refill)

    def retry_after(self, address: str) -> int | None:
        """Whole seconds until ``address`` may try again, or None: it may now."""
        tokens = self._tokens(address)
        return None if tokens >= 1 else max(1, math.ceil((1 - tokens) * self.refill))

    def failed(self, address: str) -> None:
        tokens = self._tokens(address) - 1
        self._left.pop(address, None)
        self._left[address] = (tokens, self.clock())  # (the newest last)
        while len(self._left) > self.most:
            del self._left[next(iter(self._left))]


def _bearer(header: str | None) -> str | None:
    if header is None:
        return None
    scheme, _, token = header.strip().partition(" ")
    return (token.strip() or None) if scheme.lower() == "bearer" else None


class OperatorAPI:
    """The routes of ``/operator/v1/`` and the one way every call is answered: ``store``
    keeps the keys of the calls made once (``server.operator.idempotency``); ``trusted``: the
    proxies whose ``X-Forwarded-For`` names the client (``--trusted-proxies``)."""

    def __init__(self, auth: OperatorAuth, store: Store, trusted: tuple[Network, ...] = ()) -> None:
        self.auth = auth
        self.store = store
        self.trusted = trusted
        self.failures = AuthFailures()
        #: path -> method -> route (a path may hold ``{name}`` segments).
        self.routes: dict[str, dict[str, Route]] = {}
        self._patterns: list[tuple[re.Pattern[str], str]] = []

    @property
    def enabled(self) -> bool:
        """Whether anyone may call (an ``--operator-key`` or a JWT key is set)."""
        return self.auth.enabled

    def add(self, method: str, path: str, route: Route) -> None:
        """Answer ``method path`` (a path under :data:`API_PREFIX`, no query; a
        ``{name}`` segment matches any one segment, given to the route as
        ``call.params[name]``) with ``route``."""
        if not path.startswith(API_PREFIX) or "?" in path:
            raise ValueError(f"an operator route is a path under {API_PREFIX}")
        methods = self.routes.setdefault(path, {})
        if method in methods:
            raise ValueError(f"{method} {path} has a route already")
        methods[method] = route
        if _PARAM.search(path) and all(p != path for _, p in self._patterns):
            regex = _PARAM.sub(
                lambda m: f"(?P<{m.group(1)}>[^/]+)",
                re.escape(path).replace(r"\{", "{").replace(r"\}", "}"),
            )
            self._patterns.append((re.compile(f"^{regex}$"), path))

    def _find(self, path: str) -> tuple[dict[str, Route] | None, dict[str, str]]:
        """The routes of ``path`` (exact paths first) and its ``{name}`` segments."""
        methods = self.routes.get(path)
        if methods is not None:
            return methods, {}
        for pattern, template in self._patterns:
            found = pattern.match(path)
            if found is not None:
                params = {k: unquote(v) for k, v in found.groupdict().items()}
                return self.routes[template], params
        return None, {}

    def take(
        self, transport: asyncio.Transport, first: bytes, client: str, opened: float | None
    ) -> OperatorExchange:
        """A connection of the gateway's port is an operator's request (its ``first``
        bytes said so, ``server.gateway.sniff``): read it and answer it
        (``server.gateway.context.OperatorDoor``). ``opened``: when it began."""
        exchange = OperatorExchange(transport, self.respond, client, opened)
        exchange.start(first)
        return exchange

    async def respond(self, request: HttpRequest) -> HttpResponse:
        """The answer to one request (``server.operator.http.Responder``)."""
        if not self.auth.enabled:
            return error_response(404, "not_found", "the operator API is off on this server")
        forwarded = [v for v in (request.headers.get("x-forwarded-for"),) if v is not None]
        address = forwarded_address(request.client, forwarded, self.trusted)
        wait = self.failures.retry_after(address)
        if wait is not None:
            return error_response(
                429,
                "rate_limited",
                f"too many failed authentications from your address; try again in {wait} s",
                **{"Retry-After": str(wait)},
            )
        try:
            caller = self.auth.check(request)
        except OperatorRefusal as refusal:
            self.failures.failed(address)
            return error_response(refusal.http_status, refusal.code, refusal.message)
        shown = str(caller)
        methods, params = self._find(request.path)
        if methods is None:
            return error_response(404, "not_found", "no operator call here", caller=shown)
        route = methods.get(request.method)
        if route is None:
            allow = ", ".join(sorted(methods))
            return error_response(
                405, "method_not_allowed", f"this call takes {allow}", caller=shown, Allow=allow
            )
        call = OperatorCall(request, caller, params)
        if request.method in idempotency.SAFE_METHODS:
            return await self._call(route, call)
        try:
            key = idempotency.idempotency_key(request)
            return await idempotency.once(
                self.store, request, shown, caller.signature, key, lambda: self._call(route, call)
            )
        except idempotency.BadKey as bad:
            return error_response(400, bad.code, bad.message, caller=shown)
        except idempotency.Conflict as conflict:
            return error_response(409, conflict.code, conflict.message, caller=shown)
        except StoreError as exc:
            return _store_refusal(exc, shown)

    async def _call(self, route: Route, call: OperatorCall) -> HttpResponse:
        """The route's answer, by the request's deadline."""
        shown = str(call.caller)
        try:
            async with asyncio.timeout_at(call.request.deadline):
                body = await route(call)
        except OperatorRefusal as refusal:
            answer = error_response(
                refusal.http_status, refusal.code, refusal.message, caller=shown
            )
            return replace(answer, body={**answer.body, **refusal.details})
        except StoreError as exc:
            return _store_refusal(exc, shown)
        except TimeoutError:
            return error_response(
                504,
                "timeout",
                "the call did not finish in time (a table's process did not answer): look "
                "at what it did before you send it again",
                caller=shown,
            )
        if isinstance(body, HttpResponse):
            return HttpResponse(
                body.status, body.body, body.headers, shown, body.raw, body.content_type
            )
        return HttpResponse(200, body, caller=shown)


def _store_refusal(exc: StoreError, shown: str) -> HttpResponse:
    if isinstance(exc, StoreUnavailable):
        return error_response(
            503,
            "store_unavailable",
            "the store cannot be reached now; nothing was done: try again later",
            caller=shown,
        )
    return error_response(
        500, "store_failed", "the store refused the call; nothing was done", caller=shown
    )
