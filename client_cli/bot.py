"""``chemmy bot``: robot players, one connection each, for load, demos and tests.

``chemmy bot [--url URL] --table T [--table T2 ...] --count N
--strategy banker|player|random|martingale --rounds R [--seed S] [--shoes K] [--no-seat]
[--tokens FILE | --token-secret SECRET | --token-secret-file F]`` starts N bots, each
on one connection, and **each bot plays every table it is given** (up to
:data:`MAX_TABLES`, as a player may: issue 37 §2): it joins them all, sits at each (with
``--no-seat``: bets without a seat, GAME_RULES §5: it never sits, presses DONE, holds or
cuts the shoe, and turns the Player cards when its bet is the highest Player bet) and,
each coup at each table, bets by its strategy within the table's limits and its money,
presses DONE, accepts the shoe when it is offered, cuts when asked, and turns the cards
when it is its turn (usually TOSS; sometimes a squeeze with its progress, then CARD 1,
CARD 2). At each table a bot stops after R rounds with a bet there (or once K shoes have
ended there) and stands up; once every table is done it reports, per table and in
total: rounds played, its result as the settlements told it (``net`` of each
``settled``), and the rounds and result the server recorded for it there (``history``:
only the rounds of this run, by round id, so a token player's older rounds do not count);
and in total its starting and final balance, whose difference must be the sum of the
results the server recorded.

Who the bots are: guests (the default: a new identity each), or token players (issue 37
§2), so an operator can load-test its own seamless wallet:

- ``--tokens FILE``: one JWT per line (blank lines and ``#`` comments skipped), the
  operator's own, one per bot; ``--count`` defaults to how many there are;
- ``--token-secret SECRET`` / ``--token-secret-file F``: the bots sign their own HS256
  tokens with the operator's secret (the server's ``jwt_secret``), with the claims the
  server's token login reads (docs/protocol.md §4): ``sub`` (``--player-prefix`` and the
  bot's number: ``bot-1``), ``name`` (``Bot1``), ``iat``, ``exp`` (``--timeout`` and an
  hour from now), ``sid`` (a session of its own for each bot and run, which a seamless
  wallet's calls carry: docs/wallet.md §3) and ``currency`` (``--currency``, for a table
  in the operator's money).

A token that is not a JWT, or whose ``exp`` is past, is refused before anything is sent;
a token the server refuses at ``hello`` (``bad_token``, ``token_expired``) stops the
whole run before any bot sits or bets: ``chemmy: error: ...``, exit status 2.

A bot keeps a :class:`~client_cli.model.TableModel` per table, fed by its
:class:`~client_cli.connection.Connection` through :func:`~client_cli.model.reduce`; it
decides from a table's model after every event there and acts at most once per
decision (a refused command is counted, never fatal). What it may do, the cut's bounds
and how much it may bet on an area are the server's answer (``model.actions``), never
its own rules. It speaks only the public protocol. Money is integer minor units.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import random
import secrets
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias

from client_cli.common import add_url_arg, positive_int, who
from client_cli.contribute import Contributor
from client_cli.main import CliError

if TYPE_CHECKING:
    from client_cli.connection import Connection
    from client_cli.model import TableModel

__all__ = [
    "MAX_TABLES",
    "STRATEGIES",
    "Bot",
    "BotReport",
    "TableReport",
    "TokenRefused",
    "choose_bets",
    "read_tokens",
    "register",
    "run_bots",
    "sign_tokens",
]

Subparsers: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"

STRATEGIES = ("banker", "player", "random", "martingale")
HISTORY_KEPT = 100  # the server keeps a player's last 100 rounds (GAME_RULES §8)
#: How many times a bot reads its balance at the end, 0.1 s apart, while it differs from
#: what its history says (credits still on their way to an operator's wallet).
FINAL_READS = 20
MAX_TABLES = 4  # a player follows and bets at up to four tables at once (issue 37 §2)
MIN_SECRET_BYTES = 32  # the server takes no shorter jwt_secret (docs/operations.md)
#: What the server says when it will not take a token (docs/protocol.md §13).
REFUSED_TOKEN_CODES = frozenset({"bad_token", "token_expired", "auth_required"})


def register(subparsers: Subparsers) -> None:
    """Add ``bot`` to the ``chemmy`` parser."""
    p = subparsers.add_parser(
        "bot",
        help="robot players for one or more tables",
        description="N robot players (one connection each; guests, or token players with "
        "--tokens or --token-secret) join the tables given (each bot plays every one of "
        "them), sit, bet by a strategy, turn cards, take the shoe, and report their "
        "results per table and in total, checked against the server's records.",
    )
    add_url_arg(p)
    p.add_argument(
        "--table",
        required=True,
        action="append",
        metavar="T",
        help=f"a table to play at; repeat it for up to {MAX_TABLES} tables, each bot plays "
        "every one",
    )
    p.add_argument(
        "--count",
        type=positive_int,
        metavar="N",
        help="how many bots (default 1; with --tokens, one per token)",
    )
    p.add_argument(
        "--strategy", choices=STRATEGIES, default="banker", help="how they bet (default banker)"
    )
    p.add_argument(
        "--rounds",
        type=positive_int,
        default=10,
        metavar="R",
        help="rounds each bot bets at each table (default 10)",
    )
    p.add_argument(
        "--shoes",
        type=positive_int,
        metavar="K",
        help="also stop at a table once K shoes have ended there",
    )
    p.add_argument("--seed", type=int, metavar="S", help="random seed, for repeatable bots")
    p.add_argument(
        "--unit",
        metavar="AMOUNT",
        help="the base bet in the bots' currency, as the hello reply says (play money for "
        "guests: 12.50; no decimals in JPY) (default: the table minimum)",
    )
    p.add_argument(
        "--squeeze",
        type=float,
        default=0.3,
        metavar="P",
        help="how often a bot squeezes instead of tossing (0-1, default 0.3)",
    )
    p.add_argument(
        "--timeout",
        type=float,
        default=600.0,
        metavar="SECONDS",
        help="give up after this long (default 600)",
    )
    p.add_argument(
        "--no-seat",
        action="store_true",
        help="bet without a seat (GAME_RULES §5): at a table that takes bettors without a "
        "seat, the bots watch, bet and turn the Player cards when theirs is the highest "
        "Player bet, but never sit, press DONE or hold the shoe",
    )
    who_group = p.add_argument_group(
        "token players",
        "By default the bots are guests. To load-test an operator's own wallet they play "
        "as the operator's players instead: tokens from a file, or tokens they sign with "
        "the server's HS256 secret (claims sub, name, iat, exp, sid, currency).",
    )
    source = who_group.add_mutually_exclusive_group()
    source.add_argument(
        "--tokens", metavar="FILE", help="one player token (JWT) per line, one per bot"
    )
    source.add_argument(
        "--token-secret",
        metavar="SECRET",
        help="sign each bot's HS256 token with this secret (the server's jwt_secret)",
    )
    source.add_argument(
        "--token-secret-file", metavar="F", help="the same secret, read from a file"
    )
    who_group.add_argument(
        "--player-prefix",
        default="bot-",
        metavar="P",
        help="signed tokens: the player ids are P1, P2, ... (default bot-)",
    )
    who_group.add_argument(
        "--currency",
        metavar="CODE",
        help="signed tokens: the players' currency claim (ISO 4217, e.g. EUR; "
        "default none: play money)",
    )
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(run=run_bots)


# ---------------------------------------------------------------------------- tokens


def read_tokens(path: str) -> list[str]:
    """The tokens of ``path``: one a line, blank lines and ``#`` comments skipped; each
    one checked as :func:`check_token` does. Raises :class:`CliError`."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise CliError(f"bot: --tokens: cannot read {path}: {exc}") from None
    tokens = [line.strip() for line in text.splitlines()]
    tokens = [tok for tok in tokens if tok and not tok.startswith("#")]
    if not tokens:
        raise CliError(f"bot: --tokens: no token in {path}")
    for n, tok in enumerate(tokens, start=1):
        check_token(tok, f"token {n} of {path}")
    return tokens


def check_token(token: str, what: str, now: float | None = None) -> None:
    """Refuse a token that cannot play, before anything is sent: not a JWT, no ``sub``,
    or an ``exp`` already past. (Its signature is the server's to check: the bot does
    not hold the key.) Raises :class:`CliError`; never shows the token."""
    import jwt

    try:
        claims = jwt.decode(token, options={"verify_signature": False})
    except jwt.PyJWTError:
        raise CliError(f"bot: {what} is not a player token (a JWT)") from None
    if not isinstance(claims.get("sub"), str):
        raise CliError(f"bot: {what} has no player id (sub)")
    exp = claims.get("exp")
    if isinstance(exp, int | float) and exp <= (time.time() if now is None else now):
        raise CliError(f"bot: {what} has expired")


def sign_tokens(
    secret: str,
    count: int,
    *,
    prefix: str = "bot-",
    currency: str | None = None,
    ttl: float = 3600.0,
    now: float | None = None,
) -> list[str]:
    """``count`` HS256 player tokens signed with the operator's ``secret``: player
    ``{prefix}{n}``, name ``Bot{n}``, valid ``ttl`` seconds, each with a session of its
    own (``sid``, new every run: a seamless wallet's calls carry it)."""
    import jwt

    if len(secret.encode("utf-8")) < MIN_SECRET_BYTES:
        raise CliError(
            f"bot: the token secret has fewer than {MIN_SECRET_BYTES} bytes: "
            "no server takes it (give the server's jwt_secret)"
        )
    if currency is not None and not (len(currency) == 3 and currency.isalpha()):
        raise CliError(f"bot: --currency is an ISO 4217 code such as EUR, not {currency!r}")
    issued = int(time.time() if now is None else now)
    run = secrets.token_hex(6)
    tokens = []
    for n in range(1, count + 1):
        claims: dict[str, Any] = {
            "sub": f"{prefix}{n}",
            "name": f"Bot{n}",
            "iat": issued,
            "exp": issued + int(ttl),
            "sid": f"chemmy-bot-{run}-{n}",
        }
        if currency is not None:
            claims["currency"] = currency.upper()
        tokens.append(jwt.encode(claims, secret, algorithm="HS256"))
    return tokens


def bot_tokens(args: argparse.Namespace, count: int | None) -> tuple[list[str | None], int]:
    """Each bot's token (None: a guest) and how many bots, from the arguments."""
    if args.tokens is not None:
        tokens = read_tokens(args.tokens)
        n = count if count is not None else len(tokens)
        if n > len(tokens):
            raise CliError(f"bot: --count {n} but {args.tokens} holds {len(tokens)} tokens")
        return list(tokens[:n]), n
    secret = args.token_secret
    if args.token_secret_file is not None:
        try:
            secret = Path(args.token_secret_file).read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as exc:
            raise CliError(f"bot: --token-secret-file: cannot read it: {exc}") from None
    n = count if count is not None else 1
    if secret is not None:
        ttl = args.timeout + 3600.0
        signed = sign_tokens(secret, n, prefix=args.player_prefix, currency=args.currency, ttl=ttl)
        return list(signed), n
    if args.currency is not None:
        raise CliError("bot: --currency is for signed tokens (--token-secret)")
    return [None] * n, n


class TokenRefused(CliError):
    """The server refused a bot's token at ``hello``: nothing was played."""


# ---------------------------------------------------------------------------- strategy


@dataclass
class Wallet:
    """What a strategy remembers between coups."""

    losses: int = 0  # martingale: losses in a row


def choose_bets(
    strategy: str,
    model: TableModel,
    rng: random.Random,
    memory: Wallet,
    unit: int | None = None,
) -> dict[str, int]:
    """This coup's bets for ``strategy``, within what the server says the bot may add
    to each area now (``actions["bet"]``: the table's limits and the bot's funds);
    empty when it cannot bet even the least it may."""
    allowed: Mapping[str, Mapping[str, int]] = model.action("bet").get("areas") or {}
    low = model.limits.get("min", 100)
    base = max(low, unit or low)
    if strategy == "banker":
        area, amount = "banker", base
    elif strategy == "player":
        area, amount = "player", base
    elif strategy == "random":
        area = rng.choices(["banker", "player", "tie"], weights=[45, 45, 10])[0]
        amount = base * rng.choice([1, 1, 2, 3])
    elif strategy == "martingale":
        area, amount = "banker", base * (2 ** min(memory.losses, 20))
    else:
        raise ValueError(f"unknown strategy {strategy!r}")
    if area not in allowed:
        area = "banker"
    bounds = allowed.get(area)
    if bounds is None:
        return {}
    amount = min(amount, int(bounds["max"]))
    if amount < int(bounds["min"]):
        return {}
    return {area: amount}


# ---------------------------------------------------------------------------- the bot


@dataclass
class TableReport:
    """One table's share of a bot's play, and what the server recorded of it."""

    table: str
    rounds: int = 0
    net: int = 0  # the sum of the settlements' ``net`` there, as they came
    recorded_rounds: int = 0
    recorded_net: int = 0
    refused: int = 0
    squeezes: int = 0
    tosses: int = 0
    shoes_held: int = 0

    def ok(self, complete: bool) -> bool:
        """Every round played here is recorded, with the result the settlements said
        (when the history holds every round of the run: ``complete``)."""
        return not complete or (
            self.recorded_rounds == self.rounds and self.recorded_net == self.net
        )


@dataclass
class BotReport:
    name: str
    player: str | None
    rounds: int = 0
    start_balance: int = 0
    final_balance: int = 0
    net: int = 0
    recorded_net: int = 0
    recorded_rounds: int = 0
    recorded_from: int | None = None  # balance before the oldest recorded round kept
    refused: int = 0
    squeezes: int = 0
    tosses: int = 0
    shoes_held: int = 0
    error: str | None = None
    #: Per table, in the order given.
    tables: dict[str, TableReport] = field(default_factory=dict)
    #: The history held every round of this run (at most the last 100 are kept).
    complete: bool = True

    @property
    def ok(self) -> bool:
        """The balance moved by exactly what the server recorded, and each table's
        rounds are recorded with the results the bot was told. History keeps the last
        100 rounds: past that, the check starts from the oldest one kept."""
        start = self.start_balance if self.recorded_from is None else self.recorded_from
        return (
            self.error is None
            and self.final_balance == start + self.recorded_net
            and all(t.ok(self.complete) for t in self.tables.values())
        )

    def add_up(self) -> None:
        """The totals from the tables'."""
        parts = self.tables.values()
        self.rounds = sum(t.rounds for t in parts)
        self.recorded_rounds = sum(t.recorded_rounds for t in parts)
        self.recorded_net = sum(t.recorded_net for t in parts)
        self.refused = sum(t.refused for t in parts)
        self.squeezes = sum(t.squeezes for t in parts)
        self.tosses = sum(t.tosses for t in parts)
        self.shoes_held = sum(t.shoes_held for t in parts)

    def to_dict(self) -> dict[str, Any]:
        out = {**asdict(self), "ok": self.ok}
        for name, part in self.tables.items():
            out["tables"][name]["ok"] = part.ok(self.complete)
        return out


@dataclass
class TablePlay:
    """A bot at one table: its model, what it has done there and when it is done."""

    table: str
    report: TableReport
    model: TableModel
    memory: Wallet = field(default_factory=Wallet)
    contributor: Contributor = field(default_factory=Contributor)
    acted: set[tuple[Any, ...]] = field(default_factory=set)
    bet_coups: set[tuple[Any, ...]] = field(default_factory=set)
    round_ids: set[str] = field(default_factory=set)  # the rounds it had a wager in
    shoes_ended: int = 0
    finished: bool = False
    stood: bool = False


@dataclass
class Bot:
    url: str
    table: str = ""
    name: str = "Bot"
    strategy: str = "banker"
    rounds: int = 10
    shoes: int | None = None
    rng: random.Random = field(default_factory=random.Random)
    unit: int | None = None
    squeeze_rate: float = 0.3
    token: str | None = None
    #: ``--unit`` as typed: read again, after hello, in the bot's currency (JPY: no
    #: decimals), which gives :attr:`unit`.
    unit_text: str | None = None
    #: False (``--no-seat``): a bettor without a seat (GAME_RULES §5).
    seated: bool = True
    #: Every table it plays (``table`` is the first; more: issue 37 §2).
    tables: Sequence[str] = ()

    def __post_init__(self) -> None:
        from client_cli.model import TableModel

        names = list(dict.fromkeys([*([self.table] if self.table else []), *self.tables]))
        if not names:
            raise ValueError("a bot needs a table")
        if len(names) > MAX_TABLES:
            raise ValueError(f"a bot plays at most {MAX_TABLES} tables")
        self.tables = tuple(names)
        self.table = names[0]
        self.report = BotReport(self.name, None)
        self.plays = {
            t: TablePlay(t, self.report.tables.setdefault(t, TableReport(t)), TableModel())
            for t in names
        }
        self.conn: Connection | None = None

    @property
    def finished(self) -> bool:
        return all(p.finished for p in self.plays.values())

    @property
    def model(self) -> TableModel | None:
        """The first table's model (None before it is joined)."""
        model = self.plays[self.table].model
        return model if model.me is not None else None

    @property
    def contributor(self) -> Contributor:
        """Its randomness at the first table."""
        return self.plays[self.table].contributor

    async def run(self) -> BotReport:
        """Connect, then play until done; always report, even after an error."""
        from client_cli.connection import ConnectionLost, ServerError

        try:
            await self.connect()
        except (ConnectionLost, ServerError, OSError) as exc:
            self.report.error = str(exc) or type(exc).__name__
            await self.close()
            return self.report
        return await self.play()

    async def connect(self) -> None:
        """Connect and say hello (raising what the connection raises: a refused token is
        a :class:`~client_cli.connection.ServerError`), and read ``--unit``."""
        from client_cli.connection import Connection
        from client_cli.model import TableModel
        from client_cli.money import parse_money

        conn = Connection(
            self.url,
            token=self.token,
            guest=self.token is None,
            name=self.name,
            reconnect=self.token is not None,  # a guest who reconnects is someone else
        )
        self.conn = conn
        hello = await conn.start()
        self.report.player = conn.player
        self.report.start_balance = int(hello.get("balance") or 0)
        for play in self.plays.values():
            play.model = TableModel(me=conn.player)
        if self.unit_text is not None:
            try:
                self.unit = parse_money(self.unit_text)  # in the hello's currency
            except ValueError as exc:
                self.report.error = f"--unit: {exc}"

    async def close(self) -> None:
        if self.conn is not None:
            await self.conn.close()

    async def play(self) -> BotReport:
        """Join every table and play there until done (after :meth:`connect`)."""
        from client_cli.connection import ConnectionLost, ServerError

        conn = self.conn
        assert conn is not None, "connect first"
        try:
            if self.report.error is not None:
                return self.report
            for play in self.plays.values():
                await conn.join(play.table)
                if self.seated:
                    await self._act("sit", play)
            async for item in conn.stream():
                await self._on_item(item)
                if all(p.stood for p in self.plays.values()):
                    break
            await self._finish(conn)
        except (ConnectionLost, ServerError, OSError, _Closed) as exc:
            self.report.error = str(exc) or type(exc).__name__
        finally:
            self.report.add_up()
            await conn.close()
        return self.report

    async def _finish(self, conn: Connection) -> None:
        from client_cli.history import my_payouts, round_summary

        rounds = (await conn.request("history", limit=HISTORY_KEPT)).get("rounds") or []
        me = conn.player or ""
        mine = {rid for p in self.plays.values() for rid in p.round_ids}
        played = [r for r in rounds if r.get("round_id") in mine and my_payouts(r, me)]
        for play in self.plays.values():
            here = [r for r in played if r.get("table") == play.table]
            play.report.recorded_rounds = len(here)
            play.report.recorded_net = sum(round_summary(r, me)["net"] for r in here)
        self.report.complete = len(played) == len(mine)
        if not self.report.complete and played:
            oldest = round_summary(played[-1], me)
            if isinstance(oldest["balance_before"], int):
                self.report.recorded_from = oldest["balance_before"]
        # With an operator's wallet (seamless) the last settlement's credits may still be
        # on their way to it when the bot stands: the balance is read again for a moment
        # while it differs from what the history says, before the report calls it a
        # mismatch.
        start = self.report.start_balance
        expected = (
            start if self.report.recorded_from is None else self.report.recorded_from
        ) + sum(play.report.recorded_net for play in self.plays.values())
        for _ in range(FINAL_READS):
            balance = int((await conn.request("balance")).get("balance") or 0)
            if balance == expected:
                break
            await asyncio.sleep(0.1)
        self.report.final_balance = balance
        self.report.net = self.report.final_balance - self.report.start_balance
        for play in self.plays.values():
            with contextlib.suppress(Exception):
                await conn.leave(play.table)

    async def _on_item(self, item: dict[str, Any]) -> None:
        from client_cli.model import Applied, apply_event, reduce

        conn = self.conn
        assert conn is not None
        kind = item.get("type")
        if kind == "status" and item.get("state") == "closed":
            raise _Closed(conn.close_reason)
        play = self.plays.get(str(item.get("table")))
        if play is None:
            return
        if kind == "snapshot":
            play.model = reduce(play.model, item)
        elif kind == "event":
            model, result = apply_event(play.model, item)
            play.model = model
            if result is Applied.GAP:
                await conn.resync(play.table)
                return
            if result is not Applied.APPLIED:
                return
            self._count(play, item)
        else:
            return
        await self._decide(play.model, play)

    def _count(self, play: TablePlay, item: dict[str, Any]) -> None:
        kind = item.get("kind")
        data = item.get("data") or {}
        model = play.model
        me = model.me
        report = play.report
        if kind == "settled":
            coup = model.last_coup
            if coup is not None and me in coup.bets:
                report.rounds += 1
                play.round_ids.add(coup.round_id)
                net = data.get("net")
                if isinstance(net, int):
                    report.net += net
                    if net < 0:
                        play.memory.losses += 1
                    elif net > 0:
                        play.memory.losses = 0
                if report.rounds >= self.rounds:
                    play.finished = True
        elif kind == "shoe_ended":
            play.shoes_ended += 1
            if self.shoes is not None and play.shoes_ended >= self.shoes:
                play.finished = True
        elif kind == "shoe_accepted" and data.get("player") == me:
            report.shoes_held += 1

    async def _decide(self, model: TableModel, play: TablePlay | None = None) -> None:
        """Act on one table as it is now: each decision at most once."""
        play = play or self.plays[self.table]
        me = model.me
        if me is None:
            return
        in_play = model.coup is not None and me in model.coup.bets
        if play.finished and not in_play:
            if model.seated and model.coup is None:
                if await self._act("stand", play):
                    play.stood = True
            elif not model.seated:
                play.stood = True
            return
        contribution = play.contributor.next(model)  # docs/fairness.md §9, by itself
        if contribution is not None:
            await self._act("contribute", play, **contribution)
        if model.offered_to_me and model.can("accept_shoe"):
            offer_key = ("offer", model.offer.get("deadline") if model.offer else None)
            if offer_key not in play.acted:
                play.acted.add(offer_key)
                await self._act("accept_shoe", play)
        cut = model.action("cut")
        if model.i_cut and cut:
            cut_key = ("cut", (model.shoe or {}).get("no"))
            if cut_key not in play.acted:
                play.acted.add(cut_key)
                position = self.rng.randint(int(cut["min"]), int(cut["max"]))
                await self._act("cut", play, position=position)
        # Bet once the server's actions say betting is open to this bot (it may bet, or
        # press DONE: with nothing it can afford, it stops). Without a seat: when it may
        # bet (a table full of bettors without a seat says not now), and no DONE (§5).
        if model.phase == "betting" and self._may_bet(model):
            bet_key = ("bet", (model.shoe or {}).get("no"), model.coup_no)
            if bet_key not in play.bet_coups:
                play.bet_coups.add(bet_key)
                bets = choose_bets(self.strategy, model, self.rng, play.memory, self.unit)
                if not bets:
                    play.finished = True  # cannot afford the minimum: stop here
                    return
                for area, amount in bets.items():
                    await self._act("bet", play, area=area, amount=amount)
                if self.seated:
                    await self._act("done", play)
        hand = model.my_turn
        if hand is not None and model.coup is not None and model.coup.hand == hand:
            coup = model.coup
            turn_key = ("turn", coup.round_id, coup.stage)
            if turn_key not in play.acted:
                play.acted.add(turn_key)
                styles = list(model.action("squeeze").get("styles") or ())
                await self._turn(play, hand, coup.face_down(), styles)

    def _may_bet(self, model: TableModel) -> bool:
        if self.seated:
            return model.seated and (model.can("bet") or model.can("done"))
        return not model.seated and model.can("bet") and not model.my_bets

    async def _turn(self, play: TablePlay, hand: str, cards: list[int], styles: list[str]) -> None:
        """TOSS, or now and then a squeeze in one of the ``styles`` the server offers,
        with its progress, then CARD by CARD."""
        if self.rng.random() < self.squeeze_rate and styles:
            play.report.squeezes += 1
            if not await self._act("squeeze", play, hand=hand, style=self.rng.choice(styles)):
                await self._act("toss", play, hand=hand)
                return
            for index in cards:
                for pct in (35, 70):
                    await self._act("progress", play, hand=hand, card=index, percent=pct)
                await self._act("turn", play, hand=hand, card=index)
        else:
            play.report.tosses += 1
            await self._act("toss", play, hand=hand)

    async def _act(self, kind: str, play: TablePlay, **fields: Any) -> bool:
        """Send a command to ``play``'s table; True if accepted. Refusals are counted,
        not fatal."""
        from client_cli.connection import ServerError

        assert self.conn is not None
        try:
            await self.conn.request(kind, table=play.table, **fields)
        except ServerError:
            play.report.refused += 1
            return False
        return True


class _Closed(Exception):
    pass


# ---------------------------------------------------------------------------- running


async def play_bots(bots: list[Bot], timeout: float) -> list[BotReport]:
    """Run the bots together; a bot still playing at ``timeout`` reports an error.

    Every bot says hello first; if the server refuses any bot's token
    (:data:`REFUSED_TOKEN_CODES`) every connection is closed and :class:`TokenRefused`
    raised: nothing was played."""
    from client_cli.connection import ConnectionLost, ServerError

    started = time.monotonic()
    hellos = await asyncio.gather(
        *(asyncio.wait_for(b.connect(), timeout) for b in bots), return_exceptions=True
    )
    for bot, outcome in zip(bots, hellos, strict=True):
        if isinstance(outcome, ServerError) and outcome.code in REFUSED_TOKEN_CODES:
            await asyncio.gather(*(b.close() for b in bots), return_exceptions=True)
            raise TokenRefused(
                f"bot: the server refused {bot.name}'s token ({outcome.code}: "
                f"{outcome.message}); nothing was played"
            )
    left = max(0.0, timeout - (time.monotonic() - started))
    tasks: list[asyncio.Task[BotReport]] = []
    for bot, outcome in zip(bots, hellos, strict=True):
        if isinstance(outcome, BaseException):
            bot.report.error = (
                str(outcome) or type(outcome).__name__
                if isinstance(outcome, ConnectionLost | ServerError | OSError)
                else f"{type(outcome).__name__}: {outcome}"
            )
            await bot.close()
            tasks.append(asyncio.create_task(_reported(bot), name=bot.name))
        else:
            tasks.append(asyncio.create_task(bot.play(), name=bot.name))
    _done, pending = await asyncio.wait(tasks, timeout=left)
    for t in pending:
        t.cancel()
    reports: list[BotReport] = []
    for bot, task in zip(bots, tasks, strict=True):
        if task in pending:
            with contextlib.suppress(BaseException):
                await task
            bot.report.error = f"still playing after {timeout:g} s"
            bot.report.add_up()
            reports.append(bot.report)
            continue
        exc = task.exception()
        if exc is not None:
            bot.report.error = f"{type(exc).__name__}: {exc}"
            reports.append(bot.report)
        else:
            reports.append(task.result())
    return reports


async def _reported(bot: Bot) -> BotReport:
    return bot.report


def make_bots(args: argparse.Namespace, url: str) -> list[Bot]:
    from client_cli.money import parse_money

    tables = list(dict.fromkeys(args.table))
    if len(tables) > MAX_TABLES:
        raise CliError(f"bot: at most {MAX_TABLES} tables (--table), not {len(tables)}")
    unit = None
    if args.unit is not None:
        try:
            unit = parse_money(args.unit)
        except ValueError as exc:
            raise CliError(f"bot: --unit: {exc}") from None
    if not 0.0 <= args.squeeze <= 1.0:
        raise CliError("bot: --squeeze is a probability, 0 to 1")
    tokens, count = bot_tokens(args, args.count)
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(2**32)
    return [
        Bot(
            url=url,
            tables=tables,
            name=f"Bot{i + 1}",
            strategy=args.strategy,
            rounds=args.rounds,
            shoes=args.shoes,
            rng=random.Random(f"{seed}-{i}"),
            unit=unit,
            unit_text=args.unit,
            squeeze_rate=args.squeeze,
            seated=not args.no_seat,
            token=tokens[i],
        )
        for i in range(count)
    ]


def run_bots(args: argparse.Namespace) -> int:
    w = who(args)
    bots = make_bots(args, w.url)
    tables = list(bots[0].tables)
    started = time.monotonic()
    try:
        reports = asyncio.run(play_bots(bots, args.timeout))
    except OSError as exc:
        print(f"chemmy: bot: {exc}", file=sys.stderr)
        return 1
    elapsed = time.monotonic() - started
    ok = all(r.ok for r in reports)
    if args.json:
        print(
            json.dumps(
                {
                    "table": tables[0],
                    "tables": per_table(reports, tables),
                    "strategy": args.strategy,
                    "seconds": round(elapsed, 3),
                    "ok": ok,
                    "bots": [r.to_dict() for r in reports],
                },
                indent=2,
            )
        )
    else:
        print(format_reports(reports, ", ".join(tables), args.strategy, elapsed))
    return 0 if ok else 1


def per_table(reports: Sequence[BotReport], tables: Sequence[str]) -> dict[str, dict[str, Any]]:
    """Every bot's play at each table together: rounds, results told and recorded."""
    out: dict[str, dict[str, Any]] = {}
    for table in tables:
        parts = [(r, r.tables[table]) for r in reports if table in r.tables]
        out[table] = {
            "rounds": sum(p.rounds for _r, p in parts),
            "net": sum(p.net for _r, p in parts),
            "recorded_rounds": sum(p.recorded_rounds for _r, p in parts),
            "recorded_net": sum(p.recorded_net for _r, p in parts),
            "ok": all(r.error is None and p.ok(r.complete) for r, p in parts),
        }
    return out


def format_reports(reports: list[BotReport], table: str, strategy: str, elapsed: float) -> str:
    """The plain report: a row per bot (with several tables, a row per table under it,
    its NET the settlements' sum), then the totals."""
    from client_cli.money import format_money

    rows = [("BOT", "ROUNDS", "START", "FINAL", "NET", "RECORDED", "CHECK")]
    for r in reports:
        check = "ok" if r.ok else (f"error: {r.error}" if r.error else "MISMATCH")
        rows.append(
            (
                r.name,
                str(r.rounds),
                format_money(r.start_balance),
                format_money(r.final_balance),
                format_money(r.net, sign=True),
                format_money(r.recorded_net, sign=True),
                check,
            )
        )
        if len(r.tables) > 1:
            for part in r.tables.values():
                rows.append(
                    (
                        f"  {part.table}",
                        str(part.rounds),
                        "",
                        "",
                        format_money(part.net, sign=True),
                        format_money(part.recorded_net, sign=True),
                        "ok" if part.ok(r.complete) else "MISMATCH",
                    )
                )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = [
        "  ".join(
            c.rjust(w) if 0 < i < 6 else c.ljust(w)
            for i, (c, w) in enumerate(zip(row, widths, strict=True))
        ).rstrip()
        for row in rows
    ]
    total = sum(r.net for r in reports)
    lines.append(
        f"{len(reports)} bots at {table} ({strategy}), {elapsed:.1f} s, "
        f"total net {format_money(total, sign=True)}"
    )
    return "\n".join(lines)
