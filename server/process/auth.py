"""Who is at the other end of a connection: player tokens (JWT) and guests.

A player proves who they are with a JSON Web Token signed by the operator, either with
a shared secret (HS256) or with a private key whose public half the server holds (EdDSA
or RS256, from a PEM file). The claims used:

- ``sub`` (required): the player id, 1-64 characters of ``A-Z a-z 0-9 _ . : @ -``
  (``guest-`` ids are reserved for guests, and ``croupier``, the id the table's own
  actions carry, is nobody's: :data:`RESERVED_PLAYERS`);
- ``name`` (optional): the display name, 1-32 characters that pass the one text check
  (:func:`server.protocol.text.clean_text`; defaults to the id, cut to 32 characters);
- ``roles`` (optional): a list of strings; ``"operator"`` may open and close tables;
- ``language`` (optional): the player's language, a BCP 47 tag such as ``"fr"`` or
  ``"de-CH"`` (:data:`LANGUAGE_TAG`); the server only passes it on, in the ``hello``
  reply, for the client to choose its words (docs/embedding.md "Languages");
- ``currency`` (optional): the player's money, an ISO 4217 code Babel knows (``"EUR"``,
  ``"JPY"``; :func:`server.vocabulary.options.check_currency`); without one the player plays
  with play money, as every guest does. A player joins only the tables of their
  currency, and the lobby shows them only those;
- ``jurisdiction`` (optional): where the operator licenses the player's play, an
  ISO 3166 region (``"MT"``, ``"GB"``, or a subdivision such as ``"US-NJ"``);
- ``brand`` (optional): which of the operator's sites the player came from, 1-64 of
  ``A-Z a-z 0-9 _ . : -``;
- ``sid`` (optional), else ``jti``: the player's session at the operator (a login), 1-128
  printable ASCII characters; every call to a seamless wallet carries it (``session``,
  docs/wallet.md §3) so the operator's wallet can refuse a debit of a session that has
  ended;
- ``return_url`` (optional): where the player goes back to on leaving, an ``http`` or
  ``https`` URL of at most 2048 characters;
- ``reality_check`` (optional): every how many minutes of play the player is reminded
  of their session's length and net result (1 to 1440, a whole number or not; the
  jurisdiction's rule, which the operator knows): it overrides the server's
  ``--reality-check`` (``server.protection.play_limits``);
- ``exp`` (required unless configured otherwise), ``iss``/``aud`` when configured;
  ``exp``, ``nbf`` and ``iat`` are whole seconds (JSON integers from 0 to 2^53 - 1: not a
  string, not ``1e300``); clocks may differ by :data:`DEFAULT_LEEWAY` seconds.

Only the configured algorithm is accepted (no ``alg`` confusion: an HS256 token
"signed" with the public key text is refused by an EdDSA or RS256 server), and keys are
loaded and type-checked once, at start-up.

Without a token a player may play as a guest when the server allows it
(:func:`guest_identity`: an unguessable ``guest-`` id from :mod:`secrets`).

Errors are :class:`AuthError` (codes ``"auth_required"``, ``"bad_token"``,
``"token_expired"``, ``"bad_name"``). This module must never put a token's text in an
error message or a log line, and never logs at all; PyJWT's own exceptions are not
chained (``from None``) so a traceback cannot carry one either.
"""

from __future__ import annotations

import math
import re
import secrets
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, TypeGuard
from urllib.parse import urlsplit

import jwt
from babel import Locale
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed448, ed25519, rsa

from server.process.config import ConfigError
from server.process.settings import JWT_ALGORITHMS, MIN_SECRET_BYTES
from server.protocol.errors import ChemmyError
from server.protocol.text import clean_text
from server.vocabulary.commands import CROUPIER
from server.vocabulary.options import OptionsError, check_currency

if TYPE_CHECKING:
    from server.process.config import ServerConfig

__all__ = [
    "DEFAULT_LEEWAY",
    "GUEST_PREFIX",
    "LANGUAGE_TAG",
    "OPERATOR",
    "RESERVED_PLAYERS",
    "AuthError",
    "Authenticator",
    "Identity",
    "clean_name",
    "guest_identity",
    "is_brand",
    "is_currency_code",
    "is_jurisdiction",
    "is_language_tag",
    "is_reality_minutes",
    "is_return_url",
    "is_session_id",
    "is_valid_player_id",
    "make_token",
]

OPERATOR: Final = "operator"
GUEST_PREFIX: Final = "guest-"
#: Seconds of clock difference tolerated on ``exp``, ``nbf`` and ``iat``.
DEFAULT_LEEWAY: Final = 10.0
#: Longer tokens are refused before any parsing.
MAX_TOKEN_LEN: Final = 8192
MAX_NAME_LEN: Final = 32
#: Player ids nobody may hold: the table's own actions are recorded as ``croupier``'s.
RESERVED_PLAYERS: Final = frozenset({CROUPIER})
#: The time claims (``exp``, ``nbf``, ``iat``) are whole seconds below this (0 to 2^53 - 1,
#: as docs/protocol.md says: like every integer of the protocol).
MAX_TIME_CLAIM: Final = 2**53

_PLAYER_ID = re.compile(r"[A-Za-z0-9_.:@-]{1,64}")
_ROLE = re.compile(r"[A-Za-z0-9_.:-]{1,32}")
#: A language tag as the ``language`` claim carries it: a 2-3 letter language, then up
#: to four subtags (``fr``, ``de-CH``, ``zh-Hant-TW``); 35 characters at most.
LANGUAGE_TAG: Final = re.compile(r"[A-Za-z]{2,3}(?:-[A-Za-z0-9]{1,8}){0,4}")
MAX_LANGUAGE_LEN: Final = 35
_SESSION_ID = re.compile(r"[!-~]{1,128}")
_BRAND = re.compile(r"[A-Za-z0-9_.:-]{1,64}")
#: A jurisdiction: an ISO 3166-1 region, then maybe an ISO 3166-2 subdivision (``US-NJ``).
_JURISDICTION = re.compile(r"([A-Z]{2})(?:-[A-Z0-9]{1,3})?")
MAX_URL_LEN: Final = 2048


class AuthError(ChemmyError):
    """Authentication failed: ``auth_required``, ``bad_token``, ``token_expired`` or
    ``bad_name``. The message never contains the token."""


def is_valid_player_id(player_id: object) -> TypeGuard[str]:
    """Whether ``player_id`` is 1-64 characters of ``A-Z a-z 0-9 _ . : @ -`` and not
    reserved (:data:`RESERVED_PLAYERS`)."""
    return (
        isinstance(player_id, str)
        and _PLAYER_ID.fullmatch(player_id) is not None
        and player_id not in RESERVED_PLAYERS
    )


def clean_name(name: object) -> str:
    """A display name: the one text check of chat too (:func:`~server.protocol.text.clean_text`:
    NFC, whitespace runs to one space, trimmed; no control, bidi or zero-width
    character), then 1-32 characters. Raises :class:`ValueError` otherwise."""
    if not isinstance(name, str):
        raise ValueError("a name is a string")
    cleaned = clean_text(name)
    if not 1 <= len(cleaned) <= MAX_NAME_LEN:
        raise ValueError(f"a name has 1 to {MAX_NAME_LEN} characters")
    return cleaned


@dataclass(frozen=True, slots=True)
class Identity:
    """Who a connection speaks for. Validates itself."""

    player_id: str
    name: str
    roles: frozenset[str] = field(default_factory=frozenset)
    guest: bool = False
    language: str | None = None  # the token's ``language`` claim: a BCP 47 tag
    #: The token's ``currency`` claim (ISO 4217); None: play money (every guest's).
    currency: str | None = None
    jurisdiction: str | None = None  # the token's ``jurisdiction`` claim (ISO 3166)
    brand: str | None = None  # the token's ``brand`` claim
    return_url: str | None = None  # the token's ``return_url`` claim: http(s)
    #: The token's ``reality_check`` claim: a reminder every so many minutes of play.
    reality_check: float | None = None
    #: The player's session at the operator: the token's ``sid`` claim, else its ``jti``.
    session: str | None = None

    def __post_init__(self) -> None:
        if not is_valid_player_id(self.player_id):
            raise ValueError("invalid player id")
        if clean_name(self.name) != self.name:
            raise ValueError("a name is stripped and normalized")
        if self.guest and self.roles:
            raise ValueError("a guest has no roles")
        if self.language is not None and not is_language_tag(self.language):
            raise ValueError("invalid language tag")
        for value, valid, what in (
            (self.currency, is_currency_code, "currency"),
            (self.jurisdiction, is_jurisdiction, "jurisdiction"),
            (self.brand, is_brand, "brand"),
            (self.return_url, is_return_url, "return_url"),
            (self.reality_check, is_reality_minutes, "reality_check"),
            (self.session, is_session_id, "session"),
        ):
            if value is not None and not valid(value):
                raise ValueError(f"invalid {what}")
        if self.guest and self.currency is not None:
            raise ValueError("a guest plays with play money")

    @property
    def is_operator(self) -> bool:
        return OPERATOR in self.roles

    @property
    def wallet_session(self) -> dict[str, str | None]:
        """What a seamless wallet's calls say of the player's session at the operator
        (docs/wallet.md §3): ``session`` (``sid``, else ``jti``), ``brand``,
        ``jurisdiction``, each None when the token has none."""
        return {"session": self.session, "brand": self.brand, "jurisdiction": self.jurisdiction}


def is_language_tag(value: object) -> TypeGuard[str]:
    """A ``language`` claim the server passes on: :data:`LANGUAGE_TAG`, at most
    :data:`MAX_LANGUAGE_LEN` characters."""
    return (
        isinstance(value, str)
        and len(value) <= MAX_LANGUAGE_LEN
        and LANGUAGE_TAG.fullmatch(value) is not None
    )


def is_currency_code(value: object) -> TypeGuard[str]:
    """A ``currency`` claim: an ISO 4217 code Babel knows (``"EUR"``)."""
    try:
        return isinstance(value, str) and check_currency(value) is not None
    except OptionsError:
        return False


def is_jurisdiction(value: object) -> TypeGuard[str]:
    """A ``jurisdiction`` claim: a known ISO 3166-1 region (CLDR's, through Babel),
    maybe with an ISO 3166-2 subdivision: ``"MT"``, ``"GB"``, ``"US-NJ"``."""
    if not isinstance(value, str):
        return False
    m = _JURISDICTION.fullmatch(value)
    return m is not None and m[1] != "ZZ" and m[1] in _regions()


def _regions() -> frozenset[str]:
    global _REGIONS
    if _REGIONS is None:
        codes = Locale("en").territories
        _REGIONS = frozenset(c for c in codes if isinstance(c, str) and len(c) == 2)
    return _REGIONS


_REGIONS: frozenset[str] | None = None


def is_session_id(value: object) -> TypeGuard[str]:
    """A ``sid`` or ``jti`` claim: 1-128 printable ASCII characters, no space."""
    return isinstance(value, str) and _SESSION_ID.fullmatch(value) is not None


def is_brand(value: object) -> TypeGuard[str]:
    """A ``brand`` claim: 1-64 of ``A-Z a-z 0-9 _ . : -``."""
    return isinstance(value, str) and _BRAND.fullmatch(value) is not None


def is_reality_minutes(value: object) -> TypeGuard[float]:
    """A ``reality_check`` claim: minutes from 1 to 1440 (a JSON number, not a bool)."""
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and 1 <= value <= 1440
    )


def is_return_url(value: object) -> TypeGuard[str]:
    """A ``return_url`` claim: an ``http``/``https`` URL with a host, at most
    :data:`MAX_URL_LEN` characters, no space or control character."""
    if not isinstance(value, str) or not 0 < len(value) <= MAX_URL_LEN:
        return False
    if any(ch.isspace() or ord(ch) < 32 or ord(ch) == 127 for ch in value):
        return False
    try:
        parts = urlsplit(value)
        parts.port  # noqa: B018 - raises ValueError for a bad port
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and bool(parts.hostname)


def guest_identity(name: str | None = None) -> Identity:
    """A new guest: ``guest-`` and 64 random bits. Raises :class:`AuthError`
    (``bad_name``) for an invalid name."""
    player_id = GUEST_PREFIX + secrets.token_hex(8)
    if name is None:
        shown = f"Guest {player_id[-4:]}"
    else:
        try:
            shown = clean_name(name)
        except ValueError as exc:
            raise AuthError("bad_name", str(exc)) from None
    return Identity(player_id, shown, frozenset(), guest=True)


GUEST_RESUME_TTL: Final = 24 * 3600


def guest_resume_token(key: bytes, identity: Identity, *, now: float | None = None) -> str:
    """A token the same guest presents to come back after a dropped connection (§5:
    the seat is held for the grace period). Signed with the server's own guest key,
    which is not the operators' token key: it can only ever name a guest."""
    issued = int(time.time() if now is None else now)
    claims = {"sub": identity.player_id, "name": identity.name, "kind": "guest", "iat": issued}
    claims["exp"] = issued + GUEST_RESUME_TTL
    return jwt.encode(claims, key, algorithm="HS256")


def guest_from_resume(key: bytes, token: str) -> Identity:
    """The guest a resume token names; ``bad_token`` / ``token_expired`` otherwise."""
    try:
        claims = jwt.decode(
            token,
            key,
            algorithms=["HS256"],
            options={
                "require": ["exp", "sub"],
                "verify_exp": False,
                "verify_nbf": False,
                "verify_iat": False,
            },
        )
    except jwt.PyJWTError:
        raise AuthError("bad_token", "the guest resume token is not valid") from None
    _check_times(claims, time.time(), 0.0, "guest resume")
    sub, name = claims.get("sub"), claims.get("name")
    if (
        claims.get("kind") != "guest"
        or not isinstance(sub, str)
        or not sub.startswith(GUEST_PREFIX)
    ):
        raise AuthError("bad_token", "the guest resume token is not valid")
    try:
        return Identity(sub, clean_name(name), frozenset(), guest=True)
    except ValueError:
        raise AuthError("bad_token", "the guest resume token is not valid") from None


_HMAC: Final = frozenset({"HS256"})
_KEY_TYPES: Final[dict[str, tuple[type, ...]]] = {
    "EdDSA": (ed25519.Ed25519PublicKey, ed448.Ed448PublicKey),
    "RS256": (rsa.RSAPublicKey,),
}
_MIN_RSA_BITS: Final = 2048


def _load_public_key(pem: str | bytes, algorithm: str) -> Any:
    data = pem.encode("utf-8") if isinstance(pem, str) else pem
    if b"PRIVATE KEY" in data:
        raise ConfigError("the JWT key must be a public key; keep the private key elsewhere")
    try:
        key = serialization.load_pem_public_key(data)
    except (ValueError, TypeError) as exc:
        raise ConfigError(f"the JWT public key is not a PEM public key: {exc}") from None
    if not isinstance(key, _KEY_TYPES[algorithm]):
        raise ConfigError(f"the JWT public key is not a key for {algorithm}")
    if isinstance(key, rsa.RSAPublicKey) and key.key_size < _MIN_RSA_BITS:
        raise ConfigError(f"the RSA key has {key.key_size} bits; at least {_MIN_RSA_BITS}")
    return key


class Authenticator:
    """Turns a token into an :class:`Identity`, by one algorithm and one key.

    Give ``secret`` for HS256, or ``public_key`` (PEM text) for EdDSA and RS256; give
    neither for a guest-only server, which refuses every token. Invalid settings raise
    :class:`~server.process.config.ConfigError`.
    """

    def __init__(
        self,
        *,
        secret: str | bytes | None = None,
        public_key: str | bytes | None = None,
        algorithm: str = "HS256",
        issuer: str | None = None,
        audience: str | None = None,
        require_exp: bool = True,
        leeway: float = DEFAULT_LEEWAY,
        operators: Iterable[str] = (),
        guests: bool = True,
    ) -> None:
        if algorithm not in JWT_ALGORITHMS:
            raise ConfigError(f"jwt_algorithm must be one of {', '.join(JWT_ALGORITHMS)}")
        if secret is not None and public_key is not None:
            raise ConfigError("give a secret or a public key, not both")
        self._key: Any = None
        if secret is not None:
            if algorithm not in _HMAC:
                raise ConfigError(f"a shared secret is for HS256, not {algorithm}")
            raw = secret.encode("utf-8") if isinstance(secret, str) else secret
            if len(raw) < MIN_SECRET_BYTES:
                raise ConfigError(f"jwt_secret must be at least {MIN_SECRET_BYTES} bytes long")
            self._key = raw
        elif public_key is not None:
            if algorithm in _HMAC:
                raise ConfigError("a public key is for EdDSA or RS256, not HS256")
            self._key = _load_public_key(public_key, algorithm)
        self.algorithm = algorithm
        self.issuer = issuer
        self.audience = audience
        self.require_exp = require_exp
        self.leeway = leeway
        self.operators = frozenset(operators)
        self.guests = guests
        #: Signs guests' resume tokens: the server sets a key every process shares.
        self.guest_key = secrets.token_bytes(32)

    def __repr__(self) -> str:
        return f"Authenticator(algorithm={self.algorithm!r}, tokens={self.accepts_tokens})"

    @classmethod
    def from_config(cls, config: ServerConfig) -> Authenticator:
        """The authenticator ``config`` describes (reads the public key file)."""
        public_key = None
        if config.jwt_public_key_file is not None:
            try:
                public_key = Path(config.jwt_public_key_file).read_bytes()
            except OSError as exc:
                raise ConfigError(
                    f"cannot read jwt_public_key_file {config.jwt_public_key_file}: {exc.strerror}"
                ) from None
        return cls(
            secret=config.jwt_secret,
            public_key=public_key,
            algorithm=config.jwt_algorithm,
            issuer=config.jwt_issuer,
            audience=config.jwt_audience,
            operators=config.operator_players,
            guests=config.guest,
        )

    @property
    def accepts_tokens(self) -> bool:
        return self._key is not None

    def identify(
        self,
        token: str | None = None,
        name: str | None = None,
        *,
        guest: bool = True,
        resume: str | None = None,
    ) -> Identity:
        """The one entry point for a ``hello``: the player ``token`` names; or, asked for
        ``guest`` play where guests may play, the guest a ``resume`` token (signed with
        :attr:`guest_key`) brings back, or a new guest named ``name``. Raises
        :class:`AuthError`."""
        if token:
            return self.authenticate(token)
        if not guest:
            raise AuthError("auth_required", "present a token, or ask for guest play")
        if not self.guests:
            raise AuthError("auth_required", "guest play is off on this server; present a token")
        if resume:
            return guest_from_resume(self.guest_key, resume)
        return guest_identity(name)

    def resume_token(self, identity: Identity) -> str:
        """The token that brings ``identity`` (a guest) back after a dropped connection."""
        return guest_resume_token(self.guest_key, identity)

    def authenticate(self, token: str) -> Identity:
        """Verify ``token`` and return who it names. Raises :class:`AuthError`."""
        if not token:
            raise AuthError("auth_required", "a player token is required")
        if self._key is None:
            raise AuthError("bad_token", "this server does not accept player tokens")
        if not isinstance(token, str) or len(token) > MAX_TOKEN_LEN:
            raise AuthError("bad_token", "not a player token")
        claims = self._decode(token)
        return self._identity(claims)

    def _decode(self, token: str) -> dict[str, Any]:
        required = ["exp", "sub"] if self.require_exp else ["sub"]
        try:
            claims: dict[str, Any] = jwt.decode(
                token,
                self._key,
                algorithms=[self.algorithm],
                issuer=self.issuer,
                audience=self.audience,
                # The time claims are checked here, after their type: PyJWT takes
                # int("9999999999") and int(1e300) for a time.
                options={
                    "require": required,
                    "verify_sub": False,
                    "verify_exp": False,
                    "verify_nbf": False,
                    "verify_iat": False,
                },
            )
        except jwt.PyJWTError as exc:
            raise AuthError("bad_token", _describe(exc)) from None
        except Exception:  # anything else from the parsing library: still just a bad token
            raise AuthError("bad_token", "not a player token") from None
        _check_times(claims, time.time(), self.leeway, "player")
        return claims

    def _identity(self, claims: Mapping[str, Any]) -> Identity:
        player_id = claims.get("sub")
        if player_id in RESERVED_PLAYERS:
            raise AuthError("bad_token", f"the player id {player_id!r} is reserved")
        if not is_valid_player_id(player_id):
            raise AuthError("bad_token", "the token's sub is not a valid player id")
        if player_id.startswith(GUEST_PREFIX):
            raise AuthError("bad_token", "guest- player ids are for guests only")
        raw_name = claims.get("name", player_id[:MAX_NAME_LEN])
        try:
            name = clean_name(raw_name)
        except ValueError as exc:
            raise AuthError("bad_token", f"the token's name: {exc}") from None
        roles = claims.get("roles", [])
        if not isinstance(roles, list) or not all(
            isinstance(role, str) and _ROLE.fullmatch(role) for role in roles
        ):
            raise AuthError("bad_token", "the token's roles are not a list of role names")
        granted = set(roles)
        if player_id in self.operators:
            granted.add(OPERATOR)
        language = claims.get("language")
        if language is not None and not is_language_tag(language):
            raise AuthError("bad_token", "the token's language is not a language tag")
        extra: dict[str, Any] = {}
        for claim, valid, what in _OPERATOR_CLAIMS:
            value = claims.get(claim)
            if value is not None and not valid(value):
                raise AuthError("bad_token", f"the token's {claim} is not {what}")
            extra[claim] = value
        for claim in ("sid", "jti"):  # the operator's session: sid, else jti
            value = claims.get(claim)
            if value is not None and not is_session_id(value):
                raise AuthError("bad_token", f"the token's {claim} is not a session id")
        extra["session"] = claims.get("sid", claims.get("jti"))
        return Identity(
            player_id, name, frozenset(granted), guest=False, language=language, **extra
        )


#: The operator's claims about the player's play, each with its check and what it is.
_OPERATOR_CLAIMS: Final[tuple[tuple[str, Callable[[object], bool], str], ...]] = (
    ("currency", is_currency_code, "an ISO 4217 currency code"),
    ("jurisdiction", is_jurisdiction, "an ISO 3166 region"),
    ("brand", is_brand, "a brand name (1-64 of A-Z a-z 0-9 _ . : -)"),
    ("return_url", is_return_url, "an http(s) URL"),
    ("reality_check", is_reality_minutes, "minutes from 1 to 1440"),
)


def _check_times(claims: Mapping[str, Any], now: float, leeway: float, whose: str) -> None:
    """``exp``, ``nbf`` and ``iat`` (RFC 7519 §4.1.4-6) when present: whole seconds
    from 0 to :data:`MAX_TIME_CLAIM` (not a bool, a float or a string), then the times
    themselves, with ``leeway`` seconds of clock difference."""
    for claim in ("exp", "nbf", "iat"):
        value = claims.get(claim)
        if claim in claims and (
            isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < MAX_TIME_CLAIM
        ):
            raise AuthError("bad_token", f"the {whose} token's {claim} is not a whole number")
    exp = claims.get("exp")
    if exp is not None and exp <= now - leeway:
        raise AuthError("token_expired", f"the {whose} token has expired")
    for claim in ("nbf", "iat"):
        value = claims.get(claim)
        if value is not None and value > now + leeway:
            raise AuthError("bad_token", f"the {whose} token is not valid yet")


def _describe(exc: jwt.PyJWTError) -> str:
    """Our own words for PyJWT's errors, so no library text (or token) reaches a client."""
    if isinstance(exc, jwt.MissingRequiredClaimError):
        return f"the player token lacks the {exc.claim} claim"
    if isinstance(exc, jwt.ImmatureSignatureError):
        return "the player token is not valid yet"
    if isinstance(exc, jwt.InvalidAudienceError):
        return "the player token is for another audience"
    if isinstance(exc, jwt.InvalidIssuerError):
        return "the player token is from another issuer"
    if isinstance(exc, jwt.InvalidAlgorithmError):
        return "the player token's algorithm is not accepted here"
    if isinstance(exc, jwt.InvalidSignatureError):
        return "the player token's signature does not verify"
    if isinstance(exc, jwt.DecodeError):
        return "not a player token"
    return "the player token is invalid"


def make_token(
    secret_or_private_key: Any,
    player_id: str,
    name: str | None = None,
    roles: Iterable[str] = (),
    ttl: float = 3600,
    alg: str = "HS256",
    now: float | None = None,
    *,
    issuer: str | None = None,
    audience: str | None = None,
    language: str | None = None,
    currency: str | None = None,
    jurisdiction: str | None = None,
    brand: str | None = None,
    return_url: str | None = None,
    reality_check: float | None = None,
    sid: str | None = None,
    jti: str | None = None,
) -> str:
    """A player token, for operators' tools and tests (``sid``, ``jti``: the player's
    session at the operator).

    ``secret_or_private_key`` is the HS256 secret, or a private key (PEM text or bytes,
    or a ``cryptography`` key object) for EdDSA and RS256. ``now`` defaults to the
    clock (seconds since the epoch); the token expires ``ttl`` seconds later.
    """
    if not is_valid_player_id(player_id):
        raise ValueError("invalid player id")
    issued = time.time() if now is None else now
    claims: dict[str, Any] = {"sub": player_id, "iat": int(issued), "exp": int(issued + ttl)}
    if name is not None:
        claims["name"] = clean_name(name)
    role_list = sorted(set(roles))
    if role_list:
        claims["roles"] = role_list
    if issuer is not None:
        claims["iss"] = issuer
    if audience is not None:
        claims["aud"] = audience
    if language is not None:
        if not is_language_tag(language):
            raise ValueError("invalid language tag")
        claims["language"] = language
    for claim, value, (_, valid, _what) in zip(
        ("currency", "jurisdiction", "brand", "return_url", "reality_check"),
        (currency, jurisdiction, brand, return_url, reality_check),
        _OPERATOR_CLAIMS,
        strict=True,
    ):
        if value is not None:
            if not valid(value):
                raise ValueError(f"invalid {claim}")
            claims[claim] = value
    for claim, value in (("sid", sid), ("jti", jti)):
        if value is not None:
            if not is_session_id(value):
                raise ValueError(f"invalid {claim}")
            claims[claim] = value
    key = secret_or_private_key
    if isinstance(key, str) and alg not in _HMAC:
        key = key.encode("utf-8")
    if isinstance(key, bytes) and alg not in _HMAC:
        key = serialization.load_pem_private_key(key, password=None)
    return jwt.encode(claims, key, algorithm=alg)
