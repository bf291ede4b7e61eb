"""The operator's HTTP requests on the server's one port: ``/operator/...``, with a body.

``websockets`` parses a connection's first request as a WebSocket handshake and never
reads a body, so a ``POST`` cannot reach ``process_request`` (``server.gateway.http``) whole.
:class:`~server.gateway.session.GatewayConnection` therefore looks at the first bytes a
connection sends (``server.gateway.sniff``): a request line whose target starts with
``/operator/v1/`` (any method) is handed to the operator's API (``OperatorAPI.take``,
the gateway's ``OperatorDoor``) and read here, before ``websockets`` sees a byte of it;
everything else (WebSocket upgrades, the web table's files, the back-office page at
``/operator/`` and its files under ``/operator/static/``, which are plain ``GET``
requests with no body, health and metrics, 405 for other methods) goes to
``websockets`` exactly as before.

An :class:`OperatorExchange` reads one request with ``h11`` (the head at most
:data:`MAX_HEAD` bytes, a ``Content-Length`` body at most :data:`MAX_BODY`, the whole
within ``READ_TIMEOUT`` seconds of the connection's start, the gateway's
``server.gateway.sniff.READ_TIMEOUT``), hands it to the responder
(``server.operator.api``) with a deadline, writes the answer with
``Connection: close``, and closes. Refused here, with the responder's JSON shape
``{"status": ..., "message": ...}``: 400 ``bad_request`` (not HTTP/1.x), 408 ``timeout``
(also a request whose first bytes never said whether it is one: the connection hands
it over after ``READ_TIMEOUT``), 411 ``length_required`` (a ``POST``, ``PUT`` or
``PATCH`` without ``Content-Length``), 413 ``too_large`` (a ``Content-Length`` over
:data:`MAX_BODY`, however many digits), 431 ``too_large`` (the head), 501
``not_implemented`` (any ``Transfer-Encoding``), 504 ``timeout`` (no answer within
:data:`ANSWER_WITHIN`).

The ``websockets`` handshake of a connection taken over never receives a request: it
waits for the connection to close and then ends quietly (its protocol sees the end of
the stream before a request line, closes, and ``serve``'s handler returns). It aborts
the connection ``open_timeout`` (10 s) after it began, so every exchange is answered
within :data:`ANSWER_WITHIN` of the connection's start (the route by
:data:`ROUTE_MARGIN` before that, so its answer can still be kept: ``deadline``) and
lingers only until :data:`CLOSE_BY`.

Every answer says it may not be framed (``X-Frame-Options: DENY``, ``frame-ancestors
'none'``) nor sniffed.

Each exchange is logged once, at info (``chemmy.operator``: who, method, path,
status); never a header's or a body's contents.
"""

from __future__ import annotations

import asyncio
import contextlib
import http
import json
import logging
import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final
from urllib.parse import parse_qs, urlsplit

import h11

from server.gateway.sniff import READ_TIMEOUT

__all__ = [
    "ANSWER_WITHIN",
    "MAX_BODY",
    "MAX_HEAD",
    "HttpRequest",
    "HttpResponse",
    "OperatorExchange",
    "Responder",
    "error_response",
]

log = logging.getLogger("chemmy.operator")

#: The largest request body (bytes): docs/wallet.md §2's 16 KiB.
MAX_BODY: Final = 16 * 1024
#: The largest request line and headers (bytes).
MAX_HEAD: Final = 16 * 1024
#: Seconds from the connection's start by which the answer is written (``websockets``
#: aborts the connection at 10: ``open_timeout``), and how much sooner the route must
#: have answered (the rest is for keeping its answer: ``server.operator.idempotency``).
ANSWER_WITHIN: Final = 9.0
ROUTE_MARGIN: Final = 1.0
#: Seconds from the connection's start after which it is closed, lingering or not.
CLOSE_BY: Final = 9.8
#: Seconds the connection is kept after the answer, reading what the client still sends
#: (closing with unread bytes would reset the connection, and the reset could destroy
#: the answer before the client reads it).
LINGER: Final = 1.0
_BODY_METHODS: Final = frozenset({"POST", "PUT", "PATCH"})
#: A ``Content-Length`` header of digits only (h11 refuses one of more than 20 digits
#: before it says which header it was).
_LENGTH = re.compile(
    rb"^content-length[ \t]*:[ \t]*([0-9]+)[ \t]*\r?$", re.IGNORECASE | re.MULTILINE
)
#: What every answer says about framing and sniffing.
_GUARDS: Final = (
    "X-Frame-Options: DENY",
    "Content-Security-Policy: frame-ancestors 'none'",
    "X-Content-Type-Options: nosniff",
)


@dataclass(frozen=True, slots=True)
class HttpRequest:
    """One operator request, read whole."""

    method: str
    #: The path and query as sent (what a signature covers, docs/wallet.md §1).
    target: str
    #: Lower-case names; a repeated header's values joined with ``", "``.
    headers: Mapping[str, str]
    body: bytes
    #: The peer's address (for the log, and the limits).
    client: str = "-"
    #: When the route must have answered (``asyncio`` loop time; None: no deadline).
    deadline: float | None = None

    @property
    def path(self) -> str:
        return urlsplit(self.target).path

    @property
    def query(self) -> dict[str, list[str]]:
        return parse_qs(urlsplit(self.target).query, keep_blank_values=True)


@dataclass(frozen=True, slots=True)
class HttpResponse:
    """An answer: ``body`` is sent as JSON (or ``raw`` bytes of ``content_type``, e.g. a
    CSV); ``caller`` names who asked (for the log)."""

    status: int
    body: Mapping[str, Any]
    headers: tuple[tuple[str, str], ...] = ()
    caller: str = field(default="-", compare=False)
    raw: bytes | None = None
    content_type: str = "application/json"

    def encode(self) -> bytes:
        if self.raw is not None:
            payload = self.raw
        else:
            payload = json.dumps(self.body, separators=(",", ":"), ensure_ascii=False).encode()
        try:
            phrase = http.HTTPStatus(self.status).phrase
        except ValueError:
            phrase = "Status"
        lines = [
            f"HTTP/1.1 {self.status} {phrase}",
            f"Content-Type: {self.content_type}",
            f"Content-Length: {len(payload)}",
            "Cache-Control: no-store",
            "Connection: close",
            *_GUARDS,
            *(f"{name}: {value}" for name, value in self.headers),
        ]
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + payload


#: Answers one request (``server.operator.api.OperatorAPI.respond``).
Responder = Callable[[HttpRequest], Awaitable[HttpResponse]]


def error_response(
    status: int, code: str, message: str, *, caller: str = "-", **headers: str
) -> HttpResponse:
    """The one shape of a refusal: ``{"status": code, "message": message}``."""
    return HttpResponse(
        status, {"status": code, "message": message}, tuple(headers.items()), caller
    )


class _Refusal(Exception):
    def __init__(self, response: HttpResponse) -> None:
        super().__init__(response.status)
        self.response = response


class _Closed(Exception):
    """The client went away before its request was whole."""


class OperatorExchange:
    """One request and its answer on a connection taken over from ``websockets``.

    The connection feeds it what it reads (:meth:`feed`, :meth:`feed_eof`); :meth:`start`
    runs the exchange in a task of its own (:attr:`task`). ``opened``: when the
    connection began (loop time; None: now), which every deadline counts from."""

    def __init__(
        self,
        transport: asyncio.Transport,
        respond: Responder,
        client: str,
        opened: float | None = None,
    ) -> None:
        self.transport = transport
        self.respond = respond
        self.client = client
        self.opened = asyncio.get_running_loop().time() if opened is None else opened
        self.task: asyncio.Task[None] | None = None
        self._parser = h11.Connection(h11.SERVER, max_incomplete_event_size=MAX_HEAD)
        self._more = asyncio.Event()
        self._ended = asyncio.Event()  # the client's end of the stream
        self._received = 0
        self._head = b""  # the first MAX_HEAD bytes (to tell why h11 refused a head)
        self._answered = False
        self._line = ("-", "-")  # the request's method and path, once read (for the log)

    def start(self, first: bytes) -> None:
        self.feed(first)
        self.task = asyncio.get_running_loop().create_task(self._run())

    def feed(self, data: bytes) -> None:
        if self._answered or self._ended.is_set():
            return  # read and dropped (the linger)
        self._received += len(data)
        if len(self._head) < MAX_HEAD:
            self._head += data[: MAX_HEAD - len(self._head)]
        if self._received > MAX_HEAD + MAX_BODY:
            # More than a request may hold: read no more (the parser refuses it).
            with contextlib.suppress(Exception):
                self.transport.pause_reading()
        with contextlib.suppress(h11.RemoteProtocolError, RuntimeError):
            self._parser.receive_data(data)  # (a parser in error says so when asked)
        self._more.set()

    def feed_eof(self) -> None:
        if not self._ended.is_set():
            self._ended.set()
            if not self._answered:
                with contextlib.suppress(h11.RemoteProtocolError, RuntimeError):
                    self._parser.receive_data(b"")
            self._more.set()

    async def _run(self) -> None:
        request: HttpRequest | None = None
        try:
            try:
                async with asyncio.timeout_at(self.opened + READ_TIMEOUT):
                    request = await self._read()
            except TimeoutError:
                request = None
                response = error_response(408, "timeout", "the request took too long to send")
            else:
                try:
                    async with asyncio.timeout_at(self.opened + ANSWER_WITHIN):
                        response = await self.respond(request)
                except TimeoutError:
                    response = error_response(
                        504, "timeout", "no answer in time: look at what the call did"
                    )
        except _Refusal as refusal:
            response = refusal.response
        except h11.RemoteProtocolError as exc:
            response = self._refused_head(exc)
        except _Closed:
            self.transport.close()
            return
        except Exception:
            log.exception("the operator API failed on %s %s", *self._line)
            response = error_response(500, "internal", "the server failed on this request")
        try:
            self._answer(request, response)
            await self._linger()
        finally:
            self.transport.close()

    def _refused_head(self, exc: h11.RemoteProtocolError) -> HttpResponse:
        """The answer to a request ``h11`` refused."""
        status = exc.error_status_hint
        found = _LENGTH.search(self._head.partition(b"\r\n\r\n")[0])
        if found is not None and int(found[1]) > MAX_BODY:
            return error_response(413, "too_large", f"a request body is at most {MAX_BODY} bytes")
        if status == 431:
            return error_response(431, "too_large", f"the head is over {MAX_HEAD} bytes")
        if status == 501:
            return error_response(
                501, "not_implemented", "send the body with a Content-Length, no Transfer-Encoding"
            )
        return error_response(status, "bad_request", "not an HTTP/1.1 request")

    async def _read(self) -> HttpRequest:
        head = await self._event()
        if not isinstance(head, h11.Request):
            raise _Closed
        method = head.method.decode("ascii", "replace")
        target = head.target.decode("ascii", "replace")
        self._line = (method, urlsplit(target).path[:200])
        size = len(head.method) + len(head.target)
        size += sum(len(name) + len(value) + 4 for name, value in head.headers)
        if size > MAX_HEAD:  # (h11 bounds only a head that comes in pieces)
            raise _Refusal(error_response(431, "too_large", f"the head is over {MAX_HEAD} bytes"))
        headers: dict[str, str] = {}
        for raw_name, raw_value in head.headers:
            name, value = raw_name.decode("latin-1"), raw_value.decode("latin-1")
            headers[name] = f"{headers[name]}, {value}" if name in headers else value
        if "transfer-encoding" in headers:
            raise _Refusal(
                error_response(
                    501, "not_implemented", "send the body with a Content-Length, not chunked"
                )
            )
        length = headers.get("content-length")
        if length is None and method in _BODY_METHODS:
            raise _Refusal(
                error_response(411, "length_required", "a request body needs a Content-Length")
            )
        if length is not None and int(length.split(",")[0]) > MAX_BODY:
            raise _Refusal(
                error_response(413, "too_large", f"a request body is at most {MAX_BODY} bytes")
            )
        body = bytearray()
        while True:
            event = await self._event()
            if isinstance(event, h11.Data):
                body += event.data
            elif isinstance(event, h11.EndOfMessage):
                break
        deadline = self.opened + ANSWER_WITHIN - ROUTE_MARGIN
        return HttpRequest(method, target, headers, bytes(body), self.client, deadline)

    async def _event(self) -> Any:
        while True:
            event = self._parser.next_event()
            if event is h11.NEED_DATA:
                if self._ended.is_set():
                    raise _Closed
                self._more.clear()
                await self._more.wait()
                continue
            if isinstance(event, h11.ConnectionClosed):
                raise _Closed
            return event

    def _answer(self, request: HttpRequest | None, response: HttpResponse) -> None:
        self._answered = True
        if request is not None and request.method == "HEAD":
            data = response.encode()
            data = data[: data.index(b"\r\n\r\n") + 4]
        else:
            data = response.encode()
        if not self.transport.is_closing():
            self.transport.write(data)
        method, path = self._line
        log.info(
            "operator call %s %s by %s from %s: %d",
            method,
            path,
            response.caller,
            self.client,
            response.status,
        )

    async def _linger(self) -> None:
        """Half-close, then read and drop what the client still sends until it closes
        too, for :data:`LINGER` seconds at most."""
        transport = self.transport
        if transport.is_closing():
            return
        with contextlib.suppress(Exception):
            transport.resume_reading()
            if transport.can_write_eof():
                transport.write_eof()
        close_by = min(asyncio.get_running_loop().time() + LINGER, self.opened + CLOSE_BY)
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout_at(close_by):
                await self._ended.wait()
