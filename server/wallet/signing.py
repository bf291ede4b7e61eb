"""The one signature of every call between Chemmy and an operator (docs/wallet.md §1).

``Chemmy-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256>`` over
``<t>\\n<METHOD>\\n<path and query>\\n<body>``, under a shared key of at least 32 bytes.
The same code signs Chemmy's calls to a seamless wallet and checks the operator's calls
to Chemmy's transfer and reconciliation API, and the reference wallet in ``examples/``
uses it too, so the two sides cannot drift apart. Pure: the time is passed in.
"""

from __future__ import annotations

import hashlib
import hmac
from typing import Final

__all__ = ["HEADER", "MAX_SKEW", "SignatureError", "sign", "signature_header", "verify"]

#: The header that carries the signature.
HEADER: Final = "Chemmy-Signature"
#: How far (seconds) a signature's time may be from the receiver's clock.
MAX_SKEW: Final = 300


class SignatureError(Exception):
    """A signature that is missing, malformed or wrong (``status`` ``bad_signature``), or
    too old or too far in the future (``stale_signature``)."""

    def __init__(self, status: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def _payload(t: int, method: str, target: str, body: bytes) -> bytes:
    return b"%d\n%s\n%s\n" % (t, method.upper().encode("ascii"), target.encode("ascii")) + body


def sign(key: bytes, t: int, method: str, target: str, body: bytes) -> str:
    """The lowercase hex HMAC-SHA256 of the signed bytes."""
    return hmac.new(key, _payload(t, method, target, body), hashlib.sha256).hexdigest()


def signature_header(key: bytes, now: float, method: str, target: str, body: bytes) -> str:
    """The value of :data:`HEADER` for a request sent at ``now``."""
    t = int(now)
    return f"t={t},v1={sign(key, t, method, target, body)}"


def verify(
    key: bytes, header: str | None, now: float, method: str, target: str, body: bytes
) -> None:
    """Raise :class:`SignatureError` unless ``header`` signs this request under ``key``
    within :data:`MAX_SKEW` seconds of ``now``."""
    if not header:
        raise SignatureError("bad_signature", f"the request has no {HEADER} header")
    parts = dict(p.split("=", 1) for p in header.split(",") if "=" in p)
    t_text, given = parts.get("t", ""), parts.get("v1", "")
    if not t_text.isdigit() or len(t_text) > 12 or len(given) != 64:
        raise SignatureError("bad_signature", f"{HEADER} is not t=<seconds>,v1=<64 hex digits>")
    t = int(t_text)
    expected = sign(key, t, method, target, body)
    if not hmac.compare_digest(expected, given.lower()):
        raise SignatureError("bad_signature", "the signature does not match the request")
    if abs(now - t) > MAX_SKEW:
        raise SignatureError(
            "stale_signature", f"the signature's time is more than {MAX_SKEW} s from ours"
        )
