"""The server's settings table: every setting's name, kind, help and check, in ``--help``
order (:data:`SETTINGS`), and the choices and defaults they name.

``server.process.config`` reads the four sources (flags, ``CHEMMY_*``, TOML, defaults)
through this table and builds the :class:`~server.process.config.ServerConfig`. This
module only describes; it must never read a source, nor echo a secret.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final

from server.connect.redis import SENTINEL_SCHEME, parse_sentinel_url
from server.wallet.signing import KEY_ID, parse_key_list

ENV_PREFIX: Final = "CHEMMY_"
JWT_ALGORITHMS: Final = ("HS256", "EdDSA", "RS256")
LOG_FORMATS: Final = ("auto", "json", "text")
#: Where players' money lives (docs/wallet.md): Chemmy's own play money, the operator
#: moving money in and out, or the operator's wallet called for every coup.
WALLET_MODES: Final = ("internal", "transfer", "seamless")
#: How Chemmy signs its calls to a seamless wallet (docs/wallet.md §1).
WALLET_SIGNATURES: Final = ("hmac", "ed25519", "rsa")
LOG_LEVELS: Final = ("debug", "info", "warning", "error", "critical")
#: The event loops a process may run on (``--event-loop``).
EVENT_LOOPS: Final = ("uvloop", "asyncio")
#: How a cluster places its tables (docs/operations.md §2): spread by a hash of their
#: ids, or where their watchers are connected.
PLACEMENTS: Final = ("hash", "players")
#: HMAC keys shorter than the hash are weak (RFC 7518 §3.2).
MIN_SECRET_BYTES: Final = 32

DEFAULT_TABLES: Final[tuple[dict[str, Any], ...]] = (
    {"id": "t1", "name": "Salon 1-100", "tier": "1-100"},
    {"id": "t2", "name": "Salon 10-1000", "tier": "10-1000"},
    {"id": "t3", "name": "Salon Privé 100-10000", "tier": "100-10000"},
)


#: A player's and an address's rate limits, in connections' rates, unless set.
PLAYER_RATE_FACTOR: Final = 2
ADDRESS_RATE_FACTOR: Final = 10


# -- the settings table: kind, help and checks, in --help order --------------------------

_Check = Callable[[Any], str | None]


@dataclass(frozen=True)
class Setting:
    name: str
    kind: str  # "str", "opt_str", "int", "opt_int", "float", "opt_float", "bool", "list"
    help: str
    check: _Check | None = None
    metavar: str | None = None
    secret: bool = False
    #: What --help shows as the default when it is not a plain value.
    default_text: str | None = None

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    @property
    def env(self) -> str:
        return ENV_PREFIX + self.name.upper()


def _at_least(low: float) -> _Check:
    return lambda value: None if value >= low else f"must be at least {low}"


def _between(low: float, high: float) -> _Check:
    return lambda value: None if low <= value <= high else f"must be from {low} to {high}"


def _one_of(choices: Sequence[str]) -> _Check:
    return lambda value: None if value in choices else f"must be one of {', '.join(choices)}"


def _not_empty(value: Any) -> str | None:
    return None if value else "must not be empty"


_ORIGIN = re.compile(r"^https?://[^\s/?#]+$")


def _check_origins(values: tuple[str, ...]) -> str | None:
    for origin in values:
        if origin != "null" and not _ORIGIN.match(origin):
            return f"{origin!r} is not an origin like https://example.com (no path, no slash)"
    return None


def _check_networks(values: tuple[str, ...]) -> str | None:
    import ipaddress

    for network in values:
        try:
            ipaddress.ip_network(network, strict=False)
        except ValueError:
            return f"{network!r} is not an IP address or network (10.0.0.5, 10.0.0.0/8, fd00::/8)"
    return None


def _check_store(value: str) -> str | None:
    if value.startswith(SENTINEL_SCHEME):
        try:
            parse_sentinel_url(value)
        except ValueError as exc:
            return str(exc)
    return None


def _check_players(values: tuple[str, ...]) -> str | None:
    from server.process.auth import is_valid_player_id

    for player in values:
        if not is_valid_player_id(player):
            return f"{player!r} is not a player id (1-64 of A-Z a-z 0-9 _ . : @ -)"
    return None


_WALLET_URL = re.compile(r"^https?://[^\s/?#]+(/[^\s?#]*)?$")


def _check_wallet_url(value: str) -> str | None:
    """An http(s) URL with no query or fragment: the call's path is appended to it, and
    the signature covers that path (docs/wallet.md §3)."""
    if _WALLET_URL.match(value):
        return None
    return f"{value!r} is not an http(s) URL without a query, like https://wallet.example/chemmy"


def _key_id(value: str) -> str | None:
    return None if KEY_ID.fullmatch(value) else "must be 1-64 of A-Z a-z 0-9 . _ : -"


def _check_key_list(values: tuple[str, ...]) -> str | None:
    try:
        parse_key_list(values)
    except ValueError as exc:
        return str(exc)
    return None


SETTINGS: Final = (
    Setting("host", "str", "address to listen on", _not_empty),
    Setting("port", "int", "TCP port to listen on (0: any free port)", _between(0, 65535)),
    Setting("db", "str", "the SQLite file (or sqlite:///PATH, or memory:)", _not_empty),
    Setting(
        "store",
        "opt_str",
        "where everything is kept, instead of --db: redis://HOST:PORT/DB makes this process "
        "one of a cluster sharing the tables through that Redis; "
        "redis+sentinel://HOST:PORT[,HOST:PORT...]/SERVICE/DB through the primary that "
        "those sentinels name (following a failover)",
        _check_store,
        metavar="URL",
    ),
    Setting(
        "redis_min_replicas",
        "int",
        "a commit to Redis is answered only once this many replicas have it (WAIT; "
        "0: once the primary has it)",
        _between(0, 16),
    ),
    Setting(
        "lease",
        "float",
        "seconds a table's owner holds it without renewing (cluster): a lost process's "
        "tables move after this",
        _between(0.5, 60),
    ),
    Setting(
        "placement",
        "str",
        "where a cluster runs each table: hash (spread by its id) or players (on the "
        "process most of its watchers are connected to, for a load balancer that routes "
        "by ?table=)",
        _one_of(PLACEMENTS),
    ),
    Setting("guest", "bool", "let players without a token play as guests"),
    Setting(
        "jwt_secret",
        "opt_str",
        f"HS256 shared secret for player tokens (at least {MIN_SECRET_BYTES} bytes; "
        "prefer the environment variable to the flag, which other users can see)",
        metavar="SECRET",
        secret=True,
    ),
    Setting(
        "jwt_public_key_file",
        "opt_str",
        "PEM public key file for EdDSA or RS256 player tokens",
        metavar="PATH",
    ),
    Setting(
        "jwt_algorithm",
        "str",
        f"token signature algorithm: {', '.join(JWT_ALGORITHMS)}",
        _one_of(JWT_ALGORITHMS),
    ),
    Setting("jwt_issuer", "opt_str", "required token issuer (iss claim)"),
    Setting("jwt_audience", "opt_str", "required token audience (aud claim)"),
    Setting(
        "operator_players",
        "list",
        "player ids given the operator role (may open and close tables), comma-separated",
        _check_players,
        metavar="IDS",
    ),
    Setting(
        "origins",
        "list",
        "allowed browser origins, comma-separated (empty: allow all; the server's own, "
        "the request's Host, is always allowed); 'null' admits the "
        "Origin: null that file:// pages and sandboxed frames send (any sandboxed page "
        "can send it, so avoid it in production); clients sending no Origin header (the "
        "CLI, bots) are not browsers and are always admitted",
        _check_origins,
        metavar="ORIGINS",
    ),
    Setting("max_frame", "int", "largest frame a client may send, bytes", _between(256, 1 << 24)),
    Setting("rate_limit", "float", "commands per second per connection", _at_least(0.1)),
    Setting("rate_burst", "int", "commands a connection may send at once", _at_least(1)),
    Setting(
        "max_connections_per_player",
        "int",
        "connections one player may have open (a hello beyond is too_many_connections; 0: no cap)",
        _at_least(0),
    ),
    Setting(
        "max_connections_per_address",
        "int",
        "connections one client address may have open (more are closed with 1008; 0: no cap)",
        _at_least(0),
    ),
    Setting(
        "player_rate_limit",
        "opt_float",
        "messages per second of one player, all connections together (0: no limit)",
        _at_least(0),
        default_text=f"{PLAYER_RATE_FACTOR} x rate-limit",
    ),
    Setting(
        "player_rate_burst",
        "opt_int",
        "messages one player may send at once",
        _at_least(1),
        default_text=f"{PLAYER_RATE_FACTOR} x rate-burst",
    ),
    Setting(
        "address_rate_limit",
        "opt_float",
        "messages per second from one client address, all connections together (0: no limit)",
        _at_least(0),
        default_text=f"{ADDRESS_RATE_FACTOR} x rate-limit",
    ),
    Setting(
        "address_rate_burst",
        "opt_int",
        "messages one client address may send at once",
        _at_least(1),
        default_text=f"{ADDRESS_RATE_FACTOR} x rate-burst",
    ),
    Setting(
        "hello_rate_limit",
        "float",
        "hellos per second from one client address (each may make a guest; 0: no limit)",
        _at_least(0),
    ),
    Setting("hello_rate_burst", "int", "hellos one client address may send at once", _at_least(1)),
    Setting(
        "trusted_proxies",
        "list",
        "addresses or networks of proxies whose X-Forwarded-For names the client, "
        "comma-separated (empty: the client is the TCP peer; trust only your own proxies)",
        _check_networks,
        metavar="NETWORKS",
    ),
    Setting("chat_max_len", "int", "longest chat message, characters", _between(1, 2000)),
    Setting("chat_rate", "int", "chat messages per 10 s per connection (0: no chat)", _at_least(0)),
    Setting("max_deposit", "int", "largest play-money deposit, minor units", _at_least(0)),
    Setting(
        "deposits_per_day",
        "int",
        "play-money deposits a player may make a day, after the burst (0: no limit)",
        _at_least(0),
    ),
    Setting("deposit_burst", "int", "play-money deposits a player may make at once", _at_least(1)),
    Setting(
        "guest_balance",
        "int",
        "a new player's starting play money, minor units (wallet internal only: 0 otherwise)",
        _at_least(0),
    ),
    Setting("queue_size", "int", "per-table command queue length", _at_least(1)),
    Setting(
        "send_buffer_total",
        "int",
        "bytes waiting to be sent to all clients together before the largest are cut off",
        _at_least(2**20),
    ),
    Setting(
        "send_buffer_per_address",
        "int",
        "bytes waiting to be sent to one address's clients before its largest are cut off",
        _at_least(2**16),
    ),
    Setting("grace", "float", "seconds a disconnected player keeps a seat", _at_least(0)),
    Setting("drain_timeout", "float", "seconds to finish coups on shutdown", _at_least(0)),
    Setting(
        "guest_idle",
        "float",
        "seconds after which a guest who never played (only their welcome money) is forgotten",
        _at_least(60),
    ),
    Setting(
        "command_timeout",
        "float",
        "seconds a table command waits for its table's answer before the client is told "
        "'timeout' (a cluster's table moving to another process)",
        _between(1, 600),
    ),
    Setting("log_format", "str", f"log format: {', '.join(LOG_FORMATS)}", _one_of(LOG_FORMATS)),
    Setting("log_level", "str", f"log level: {', '.join(LOG_LEVELS)}", _one_of(LOG_LEVELS)),
    Setting(
        "event_loop",
        "str",
        f"the event loop: {', '.join(EVENT_LOOPS)} (uvloop: libuv's, in C; asyncio: Python's own)",
        _one_of(EVENT_LOOPS),
    ),
    Setting("compression", "bool", "permessage-deflate compression of frames"),
    Setting(
        "wallet",
        "str",
        f"where players' money lives: {', '.join(WALLET_MODES)} (docs/wallet.md)",
        _one_of(WALLET_MODES),
    ),
    Setting(
        "wallet_url",
        "opt_str",
        "the operator's seamless wallet API, e.g. https://wallet.example/chemmy (seamless)",
        _check_wallet_url,
        metavar="URL",
    ),
    Setting(
        "wallet_secret",
        "opt_str",
        "the key that signs Chemmy's calls to the operator's wallet (seamless)",
        secret=True,
    ),
    Setting(
        "wallet_timeout",
        "float",
        "seconds the operator's wallet has to answer a coup's debits before the cards",
        _between(0.1, 60),
    ),
    Setting(
        "wallet_call_timeout",
        "float",
        "seconds each credit, rollback or balance call to the operator's wallet may take,"
        " connect to last byte (an unanswered credit or rollback is tried again later)",
        _between(0.1, 300),
    ),
    Setting(
        "wallet_signature",
        "str",
        f"how Chemmy signs its calls to the operator's wallet: {', '.join(WALLET_SIGNATURES)}"
        " (hmac: with wallet_secret; ed25519, rsa: with wallet_signing_key_file, which the"
        " wallet checks with the public half; docs/wallet.md §1)",
        _one_of(WALLET_SIGNATURES),
    ),
    Setting(
        "wallet_signing_key_file",
        "opt_str",
        "the PEM private key (Ed25519, or RSA of 2048 bits or more) that signs Chemmy's"
        " calls to the operator's wallet (wallet_signature ed25519 or rsa)",
        metavar="PATH",
    ),
    Setting(
        "wallet_key_id",
        "opt_str",
        "the id the operator's wallet knows that key by (kid=, 1-64 of A-Z a-z 0-9 . _ : -)",
        _key_id,
        metavar="KID",
    ),
    Setting(
        "wallet_game",
        "str",
        "the game code every call to the operator's wallet carries (game)",
        _key_id,
        metavar="CODE",
    ),
    Setting(
        "reality_check",
        "float",
        "minutes of play between reminders of the session's length and net result, which"
        " hold bets until answered (0: none; a token's reality_check claim overrides it)",
        _between(0, 1440),
        metavar="MINUTES",
    ),
    Setting(
        "session_gap",
        "float",
        "minutes without a connection of a player's that end their play session (its"
        " length, the session limit and the reality checks go on through shorter gaps)",
        _between(0.01, 1440),
        metavar="MINUTES",
    ),
    Setting(
        "operator_key",
        "opt_str",
        "the key that signs the operator's calls to /operator/v1/ (HMAC-SHA256)",
        secret=True,
    ),
    Setting(
        "operator_public_keys",
        "list",
        "the operator's public keys, KID=PATH of a PEM file each (Ed25519, or RSA of 2048"
        " bits or more): its calls to /operator/v1/ signed with a private half are taken"
        " (list two while the operator switches keys; docs/wallet.md §1)",
        _check_key_list,
        metavar="KID=PATH,...",
    ),
)
BY_NAME: Final = {setting.name: setting for setting in SETTINGS}
TABLE_ID = re.compile(r"^[A-Za-z0-9_-]{1,32}$")
