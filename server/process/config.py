"""The server's settings: one frozen :class:`ServerConfig`, and where each value comes from.

Every setting can be given four ways; the first found wins:

1. a command-line flag (``--max-frame 131072``; booleans as ``--guest`` / ``--no-guest``);
2. an environment variable ``CHEMMY_<NAME>`` (``CHEMMY_MAX_FRAME=131072``; booleans as
   ``1/0``, ``true/false``, ``yes/no``, ``on/off``; lists comma-separated);
3. the TOML file named by ``--config PATH`` or ``CHEMMY_CONFIG`` (top-level keys named
   as the settings, ``max_frame = 131072``; lists as arrays; the lobby as ``[[tables]]``);
4. the defaults below, which run a local server where anyone may play as a guest.

What each setting is (its kind, help and check, in ``--help`` order) is the table in
:mod:`server.process.settings`; this module reads the sources through it.

The lobby (``tables``) comes only from the TOML file; each ``[[tables]]`` entry is kept as
a dict (``id`` is required and unique; ``name``, ``decks``, ``commission``, ``pairs``,
``super6``, ``dragon``, ``seats``, ``tier = "10-1000"`` or ``min``/``max``/``tie_max``/
``side_max``, ``stop_offset``, timer overrides, ``holder_must_bet_banker``), checked here
by :meth:`server.vocabulary.options.TableOptions.from_dict`, the same check ``create_table``
and a restore use. Without any, the lobby is
:data:`~server.process.settings.DEFAULT_TABLES`.

Anything invalid raises :class:`ConfigError` with a message naming the setting and where
it came from; the main program prints it and exits with status 2. ``--help`` prints the
flags and exits (``SystemExit(0)``, argparse's way).

This module must never echo a secret: ``jwt_secret`` is left out of ``repr`` and of
every error message. It only reads: it never opens sockets or the database.
"""

from __future__ import annotations

import argparse
import sys
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn, TypeVar

from server.connect.redis import REDIS_SCHEMES
from server.process.settings import (
    ADDRESS_RATE_FACTOR,
    BY_NAME,
    DEFAULT_TABLES,
    ENV_PREFIX,
    MIN_SECRET_BYTES,
    PLAYER_RATE_FACTOR,
    SETTINGS,
    TABLE_ID,
    Setting,
)
from server.vocabulary.options import OptionsError, TableOptions
from server.wallet import signing
from server.wallet.signing import PrivateKey, PublicKey, algorithm_of, parse_key_list

__all__ = [
    "ConfigError",
    "ServerConfig",
    "build_parser",
    "load_config",
    "operator_public_keys",
    "setting_names",
    "wallet_signing_key",
]


_T = TypeVar("_T")


def _or(value: _T | None, default: _T) -> _T:
    return default if value is None else value


class ConfigError(Exception):
    """A setting is invalid; the message says which, where from, and why."""


@dataclass(frozen=True)
class ServerConfig:
    """Every setting of ``chemmy-server``. Amounts are integer minor units."""

    host: str = "127.0.0.1"
    port: int = 8765
    db: str = "chemmy.sqlite3"
    store: str | None = None
    lease: float = 3.0
    placement: str = "hash"
    redis_min_replicas: int = 0
    guest: bool = True
    jwt_secret: str | None = field(default=None, repr=False)
    jwt_public_key_file: str | None = None
    jwt_algorithm: str = "HS256"
    jwt_issuer: str | None = None
    jwt_audience: str | None = None
    operator_players: tuple[str, ...] = ()
    origins: tuple[str, ...] = ()
    max_frame: int = 65536
    rate_limit: float = 20.0
    rate_burst: int = 40
    max_connections_per_player: int = 10
    max_connections_per_address: int = 100
    #: None: derived from the connection's rate (see :meth:`shared_rates`).
    player_rate_limit: float | None = None
    player_rate_burst: int | None = None
    address_rate_limit: float | None = None
    address_rate_burst: int | None = None
    hello_rate_limit: float = 10.0
    hello_rate_burst: int = 100
    trusted_proxies: tuple[str, ...] = ()
    chat_max_len: int = 200
    chat_rate: int = 5
    max_deposit: int = 1_000_000
    deposits_per_day: int = 50
    deposit_burst: int = 10
    guest_balance: int = 100_000
    queue_size: int = 256
    send_buffer_total: int = 64 * 2**20
    send_buffer_per_address: int = 16 * 2**20
    grace: float = 60.0
    drain_timeout: float = 30.0
    command_timeout: float = 10.0
    guest_idle: float = 86_400.0
    log_format: str = "auto"
    log_level: str = "info"
    #: The event loop the process runs on: uvloop (libuv, in C: measured to cost less
    #: per delivery and per stored step, docs/benchmarks.md) or asyncio's own.
    event_loop: str = "uvloop"
    compression: bool = False
    wallet: str = "internal"
    wallet_url: str | None = None
    wallet_secret: str | None = field(default=None, repr=False)
    wallet_timeout: float = 3.0
    wallet_call_timeout: float = 10.0
    #: How Chemmy signs its calls to the operator's wallet: ``hmac`` with
    #: ``wallet_secret``, or ``ed25519``/``rsa`` with ``wallet_signing_key_file``.
    wallet_signature: str = "hmac"
    wallet_signing_key_file: str | None = None
    wallet_key_id: str | None = None
    #: The game code every wallet call carries (the operator's name for Chemmy's game).
    wallet_game: str = "chemmy"
    #: Minutes of play between reality checks (0: none; a token's claim overrides it).
    reality_check: float = 0.0
    #: Minutes without a connection of the player's that end their play session.
    session_gap: float = 15.0
    operator_key: str | None = field(default=None, repr=False)
    #: The operator's public keys (``<key id>=<PEM file>``): its calls to
    #: ``/operator/v1/`` signed with the private halves are taken (two during a switch).
    operator_public_keys: tuple[str, ...] = ()
    tables: tuple[dict[str, Any], ...] = field(
        default_factory=lambda: tuple(dict(table) for table in DEFAULT_TABLES)
    )
    #: The TOML file the settings were read from, if any (not itself a setting).
    config_file: str | None = None

    def shared_rates(self) -> tuple[tuple[float, int], tuple[float, int]]:
        """((rate, burst) of a player, (rate, burst) of an address): as set, or by
        default :data:`PLAYER_RATE_FACTOR` and :data:`ADDRESS_RATE_FACTOR` times a
        connection's ``rate_limit`` and ``rate_burst`` (40/s and 80, 200/s and 400 with
        the defaults), so raising a connection's rate raises them with it."""
        return (
            (
                _or(self.player_rate_limit, PLAYER_RATE_FACTOR * self.rate_limit),
                _or(self.player_rate_burst, PLAYER_RATE_FACTOR * self.rate_burst),
            ),
            (
                _or(self.address_rate_limit, ADDRESS_RATE_FACTOR * self.rate_limit),
                _or(self.address_rate_burst, ADDRESS_RATE_FACTOR * self.rate_burst),
            ),
        )

    @property
    def welcome_balance(self) -> int:
        """The money a new player (a guest, or a token's player) starts with:
        ``guest_balance`` of play money with Chemmy's own (``wallet`` internal), none
        where the money is the operator's (transfer, seamless): none is made up there."""
        return self.guest_balance if self.wallet == "internal" else 0

    @property
    def store_url(self) -> str:
        """Where everything is kept: ``store`` if given, else the SQLite file ``db``."""
        return self.store or self.db

    @property
    def clustered(self) -> bool:
        """Whether this process shares its tables with others (a Redis store)."""
        return self.store_url.startswith(REDIS_SCHEMES)

    @property
    def auth_enabled(self) -> bool:
        """Whether tokens are accepted (a JWT key is configured)."""
        return self.jwt_secret is not None or self.jwt_public_key_file is not None


# -- the command line -------------------------------------------------------------------


class _Parser(argparse.ArgumentParser):
    """argparse, raising :class:`ConfigError` instead of exiting on a bad flag."""

    def error(self, message: str) -> NoReturn:
        raise ConfigError(f"{message} (see --help)")


def _shown(value: Any) -> str:
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, tuple):
        return ",".join(value) or "none"
    return "none" if value is None else str(value)


def build_parser(prog: str = "chemmy-server") -> argparse.ArgumentParser:
    """The command-line parser; its help names each flag's default and variable."""
    defaults = ServerConfig()
    parser = _Parser(
        prog=prog,
        description="Chemmy: a real-time shared-table baccarat server.",
        epilog=(
            "Precedence: flags, then CHEMMY_* environment variables, then the TOML file, "
            "then defaults. The lobby (tables) is set only in the TOML file, as "
            "[[tables]] entries (id, name, decks, commission, pairs, super6, dragon, "
            "seats, tier or min/max/tie_max/side_max (or a limits table of them), "
            "stop_offset, timers (betting, squeeze, third_card, shoe_offer, cut, grace, reveal), "
            "holder_must_bet_banker, bettors (how many may bet without a seat; "
            "0: only seated players bet), currency (an ISO 4217 code such as EUR; "
            "absent: play money)); "
            "without any: t1 tier 1-100, t2 tier 10-1000, t3 tier 100-10000."
        ),
        argument_default=argparse.SUPPRESS,
    )
    parser.add_argument(
        "--config",
        metavar="PATH",
        help=f"TOML settings file (env {ENV_PREFIX}CONFIG)",
    )
    for setting in SETTINGS:
        default = "hidden" if setting.secret else _shown(getattr(defaults, setting.name))
        default = setting.default_text or default
        text = f"{setting.help} (default: {default}; env {setting.env})"
        text = text.replace("%", "%%")
        if setting.kind == "bool":
            parser.add_argument(setting.flag, action=argparse.BooleanOptionalAction, help=text)
        else:
            parser.add_argument(setting.flag, metavar=setting.metavar, help=text)
    return parser


# -- conversion -------------------------------------------------------------------------

_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off"})


def _from_text(setting: Setting, text: str) -> Any:
    """A value given as text (a flag or an environment variable)."""
    kind = setting.kind.removeprefix("opt_") if setting.kind != "opt_str" else "opt_str"
    if kind == "bool":
        lowered = text.strip().lower()
        if lowered in _TRUE:
            return True
        if lowered in _FALSE:
            return False
        raise ValueError("must be true or false (1/0, yes/no, on/off)")
    if kind == "int":
        try:
            return int(text.strip().replace("_", ""))
        except ValueError:
            raise ValueError("must be a whole number") from None
    if kind == "float":
        try:
            number = float(text.strip())
        except ValueError:
            raise ValueError("must be a number") from None
        if number != number or number in (float("inf"), float("-inf")):
            raise ValueError("must be a finite number")
        return number
    if kind == "list":
        return tuple(item.strip() for item in text.split(",") if item.strip())
    if kind == "opt_str":
        return text or None
    return text


def _from_toml(setting: Setting, value: Any) -> Any:
    """A value read from the TOML file, already typed."""
    kind = setting.kind.removeprefix("opt_") if setting.kind != "opt_str" else "opt_str"
    if kind == "bool":
        if not isinstance(value, bool):
            raise ValueError("must be true or false")
        return value
    if kind == "int":
        if not isinstance(value, int) or isinstance(value, bool):
            raise ValueError("must be a whole number")
        return value
    if kind == "float":
        if not isinstance(value, int | float) or isinstance(value, bool):
            raise ValueError("must be a number")
        return _from_text(setting, str(value))
    if kind == "list":
        if isinstance(value, str):
            return _from_text(setting, value)
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            raise ValueError("must be a list of strings")
        return tuple(item.strip() for item in value if item.strip())
    if not isinstance(value, str):
        raise ValueError("must be a string")
    return _from_text(setting, value)


def _tables(value: Any, where: str) -> tuple[dict[str, Any], ...]:
    if not isinstance(value, list) or not value:
        raise ConfigError(f"{where}: tables: must be one or more [[tables]] entries")
    seen: set[str] = set()
    tables: list[dict[str, Any]] = []
    for number, table in enumerate(value, 1):
        label = f"{where}: tables entry {number}"
        if not isinstance(table, dict):
            raise ConfigError(f"{label}: must be a table of settings")
        table_id = table.get("id")
        if not isinstance(table_id, str) or not TABLE_ID.match(table_id):
            raise ConfigError(f"{label}: id must be 1-32 of A-Z a-z 0-9 _ -")
        if table_id in seen:
            raise ConfigError(f"{label}: id {table_id!r} is used twice")
        seen.add(table_id)
        try:  # the one check of a table definition: create_table and restore use it too
            TableOptions.from_dict(table)
        except OptionsError as exc:
            raise ConfigError(f"{label} ({table_id}): {exc}") from None
        tables.append(dict(table))
    return tuple(tables)


def _read_toml(path: str) -> dict[str, Any]:
    try:
        with open(path, "rb") as file:
            return tomllib.load(file)
    except OSError as exc:
        raise ConfigError(f"cannot read the config file {path}: {exc.strerror}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None


# -- loading ----------------------------------------------------------------------------


def load_config(
    argv: Sequence[str] | None = None, environ: Mapping[str, str] | None = None
) -> ServerConfig:
    """Read the settings: flags over ``CHEMMY_*`` variables over the TOML file over defaults.

    ``argv`` excludes the program name (``None``: ``sys.argv[1:]``); ``environ`` is
    usually ``os.environ`` (``None``: no variables). Raises :class:`ConfigError`.
    """
    if argv is None:
        argv = sys.argv[1:]
    environ = {} if environ is None else environ
    flags = vars(build_parser().parse_args(list(argv)))

    values: dict[str, Any] = {}
    where: dict[str, str] = {}
    config_file = flags.pop("config", None) or environ.get(ENV_PREFIX + "CONFIG") or None

    if config_file is not None:
        document = _read_toml(config_file)
        for key, value in document.items():
            if key == "tables":
                values["tables"] = _tables(value, config_file)
                continue
            setting = BY_NAME.get(key)
            if setting is None:
                raise ConfigError(f"{config_file}: unknown setting {key!r}")
            values[key] = _convert(setting, value, f"{config_file}: {key}", toml=True)

    for setting in SETTINGS:
        text = environ.get(setting.env)
        if text is not None:
            values[setting.name] = _convert(setting, text, setting.env, toml=False)
            where[setting.name] = setting.env

    for name, value in flags.items():
        setting = BY_NAME[name]
        if setting.kind != "bool":
            value = _convert(setting, value, setting.flag, toml=False)
        values[name] = value
        where[name] = setting.flag

    for name, value in values.items():
        setting = BY_NAME.get(name)
        if setting is not None and setting.check is not None and value is not None:
            problem = setting.check(value)
            if problem:
                source = where.get(name, f"{config_file}: {name}")
                raise ConfigError(f"{source}: {problem}")

    config = ServerConfig(**values, config_file=config_file)
    _check_together(config)
    return config


def _convert(setting: Setting, raw: Any, source: str, *, toml: bool) -> Any:
    try:
        value = _from_toml(setting, raw) if toml else _from_text(setting, raw)
    except ValueError as exc:
        shown = "" if setting.secret or toml else f" (got {raw!r})"
        raise ConfigError(f"{source}: {exc}{shown}") from None
    if setting.name == "log_level" and isinstance(value, str):
        value = value.lower()
    return value


#: Why a currency table is refused with Chemmy's own play money (docs/wallet.md): its
#: players would be handed play money in euros, and offered a Deposit of it.
_PLAY_MONEY_ONLY = (
    "table {table!r} is in {currency}, but with the internal wallet all money is Chemmy's "
    "play money: a currency table needs the operator's money (wallet transfer or seamless, "
    "docs/wallet.md)"
)


def check_money(config: ServerConfig) -> None:
    """A table in a currency needs the operator's money (``wallet`` transfer or
    seamless): with the internal wallet its players would play, and deposit, Chemmy's
    play money in euros. Checked when the settings are read (``chemmy-server`` refuses
    to start, saying why); ``create_table`` refuses such a table too."""
    if config.wallet != "internal":
        return
    for table in config.tables:
        if table.get("currency") is not None:
            raise ConfigError(
                _PLAY_MONEY_ONLY.format(table=table.get("id"), currency=table["currency"])
            )


def _check_together(config: ServerConfig) -> None:
    """Checks that involve more than one setting."""
    secret, key_file = config.jwt_secret, config.jwt_public_key_file
    if secret is not None and key_file is not None:
        raise ConfigError("set jwt_secret (HS256) or jwt_public_key_file (EdDSA, RS256), not both")
    if config.jwt_algorithm == "HS256":
        if key_file is not None:
            raise ConfigError("jwt_public_key_file needs jwt_algorithm EdDSA or RS256")
        if secret is not None and len(secret.encode("utf-8")) < MIN_SECRET_BYTES:
            raise ConfigError(f"jwt_secret must be at least {MIN_SECRET_BYTES} bytes long")
    else:
        if secret is not None:
            raise ConfigError(f"jwt_secret is for HS256; {config.jwt_algorithm} needs a key file")
    if key_file is not None and not Path(key_file).is_file():
        raise ConfigError(f"jwt_public_key_file: no such file: {key_file}")
    _check_wallet_signature(config)
    for name in ("wallet_secret", "operator_key"):
        key = getattr(config, name)
        if key is not None and len(key.encode("utf-8")) < MIN_SECRET_BYTES:
            raise ConfigError(f"{name} must be at least {MIN_SECRET_BYTES} bytes long")
    check_money(config)
    if config.redis_min_replicas and not config.clustered:
        raise ConfigError("redis_min_replicas needs a Redis store (--store redis://...)")
    if not config.guest and not config.auth_enabled:
        raise ConfigError("guest play is off (--no-guest) and no JWT key is set: nobody could play")


def _check_wallet_signature(config: ServerConfig) -> None:
    """The seamless wallet's URL and signing key; the operator's public key files."""
    hmac = config.wallet_signature == "hmac"
    if config.wallet == "seamless":
        if config.wallet_url is None:
            raise ConfigError("the seamless wallet needs wallet_url")
        if hmac and config.wallet_secret is None:
            raise ConfigError("the seamless wallet needs wallet_secret (wallet_signature hmac)")
        if not hmac and (config.wallet_signing_key_file is None or config.wallet_key_id is None):
            raise ConfigError(
                f"wallet_signature {config.wallet_signature} needs wallet_signing_key_file"
                " and wallet_key_id"
            )
    if hmac and config.wallet_signing_key_file is not None:
        raise ConfigError("wallet_signing_key_file needs wallet_signature ed25519 or rsa")
    if config.wallet_signing_key_file is not None:
        key = wallet_signing_key(config)
        if algorithm_of(key) != config.wallet_signature:
            raise ConfigError(
                f"wallet_signing_key_file holds an {algorithm_of(key)} key, and"
                f" wallet_signature is {config.wallet_signature}"
            )
    operator_public_keys(config)


def _read_key(path: str, name: str) -> bytes:
    try:
        with open(path, "rb") as file:
            return file.read(1 << 16)
    except OSError as exc:
        raise ConfigError(f"{name}: cannot read {path}: {exc.strerror}") from None


def wallet_signing_key(config: ServerConfig) -> PrivateKey:
    """The private key of ``wallet_signing_key_file`` (set), read and checked: a
    :class:`ConfigError` says why it is not an Ed25519 or RSA private key."""
    assert config.wallet_signing_key_file is not None
    pem = _read_key(config.wallet_signing_key_file, "wallet_signing_key_file")
    try:
        return signing.load_private_key(pem)
    except ValueError as exc:
        raise ConfigError(f"wallet_signing_key_file: {exc}") from None


def operator_public_keys(config: ServerConfig) -> dict[str, PublicKey]:
    """The operator's public keys by key id (``operator_public_keys``), read and checked:
    a :class:`ConfigError` names a file that is missing or is not such a key."""
    keys: dict[str, PublicKey] = {}
    for kid, path in parse_key_list(config.operator_public_keys).items():
        try:
            keys[kid] = signing.load_public_key(_read_key(path, f"operator_public_keys: {kid}"))
        except ValueError as exc:
            raise ConfigError(f"operator_public_keys: {kid}: {exc}") from None
    return keys


def setting_names() -> tuple[str, ...]:
    """The names of every setting, in ``--help`` order (and ``tables``)."""
    return (*(setting.name for setting in SETTINGS), "tables")
