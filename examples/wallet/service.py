"""The HTTP side of the wallet: signed JSON calls in, JSON answers out.

What an operator's wallet must do the same way, whatever its web framework:

1. Read the body as bytes (``Content-Length``, at most :data:`MAX_BODY`) and check the
   ``Chemmy-Signature`` over **those bytes** and the request target as sent
   (``self.path``, query and all), before parsing anything:
   :func:`server.wallet.signing.verify_request`, under the shared secret (``v1=``) or
   under Chemmy's public key the header names (``kid=``: the wallet holds one, or two
   while Chemmy switches keys; it cannot sign a call itself). A missing or wrong
   signature, or an unknown key id, is ``401 bad_signature``, one more than 300 s from
   our clock ``401 stale_signature``.
2. Parse the JSON and check its fields, the game and where the player plays from
   included; a call that is not what docs/wallet.md §3 says is ``400 bad_request``
   (Chemmy marks it ``failed``: it needs a person).
3. Apply it once (:mod:`.ledger`) and answer with the call's ``status``.

Besides, under ``/_control/`` and only to a client on loopback, the unsigned test API of
:mod:`.faults`: a real wallet has no such thing. (Behind a proxy on the same machine
every client is on loopback: this wallet is for tests and reading, not for players.)
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import socket
import struct
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Final
from urllib.parse import urlsplit

from server.wallet.signing import HEADER, PublicKey, SignatureError, verify_request

from .faults import Faults, parse_faults
from .ledger import (
    ENDPOINTS,
    ORIGIN,
    PLAYER_SETTINGS,
    Answer,
    BadRequest,
    Call,
    Ledger,
    parse_call,
)

__all__ = ["MAX_BODY", "WalletServer"]

#: The largest body a call may have (Chemmy's are well under 2 KiB).
MAX_BODY: Final = 16 * 1024


def control_allowed(address: str) -> bool:
    """Whether a client at ``address`` may use ``/_control/``: only one on loopback."""
    return ipaddress.ip_address(address).is_loopback


class WalletServer(ThreadingHTTPServer):
    """The wallet on ``address``: a thread per connection, over one :class:`Ledger`."""

    daemon_threads = True  # a held request never keeps the process from exiting
    # A coup's debits arrive together (one per seated player, up to 14 at once, on new
    # connections after a restart): the default backlog of 5 drops SYNs, which cost 1 s.
    request_queue_size = 128

    def __init__(
        self,
        address: tuple[str, int],
        ledger: Ledger,
        secret: bytes | None,
        faults: Faults | None = None,
        *,
        keys: dict[str, PublicKey] | None = None,
        game: str | None = None,
    ) -> None:
        super().__init__(address, WalletHandler)
        self.ledger = ledger
        #: The shared secret (None: HMAC signatures refused) and Chemmy's public keys.
        self.secret = secret
        self.keys = dict(keys or {})
        #: The one game code taken (None: any).
        self.game = game
        self.faults = faults or Faults()

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host!s}:{port}"


class WalletHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: Chemmy may reuse its connections
    # Headers and body are written apart: with Nagle's algorithm on, the body of an
    # answer on a kept-alive connection waits for the peer's delayed ACK (about 40 ms).
    disable_nagle_algorithm = True
    timeout = 120  # a connection idle (or a body unsent) this long is closed
    server: WalletServer

    # -- routing -----------------------------------------------------------------------
    def do_POST(self) -> None:
        path = urlsplit(self.path).path
        if path.startswith("/_control/"):
            self._control("POST", path)
        elif path.removeprefix("/") in ENDPOINTS:
            self._wallet_call(path.removeprefix("/"))
        else:
            self._discard_body()
            self._send(Answer(404, {"status": "not_found", "message": f"no {path} here"}))

    def do_GET(self) -> None:
        path = urlsplit(self.path).path
        if path.startswith("/_control/"):
            self._control("GET", path)
        elif path.removeprefix("/") in ENDPOINTS:
            self._send(Answer(405, {"status": "bad_request", "message": "the calls are POST"}))
        else:
            self._send(Answer(404, {"status": "not_found", "message": f"no {path} here"}))

    # -- the wallet API ----------------------------------------------------------------
    def _wallet_call(self, endpoint: str) -> None:
        faults = self.server.faults
        body = self._read_body()
        if body is None:
            return
        faults.delay()
        ids = _ids(endpoint, body)
        call, refusal, kid = self._check(endpoint, body)
        ids["kid"] = kid
        if call is None:
            assert refusal is not None
            faults.record(**ids, http=refusal.http, status=refusal.status, fault=None, repeat=False)
            self._send(refusal)
            return
        rule = faults.take(endpoint, call.player)
        fault = rule.fault if rule is not None else None
        if rule is not None and rule.fault in ("reset", "timeout"):
            faults.record(**ids, http=None, status=None, fault=fault, repeat=False)
            faults.hold(rule.seconds if rule.fault == "timeout" else 0)
            self._drop()
            return
        if rule is not None and rule.fault == "http500":
            faults.record(**ids, http=500, status="error", fault=fault, repeat=False)
            self._send(Answer(500, {"status": "error", "message": "failed on cue"}))
            return
        if rule is not None and rule.fault == "slow":
            faults.hold(rule.seconds)
        if rule is not None and rule.code is not None:
            answer = self.server.ledger.refuse(call, rule.code, rule.http)
        else:
            answer = self.server.ledger.apply(call)
        # Logged before the answer goes: a test that has the answer finds it in the log.
        lost = fault == "lost_answer"
        http = None if lost else answer.http
        faults.record(**ids, http=http, status=answer.status, fault=fault, repeat=answer.repeat)
        if lost:
            self._drop()
        elif rule is not None and rule.fault == "drip":
            self._drip(answer, rule.seconds)
        else:
            if rule is not None and rule.fault == "held":
                faults.hold(rule.seconds)  # applied already: only the answer waits
            self._send(answer)

    def _check(self, endpoint: str, body: bytes) -> tuple[Call | None, Answer | None, str | None]:
        """The call, if it is signed and well formed, else the answer that refuses it;
        and the id of Chemmy's key that signed it (None: the shared secret, or none)."""
        try:
            kid = verify_request(
                self.headers.get(HEADER),
                time.time(),
                "POST",
                self.path,
                body,
                hmac_key=self.server.secret,
                public_keys=self.server.keys,
            )
        except SignatureError as error:
            return None, Answer(401, {"status": error.status, "message": error.message}), None
        try:
            return parse_call(endpoint, json.loads(body), self.server.game), None, kid
        except (ValueError, BadRequest) as error:  # (json's errors are ValueErrors)
            return None, Answer(400, {"status": "bad_request", "message": str(error)}), kid

    # -- the test API ------------------------------------------------------------------
    def _control(self, method: str, path: str) -> None:
        body = self._read_body() if method == "POST" else b""
        if body is None:
            return
        if not control_allowed(self.client_address[0]):
            self._send(Answer(404, {"status": "not_found", "message": f"no {path} here"}))
            return
        try:
            data: Any = json.loads(body) if body else {}
            self._send(self._control_answer(method, path, data))
        except ValueError as error:
            self._send(Answer(400, {"status": "bad_request", "message": str(error)}))

    def _control_answer(self, method: str, path: str, data: Any) -> Answer:
        ledger, faults = self.server.ledger, self.server.faults
        if (method, path) == ("POST", "/_control/faults"):
            faults.configure(*parse_faults(data))
            return Answer(200, {"status": "ok", "faults": faults.describe()})
        if (method, path) == ("POST", "/_control/reset"):
            faults.reset()
            return Answer(200, {"status": "ok", "faults": faults.describe()})
        if (method, path) == ("POST", "/_control/players"):
            name, changes = _player_changes(data)
            return Answer(200, {"status": "ok", "player": ledger.set_player(name, changes)})
        if (method, path) == ("POST", "/_control/sessions"):
            session, ended = _session_change(data)
            return Answer(200, {"status": "ok", **ledger.set_session(session, ended)})
        if (method, path) == ("GET", "/_control/state"):
            return Answer(200, {**ledger.state(), "faults": faults.describe()})
        if (method, path) == ("GET", "/_control/log"):
            return Answer(200, {"requests": faults.log()})
        return Answer(404, {"status": "not_found", "message": f"no {method} {path} here"})

    # -- bytes in and out --------------------------------------------------------------
    def _read_body(self) -> bytes | None:
        """The body, or None once a refusal is sent (too long, or chunked). No
        ``Content-Length`` is an empty body (``curl -X POST`` sends none)."""
        length = self.headers.get("Content-Length", "0")
        chunked = "Transfer-Encoding" in self.headers
        if chunked or not length.isdigit() or int(length) > MAX_BODY:
            self._discard_body()  # read, unless huge: closing on unread bytes resets the answer
            self.close_connection = True
            message = f"a body of at most {MAX_BODY} bytes, with a Content-Length"
            self._send(Answer(413, {"status": "bad_request", "message": message}))
            return None
        return self.rfile.read(int(length))

    def _discard_body(self) -> None:
        length = self.headers.get("Content-Length", "0")
        if (
            length.isdigit()
            and int(length) <= 64 * MAX_BODY
            and "Transfer-Encoding" not in self.headers
        ):
            self.rfile.read(int(length))
        else:
            self.close_connection = True

    def _send(self, answer: Answer) -> None:
        data = json.dumps(answer.body).encode("utf-8")
        with contextlib.suppress(OSError):  # the client went away: nothing to tell it
            self.send_response(answer.http)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    def _drip(self, answer: Answer, seconds: float) -> None:
        """Send ``answer`` one byte every ``seconds`` (the ``drip`` fault), status line
        and headers included, until it is all sent, the caller hangs up, or a reset."""
        data = json.dumps(answer.body).encode("utf-8")
        head = (
            f"{self.protocol_version} {answer.http} {self.responses[answer.http][0]}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n\r\n"
        )
        self.log_request(answer.http)
        reset = self.server.faults.released()  # a reset sends the rest at once
        for i, byte in enumerate(head.encode("ascii") + data):
            if i:
                reset.wait(seconds)
            try:
                self.wfile.write(bytes([byte]))
            except OSError:  # the caller gave up
                self.close_connection = True
                return

    def _drop(self) -> None:
        """Close the connection with no answer, as a crash or a network fault does: a TCP
        reset (SO_LINGER 0), once the handler lets go of the socket."""
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.connection.close()

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        """One line on stderr for each wallet call; none for the test API."""
        if not self.path.startswith("/_control/"):
            sys.stderr.write(f"{self.command} {self.path} -> {code}\n")


def _ids(endpoint: str, body: bytes) -> dict[str, Any]:
    """What the log says of a call: its endpoint and, as far as the body has them, its
    ids and player (also for a call refused before it is parsed)."""
    try:
        data = json.loads(body)
    except ValueError:
        data = None
    if not isinstance(data, dict):
        data = {}
    ids: dict[str, Any] = {"endpoint": endpoint}
    for name in ("transaction_id", "request_id", "player", *ORIGIN):
        value = data.get(name)
        ids[name] = value if isinstance(value, str) else None
    return ids


def _session_change(data: Any) -> tuple[str, bool]:
    """The session a ``/_control/sessions`` body ends (or opens again), or ValueError."""
    if (
        not isinstance(data, dict)
        or set(data) != {"session", "ended"}
        or not isinstance(data["session"], str)
        or not data["session"]
        or not isinstance(data["ended"], bool)
    ):
        raise ValueError('the body is {"session": "s-1", "ended": true}')
    return data["session"], data["ended"]


def _player_changes(data: Any) -> tuple[str, dict[str, Any]]:
    """The player and the settings a ``/_control/players`` body changes, or ValueError."""
    if not isinstance(data, dict) or not isinstance(data.get("player"), str):
        raise ValueError('the body is {"player": "bob", "balance": 5000, "blocked": true, ...}')
    changes = {key: value for key, value in data.items() if key != "player"}
    for key, value in changes.items():
        types = PLAYER_SETTINGS.get(key)
        if types is None:
            raise ValueError(f"a player has no {key}; they have {', '.join(PLAYER_SETTINGS)}")
        if not isinstance(value, types) or (isinstance(value, bool) and bool not in types):
            raise ValueError(f"{key} is not of the right type")
    return data["player"], changes
