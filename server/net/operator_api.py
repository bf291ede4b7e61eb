"""The operator's API under ``/operator/v1/``: one router, one authentication.

Every request ``server.net.operator_http`` reads whole comes to
:meth:`OperatorAPI.respond`, which

1. answers ``404 {"status": "not_found"}`` to everything while the API is off (no
   ``--operator-key`` and no JWT key: nobody could be let in);
2. authenticates the caller (:class:`OperatorAuth`, docs/wallet.md §1): a
   ``Chemmy-Signature`` under ``--operator-key``, or ``Authorization: Bearer <JWT>``
   naming an operator (``Identity.is_operator``: one of ``--operator-players``, or a
   ``roles`` claim holding ``"operator"``). Refused: ``401`` ``bad_signature``,
   ``stale_signature`` or ``unauthorized`` (a missing, invalid or expired token), ``403``
   ``forbidden`` (a valid token of a player who is not an operator);
3. finds the route: ``404 not_found`` for a path with none, ``405
   method_not_allowed`` (with ``Allow``) for another method;
4. calls it. A route is ``async (OperatorCall) -> dict``: the dict is the ``200``
   answer; it refuses by raising :class:`OperatorRefusal` (status, code, sentence). A
   store that cannot be reached is ``503 store_unavailable``, any other store error
   ``500 store_failed``.

Adding a route is one line: ``api.add("GET", "/operator/v1/transactions", handler)``.
Every refusal's body is ``{"status": <code>, "message": <a sentence>}``. Each call is
logged once by ``operator_http`` (who, method, path, status); nothing here logs a body.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Final
from urllib.parse import unquote

from server.store.base import StoreError, StoreUnavailable
from server.wallet import signing

from .auth import Authenticator, AuthError
from .operator_http import HttpRequest, HttpResponse, error_response

__all__ = [
    "API_PREFIX",
    "Caller",
    "OperatorAPI",
    "OperatorAuth",
    "OperatorCall",
    "OperatorRefusal",
    "Route",
]

API_PREFIX: Final = "/operator/v1/"


class OperatorRefusal(Exception):
    """A refused operator call: HTTP ``http_status``, body ``{"status": code, "message"}``
    and the ``details`` given (``limit_reached``'s ``limit``)."""

    def __init__(
        self, http_status: int, code: str, message: str, details: Mapping[str, Any] | None = None
    ) -> None:
        super().__init__(f"{http_status} {code}: {message}")
        self.http_status = http_status
        self.code = code
        self.message = message
        self.details = dict(details or {})


@dataclass(frozen=True, slots=True)
class Caller:
    """Who made an operator call: ``how`` is ``"signature"`` (``name`` ``operator``: the
    shared key; else the id of the operator's public key that verified it) or
    ``"token"`` (``name`` is then the token's ``sub``)."""

    how: str
    name: str

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
            return Caller("signature", kid or "operator")
        if bearer is not None and self.tokens is not None:
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


def _bearer(header: str | None) -> str | None:
    if header is None:
        return None
    scheme, _, token = header.strip().partition(" ")
    return (token.strip() or None) if scheme.lower() == "bearer" else None


class OperatorAPI:
    """The routes of ``/operator/v1/`` and the one way every call is answered."""

    def __init__(self, auth: OperatorAuth) -> None:
        self.auth = auth
        #: path -> method -> route (a path may hold ``{name}`` segments).
        self.routes: dict[str, dict[str, Route]] = {}
        self._patterns: list[tuple[re.Pattern[str], str]] = []

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

    async def respond(self, request: HttpRequest) -> HttpResponse:
        """The answer to one request (``server.net.operator_http.Responder``)."""
        if not self.auth.enabled:
            return error_response(404, "not_found", "the operator API is off on this server")
        try:
            caller = self.auth.check(request)
        except OperatorRefusal as refusal:
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
        try:
            body = await route(OperatorCall(request, caller, params))
        except OperatorRefusal as refusal:
            answer = error_response(
                refusal.http_status, refusal.code, refusal.message, caller=shown
            )
            return replace(answer, body={**answer.body, **refusal.details})
        except StoreUnavailable:
            return error_response(
                503,
                "store_unavailable",
                "the store cannot be reached now; try again with the same ids",
                caller=shown,
            )
        except StoreError:
            return error_response(
                500, "store_failed", "the store refused the call; nothing was done", caller=shown
            )
        if isinstance(body, HttpResponse):
            return HttpResponse(
                body.status, body.body, body.headers, shown, body.raw, body.content_type
            )
        return HttpResponse(200, body, caller=shown)
