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
be framed (``X-Frame-Options: DENY``). Requests for
``/operator/v1/...`` (the operator API, any method) never come here: the connection hands them to
the operator's API (``server.gateway.sniff``, ``server.operator.http``) before ``websockets``
reads them (it reads no body). This
module decides no rule and never reads a player's data.
"""

from __future__ import annotations

import http
from collections.abc import Callable, Iterable

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from websockets.asyncio.server import ServerConnection
from websockets.datastructures import Headers
from websockets.http11 import Request, Response

from server.gateway import static
from server.process.metrics import Metrics

__all__ = ["Endpoints"]

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
