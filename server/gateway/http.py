"""The plain HTTP side of the server's one port: health, readiness and metrics.

``websockets`` hands every request to :func:`respond` before any WebSocket handshake
(``process_request``). It answers:

- ``/healthz``: 200 while the process runs (liveness);
- ``/readyz``: 200 when the process takes new players, 503 while it drains or cannot
  reach its store (readiness: a load balancer sends no one here then);
- ``/metrics``: Prometheus text;
- ``/`` and the web table's other files, ``/operator/`` and the back-office page's
  files (``server.gateway.static``);
- any other path without a WebSocket upgrade: 404; and while draining, an upgrade is
  refused with 503 so the client tries another process.

Only ``GET`` and ``HEAD`` are answered (405 otherwise, with ``Allow``). Every answer
under ``/operator/`` (the back office's files, and its 404s and 405s) says it may not
be framed (``X-Frame-Options: DENY``). Requests for ``/operator/v1/...`` (the operator
API, any method) never come here: the connection hands them to the operator's API
(``server.gateway.sniff``, ``server.operator.http``) before ``websockets`` reads them
(it reads no body). It also says whether a browser's WebSocket may open from its
page's origin (:func:`origin_allowed`, docs/protocol.md §2). This module decides no
rule and never reads a player's data.
"""

from __future__ import annotations

import http
import urllib.parse
from collections.abc import Callable, Iterable, Sequence

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from websockets.asyncio.server import ServerConnection
from websockets.datastructures import Headers
from websockets.http11 import Request, Response

from server.gateway import static
from server.process.metrics import Metrics

__all__ = ["CLOSE_ORIGIN", "ORIGIN_REFUSED", "Endpoints", "origin_allowed"]

_TEXT = "text/plain; charset=utf-8"


def _response(status: http.HTTPStatus, body: bytes, content_type: str, *, head: bool) -> Response:
    headers = Headers(
        [
            ("Content-Type", content_type),
            ("Content-Length", str(len(body))),
            ("Cache-Control", "no-store"),
        ]
    )
    if status is http.HTTPStatus.METHOD_NOT_ALLOWED:
        headers["Allow"] = "GET, HEAD"
    return Response(status.value, status.phrase, headers, b"" if head else body)


class Endpoints:
    """The HTTP answers of one server. ``not_ready`` says why the process should get no
    new players (``None``: ready)."""

    def __init__(
        self,
        metrics: Metrics,
        not_ready: Callable[[], str | None],
        origins: Iterable[str] = (),
    ) -> None:
        self.metrics = metrics
        self.not_ready = not_ready
        self.origins = tuple(origins)  # who may frame the web table (its CSP)

    def respond(self, conn: ServerConnection, request: Request) -> Response | None:
        """``process_request``: a response, or None to go on with the handshake."""
        response = self._respond(request)
        operator = request.path.startswith("/operator/")
        if operator and response is not None and "X-Frame-Options" not in response.headers:
            response.headers["X-Frame-Options"] = "DENY"
        return response

    def _respond(self, request: Request) -> Response | None:
        path = request.path.split("?", 1)[0]
        upgrade = request.headers.get("Upgrade", "").lower() == "websocket"
        if not upgrade and path not in ("/healthz", "/readyz", "/metrics"):
            page = static.respond(request, self.origins)  # the web table's files
            if page is not None:
                return page
        if upgrade and path not in ("/healthz", "/readyz", "/metrics"):
            reason = self.not_ready()
            if reason == "draining":
                return _response(
                    http.HTTPStatus.SERVICE_UNAVAILABLE, b"draining\n", _TEXT, head=False
                )
            return None
        head = request.method == "HEAD"
        if request.method not in ("GET", "HEAD"):
            return _response(
                http.HTTPStatus.METHOD_NOT_ALLOWED, b"method not allowed\n", _TEXT, head=False
            )
        if path == "/healthz":
            return _response(http.HTTPStatus.OK, b"ok\n", _TEXT, head=head)
        if path == "/readyz":
            reason = self.not_ready()
            if reason is not None:
                body = f"{reason}\n".encode()
                return _response(http.HTTPStatus.SERVICE_UNAVAILABLE, body, _TEXT, head=head)
            return _response(http.HTTPStatus.OK, b"ready\n", _TEXT, head=head)
        if path == "/metrics":
            body = generate_latest(self.metrics.registry)
            return _response(http.HTTPStatus.OK, body, CONTENT_TYPE_LATEST, head=head)
        return _response(http.HTTPStatus.NOT_FOUND, b"not found\n", _TEXT, head=head)


#: The close code and reason of a browser connection from an origin not allowed.
CLOSE_ORIGIN = 4003
ORIGIN_REFUSED = "origin_not_allowed: this site may not show the table (--origins)"
_DEFAULT_PORTS = {"http": 80, "https": 443, "ws": 80, "wss": 443}


def origin_allowed(headers: Headers, allowed: Sequence[str]) -> bool:
    """docs/protocol.md §2 "Origin allowlist": with no list every origin; a client that
    sends no ``Origin`` (the CLI, bots: not browsers) always; else an origin in the list,
    or the server's own (the ``Origin`` names the ``Host`` the request was sent to: the
    page the server itself served, framed by an allowed site, needs no entry)."""
    origins = headers.get_all("Origin")
    if not allowed or not origins:
        return True
    if len(origins) > 1:
        return False
    origin = origins[0]
    return origin in allowed or _same_origin(origin, headers.get("Host"))


def _same_origin(origin: str, host: str | None) -> bool:
    """Whether ``origin`` (``scheme://host[:port]``) is the ``Host`` header's
    ``host[:port]`` (a port left out is the scheme's default)."""
    if not host:
        return False
    try:
        o = urllib.parse.urlsplit(origin)
        h = urllib.parse.urlsplit(f"{o.scheme}://{host}")
        default = _DEFAULT_PORTS.get(o.scheme)
        return (
            o.scheme in _DEFAULT_PORTS
            and bool(o.hostname)
            and o.hostname == h.hostname
            and (o.port or default) == (h.port or default)
            and not (o.path or o.query or o.fragment or o.username or h.path or h.username)
        )
    except ValueError:
        return False
