"""The one signature of every call between Chemmy and an operator (docs/wallet.md §1).

One header, ``Chemmy-Signature``, over the bytes
``<t>\\n<METHOD>\\n<path and query>\\n<body>``, in one of three forms:

- ``t=<unix seconds>,v1=<hex HMAC-SHA256>``, under a shared key of at least 32 bytes
  (both sides hold the key: whoever can check a signature can make one);
- ``t=<unix seconds>,kid=<key id>,ed25519=<base64url signature>``: Ed25519 (RFC 8032)
  under the sender's private key;
- ``t=<unix seconds>,kid=<key id>,rsa-sha256=<base64url signature>``: RSASSA-PKCS1-v1_5
  with SHA-256 (RS256's) under the sender's RSA private key (2048 bits or more).

With a key pair the receiver holds only the public half, so the key it checks with
cannot make a call (a credit that mints money at the operator's wallet, a deposit that
mints it at Chemmy's). ``kid`` names which of the receiver's public keys to check with:
during a key's rotation the receiver holds two, the old and the new, and accepts
either (:func:`verify_request` with both in ``public_keys``).

The same code signs Chemmy's calls to a seamless wallet (:class:`HmacSigner`,
:class:`KeySigner`) and checks the operator's calls to Chemmy's operator API; the
reference wallet in ``examples/`` uses it too, so the two sides cannot drift apart.
Pure: the time is passed in; keys are read from PEM text given by the caller. Never
logs, and never puts a key in an error.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final, Protocol

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ed25519, padding, rsa

from server.protocol.errors import SignatureError  # (defined with the error tree)

__all__ = [
    "ALGORITHMS",
    "HEADER",
    "KEY_ID",
    "MAX_SKEW",
    "HmacSigner",
    "KeySigner",
    "PrivateKey",
    "PublicKey",
    "SignatureError",
    "Signer",
    "algorithm_of",
    "key_signature_header",
    "load_private_key",
    "load_public_key",
    "parse_key_list",
    "sign",
    "signature_header",
    "verify",
    "verify_request",
]

#: The header that carries the signature.
HEADER: Final = "Chemmy-Signature"
#: How far (seconds) a signature's time may be from the receiver's clock.
MAX_SKEW: Final = 300
#: How a call may be signed: a shared key, or a key pair of either kind.
ALGORITHMS: Final = ("hmac", "ed25519", "rsa")
#: The name of each key pair's signature in the header.
_PARAMETER: Final = {"ed25519": "ed25519", "rsa": "rsa-sha256"}
#: A key id: 1-64 of ``A-Z a-z 0-9 . _ : -``.
KEY_ID: Final = re.compile(r"[A-Za-z0-9._:-]{1,64}")
_MIN_RSA_BITS: Final = 2048
_BASE64URL: Final = re.compile(r"[A-Za-z0-9_-]{1,1024}={0,2}")
_HEX64: Final = re.compile(r"[0-9a-fA-F]{64}")
_SECONDS: Final = re.compile(r"[0-9]{1,12}")

PrivateKey = ed25519.Ed25519PrivateKey | rsa.RSAPrivateKey
PublicKey = ed25519.Ed25519PublicKey | rsa.RSAPublicKey


def _payload(t: int, method: str, target: str, body: bytes) -> bytes:
    return b"%d\n%s\n%s\n" % (t, method.upper().encode("ascii"), target.encode("ascii")) + body


# -- HMAC (a shared key) ---------------------------------------------------------------
def sign(key: bytes, t: int, method: str, target: str, body: bytes) -> str:
    """The lowercase hex HMAC-SHA256 of the signed bytes."""
    return hmac.new(key, _payload(t, method, target, body), hashlib.sha256).hexdigest()


def signature_header(key: bytes, now: float, method: str, target: str, body: bytes) -> str:
    """The value of :data:`HEADER` for a request sent at ``now``, under the shared key."""
    t = int(now)
    return f"t={t},v1={sign(key, t, method, target, body)}"


def verify(
    key: bytes, header: str | None, now: float, method: str, target: str, body: bytes
) -> None:
    """Raise :class:`SignatureError` unless ``header`` signs this request under the
    shared ``key`` within :data:`MAX_SKEW` seconds of ``now``."""
    verify_request(header, now, method, target, body, hmac_key=key)


# -- key pairs -------------------------------------------------------------------------
def algorithm_of(key: PrivateKey | PublicKey) -> str:
    """``ed25519`` or ``rsa``: which signature a key makes or checks."""
    if isinstance(key, ed25519.Ed25519PrivateKey | ed25519.Ed25519PublicKey):
        return "ed25519"
    return "rsa"


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes | None:
    if not _BASE64URL.fullmatch(text):
        return None
    try:
        return base64.urlsafe_b64decode(text.rstrip("=") + "=" * (-len(text.rstrip("=")) % 4))
    except (binascii.Error, ValueError):
        return None


def _key_sign(key: PrivateKey, data: bytes) -> bytes:
    if isinstance(key, ed25519.Ed25519PrivateKey):
        return key.sign(data)
    return key.sign(data, padding.PKCS1v15(), hashes.SHA256())


def _key_verify(key: PublicKey, signature: bytes, data: bytes) -> bool:
    try:
        if isinstance(key, ed25519.Ed25519PublicKey):
            key.verify(signature, data)
        else:
            key.verify(signature, data, padding.PKCS1v15(), hashes.SHA256())
    except InvalidSignature:
        return False
    return True


def key_signature_header(
    key: PrivateKey, kid: str, now: float, method: str, target: str, body: bytes
) -> str:
    """The value of :data:`HEADER` for a request sent at ``now``, signed with the
    private ``key`` whose public half the receiver holds as ``kid``."""
    if not KEY_ID.fullmatch(kid):
        raise ValueError("a key id is 1-64 of A-Z a-z 0-9 . _ : -")
    t = int(now)
    signature = _key_sign(key, _payload(t, method, target, body))
    return f"t={t},kid={kid},{_PARAMETER[algorithm_of(key)]}={_b64(signature)}"


def load_private_key(pem: bytes) -> PrivateKey:
    """An Ed25519 or RSA (2048 bits or more) private key from unencrypted PEM; else
    ``ValueError`` (saying why, never the key)."""
    try:
        key = serialization.load_pem_private_key(pem, password=None)
    except (ValueError, TypeError):
        raise ValueError("not an unencrypted PEM private key") from None
    if not isinstance(key, ed25519.Ed25519PrivateKey | rsa.RSAPrivateKey):
        raise ValueError("the key is neither Ed25519 nor RSA")
    if isinstance(key, rsa.RSAPrivateKey) and key.key_size < _MIN_RSA_BITS:
        raise ValueError(f"the RSA key has {key.key_size} bits; at least {_MIN_RSA_BITS}")
    return key


def load_public_key(pem: bytes) -> PublicKey:
    """An Ed25519 or RSA (2048 bits or more) public key from PEM; a private key is
    refused (the receiver must not hold one); else ``ValueError``."""
    if b"PRIVATE KEY" in pem:
        raise ValueError("a private key: give the public key (keep the private key elsewhere)")
    try:
        key = serialization.load_pem_public_key(pem)
    except (ValueError, TypeError):
        raise ValueError("not a PEM public key") from None
    if not isinstance(key, ed25519.Ed25519PublicKey | rsa.RSAPublicKey):
        raise ValueError("the key is neither Ed25519 nor RSA")
    if isinstance(key, rsa.RSAPublicKey) and key.key_size < _MIN_RSA_BITS:
        raise ValueError(f"the RSA key has {key.key_size} bits; at least {_MIN_RSA_BITS}")
    return key


def parse_key_list(entries: tuple[str, ...] | list[str]) -> dict[str, str]:
    """``("kid=path", ...)`` as ``{kid: path}``; ``ValueError`` for an entry that is
    not ``<key id>=<path>`` or a key id given twice."""
    out: dict[str, str] = {}
    for entry in entries:
        kid, sep, path = entry.partition("=")
        kid, path = kid.strip(), path.strip()
        if not sep or not KEY_ID.fullmatch(kid) or not path:
            raise ValueError(f"{entry!r} is not <key id>=<path of a PEM public key>")
        if kid in out:
            raise ValueError(f"the key id {kid!r} is given twice")
        out[kid] = path
    return out


# -- checking a request ----------------------------------------------------------------
def _fields(header: str) -> dict[str, str]:
    if len(header) > 4096 or not header.isascii() or not header.isprintable():
        raise SignatureError("bad_signature", f"{HEADER} is not printable ASCII")
    fields: dict[str, str] = {}
    for part in header.split(","):
        name, sep, value = part.strip().partition("=")
        if not sep or name in fields:
            raise SignatureError("bad_signature", f"{HEADER} is name=value pairs, each once")
        fields[name] = value
    return fields


def verify_request(
    header: str | None,
    now: float,
    method: str,
    target: str,
    body: bytes,
    *,
    hmac_key: bytes | None = None,
    public_keys: Mapping[str, PublicKey] | None = None,
) -> str | None:
    """Check ``header`` over this request: under the shared ``hmac_key`` (a ``v1=``
    signature) or under the public key ``public_keys[kid]`` (``kid=`` with
    ``ed25519=`` or ``rsa-sha256=``), whichever the header uses and the receiver holds,
    then its time within :data:`MAX_SKEW` seconds of ``now``. Returns the key id that
    verified it (None: the shared key); raises :class:`SignatureError`."""
    if not header:
        raise SignatureError("bad_signature", f"the request has no {HEADER} header")
    fields = _fields(header)
    t_text = fields.get("t", "")
    if not _SECONDS.fullmatch(t_text):
        raise SignatureError("bad_signature", f"{HEADER} has no t=<unix seconds>")
    t = int(t_text)
    try:
        data = _payload(t, method, target, body)
    except UnicodeEncodeError:
        raise SignatureError("bad_signature", "the request's path is not ASCII") from None
    kid: str | None = None
    if "v1" in fields:
        if hmac_key is None:
            raise SignatureError(
                "bad_signature", "HMAC signatures are not taken here: sign with your key pair"
            )
        given = fields["v1"]
        if not _HEX64.fullmatch(given):
            raise SignatureError("bad_signature", f"{HEADER}'s v1 is not 64 hex digits")
        expected = hmac.new(hmac_key, data, hashlib.sha256).hexdigest()
        if not hmac.compare_digest(expected, given.lower()):
            raise SignatureError("bad_signature", "the signature does not match the request")
    else:
        kid = fields.get("kid", "")
        found = [(alg, fields[p]) for alg, p in _PARAMETER.items() if p in fields]
        if len(found) != 1 or not KEY_ID.fullmatch(kid):
            raise SignatureError(
                "bad_signature",
                f"{HEADER} is t=…,v1=<hex> or t=…,kid=<key id>,ed25519=|rsa-sha256=<base64url>",
            )
        key = (public_keys or {}).get(kid)
        if key is None:
            raise SignatureError("bad_signature", f"no public key {kid!r} here")
        algorithm, text = found[0]
        signature = _unb64(text)
        if algorithm_of(key) != algorithm:
            raise SignatureError("bad_signature", f"the key {kid!r} is not an {algorithm} key")
        if signature is None or not _key_verify(key, signature, data):
            raise SignatureError("bad_signature", "the signature does not match the request")
    if abs(now - t) > MAX_SKEW:
        raise SignatureError(
            "stale_signature", f"the signature's time is more than {MAX_SKEW} s from ours"
        )
    return kid


# -- signers: what the sender holds ----------------------------------------------------
class Signer(Protocol):
    """Makes the :data:`HEADER` of a request."""

    def header(self, now: float, method: str, target: str, body: bytes) -> str: ...


@dataclass(frozen=True, slots=True, repr=False)
class HmacSigner:
    """Signs with a shared key (``v1=``)."""

    key: bytes

    def header(self, now: float, method: str, target: str, body: bytes) -> str:
        return signature_header(self.key, now, method, target, body)

    def __repr__(self) -> str:
        return "HmacSigner(<hidden>)"


@dataclass(frozen=True, slots=True, repr=False)
class KeySigner:
    """Signs with a private key the receiver knows by ``kid``."""

    key: PrivateKey
    kid: str

    def header(self, now: float, method: str, target: str, body: bytes) -> str:
        return key_signature_header(self.key, self.kid, now, method, target, body)

    def __repr__(self) -> str:
        return f"KeySigner({algorithm_of(self.key)}, kid={self.kid!r})"
