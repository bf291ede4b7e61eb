"""``chemmy bot``: robot players, one connection each, for load, demos and tests.

``chemmy bot [--url URL] --table T --count N --strategy banker|player|random|martingale
--rounds R [--seed S] [--shoes K] [--no-seat]`` starts N guest bots that sit at table T
(with ``--no-seat``: bet without a seat, GAME_RULES §5: they never sit, press DONE, hold
or cut the shoe, and turn the Player cards when theirs is the highest Player bet) and, each
coup, bet by their strategy within the table's limits and their balance, press DONE,
accept the shoe when it is offered, cut when asked, and turn the cards when it is
their turn (usually TOSS; sometimes a squeeze with its progress, then CARD 1, CARD 2).
A bot stops after R rounds with a bet (or once K shoes have ended), stands up, and
reports: rounds played, starting and final balance, net, and the sum of its results as
the server recorded them (``history``) — which must equal the net.

A bot is a :class:`~client_cli.model.TableModel` fed by a
:class:`~client_cli.connection.Connection` through :func:`~client_cli.model.reduce`; it
decides from the model after every event and acts at most once per decision (a refused
command is counted, never fatal). What it may do, the cut's bounds and how much it may
bet on an area are the server's answer (``model.actions``), never its own rules. It
speaks only the public protocol. Money is integer minor units.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import random
import sys
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, TypeAlias

from client_cli.common import add_url_arg, positive_int, who
from client_cli.contribute import Contributor
from client_cli.main import CliError

if TYPE_CHECKING:
    from client_cli.connection import Connection
    from client_cli.model import TableModel

__all__ = ["STRATEGIES", "Bot", "BotReport", "choose_bets", "register", "run_bots"]

Subparsers: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"

STRATEGIES = ("banker", "player", "random", "martingale")
HISTORY_KEPT = 100  # the server keeps a player's last 100 rounds (GAME_RULES §8)


def register(subparsers: Subparsers) -> None:
    """Add ``bot`` to the ``chemmy`` parser."""
    p = subparsers.add_parser(
        "bot",
        help="robot players for a table",
        description="N robot players (guests, one connection each) sit at a table, bet "
        "by a strategy, turn cards, take the shoe, and report their results.",
    )
    add_url_arg(p)
    p.add_argument("--table", required=True, metavar="T", help="the table to play at")
    p.add_argument(
        "--count", type=positive_int, default=1, metavar="N", help="how many bots (default 1)"
    )
    p.add_argument(
        "--strategy", choices=STRATEGIES, default="banker", help="how they bet (default banker)"
    )
    p.add_argument(
        "--rounds",
        type=positive_int,
        default=10,
        metavar="R",
        help="rounds each bot bets (default 10)",
    )
    p.add_argument(
        "--shoes", type=positive_int, metavar="K", help="also stop once K shoes have ended"
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
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(run=run_bots)


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

    @property
    def ok(self) -> bool:
        """The balance moved by exactly what the server recorded. History keeps the
        last 100 rounds: past that, the check starts from the oldest one kept."""
        start = self.start_balance if self.recorded_from is None else self.recorded_from
        return self.error is None and self.final_balance == start + self.recorded_net

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "ok": self.ok}


@dataclass
class Bot:
    url: str
    table: str
    name: str
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

    def __post_init__(self) -> None:
        self.report = BotReport(self.name, None)
        self.memory = Wallet()
        self._acted: set[tuple[Any, ...]] = set()
        self._bet_coups: set[tuple[Any, ...]] = set()
        self._shoes_ended = 0
        self._finished = False
        self._stood = False
        self.conn: Connection | None = None
        self.model: TableModel | None = None
        self.contributor = Contributor()  # its own randomness in every shoe it sits at

    @property
    def finished(self) -> bool:
        return self._finished

    async def run(self) -> BotReport:
        """Play until done; always report, even after an error."""
        from client_cli.connection import Connection, ConnectionLost, ServerError
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
        try:
            hello = await conn.start()
            self.report.player = conn.player
            self.report.start_balance = int(hello.get("balance") or 0)
            if self.unit_text is not None:
                try:
                    self.unit = parse_money(self.unit_text)  # in the hello's currency
                except ValueError as exc:
                    self.report.error = f"--unit: {exc}"
                    return self.report
            self.model = TableModel(me=conn.player)
            await conn.join(self.table)
            if self.seated:
                await self._act("sit")
            async for item in conn.stream():
                await self._on_item(item)
                if self._stood:
                    break
            await self._finish(conn)
        except (ConnectionLost, ServerError, OSError, _Closed) as exc:
            self.report.error = str(exc) or type(exc).__name__
        finally:
            await conn.close()
        return self.report

    async def _finish(self, conn: Connection) -> None:
        from client_cli.history import history_net, my_payouts, round_summary

        rounds = (await conn.request("history", limit=100)).get("rounds") or []
        me = conn.player or ""
        self.report.recorded_rounds = sum(1 for r in rounds if my_payouts(r, me))
        self.report.recorded_net = history_net(list(rounds), me)
        if len(rounds) >= HISTORY_KEPT and self.report.rounds > len(rounds):
            oldest = round_summary(rounds[-1], me)
            if isinstance(oldest["balance_before"], int):
                self.report.recorded_from = oldest["balance_before"]
        self.report.final_balance = int((await conn.request("balance")).get("balance") or 0)
        self.report.net = self.report.final_balance - self.report.start_balance
        with contextlib.suppress(Exception):
            await conn.leave(self.table)

    async def _on_item(self, item: dict[str, Any]) -> None:
        from client_cli.model import Applied, apply_event, reduce

        model = self.model
        conn = self.conn
        assert model is not None and conn is not None
        kind = item.get("type")
        if kind == "snapshot" and item.get("table") == self.table:
            model = self.model = reduce(model, item)
        elif kind == "event" and item.get("table") == self.table:
            model, result = apply_event(model, item)
            self.model = model
            if result is Applied.GAP:
                await conn.resync(self.table)
                return
            if result is not Applied.APPLIED:
                return
            self._count(model, item)
        elif kind == "status" and item.get("state") == "closed":
            raise _Closed(self.conn.close_reason if self.conn else None)
        else:
            return
        await self._decide(model)

    def _count(self, model: TableModel, item: dict[str, Any]) -> None:
        kind = item.get("kind")
        data = item.get("data") or {}
        me = model.me
        if kind == "settled":
            coup = model.last_coup
            if coup is not None and me in coup.bets:
                self.report.rounds += 1
                net = data.get("net")
                if isinstance(net, int):
                    if net < 0:
                        self.memory.losses += 1
                    elif net > 0:
                        self.memory.losses = 0
                if self.report.rounds >= self.rounds:
                    self._finished = True
        elif kind == "shoe_ended":
            self._shoes_ended += 1
            if self.shoes is not None and self._shoes_ended >= self.shoes:
                self._finished = True
        elif kind == "shoe_accepted" and data.get("player") == me:
            self.report.shoes_held += 1

    async def _decide(self, model: TableModel) -> None:
        """Act on the table as it is now: each decision at most once."""
        me = model.me
        if me is None:
            return
        in_play = model.coup is not None and me in model.coup.bets
        if self._finished and not in_play:
            if model.seated and model.coup is None:
                if await self._act("stand"):
                    self._stood = True
            elif not model.seated:
                self._stood = True
            return
        contribution = self.contributor.next(model)  # docs/fairness.md §9, by itself
        if contribution is not None:
            await self._act("contribute", **contribution)
        if model.offered_to_me and model.can("accept_shoe"):
            offer_key = ("offer", model.offer.get("deadline") if model.offer else None)
            if offer_key not in self._acted:
                self._acted.add(offer_key)
                await self._act("accept_shoe")
        cut = model.action("cut")
        if model.i_cut and cut:
            cut_key = ("cut", (model.shoe or {}).get("no"))
            if cut_key not in self._acted:
                self._acted.add(cut_key)
                await self._act("cut", position=self.rng.randint(int(cut["min"]), int(cut["max"])))
        # Bet once the server's actions say betting is open to this bot (it may bet, or
        # press DONE: with nothing it can afford, it stops). Without a seat: when it may
        # bet (a table full of bettors without a seat says not now), and no DONE (§5).
        if model.phase == "betting" and self._may_bet(model):
            bet_key = ("bet", (model.shoe or {}).get("no"), model.coup_no)
            if bet_key not in self._bet_coups:
                self._bet_coups.add(bet_key)
                bets = choose_bets(self.strategy, model, self.rng, self.memory, self.unit)
                if not bets:
                    self._finished = True  # cannot afford the minimum: stop
                    return
                for area, amount in bets.items():
                    await self._act("bet", area=area, amount=amount)
                if self.seated:
                    await self._act("done")
        hand = model.my_turn
        if hand is not None and model.coup is not None and model.coup.hand == hand:
            coup = model.coup
            turn_key = ("turn", coup.round_id, coup.stage)
            if turn_key not in self._acted:
                self._acted.add(turn_key)
                styles = list(model.action("squeeze").get("styles") or ())
                await self._turn(hand, coup.face_down(), styles)

    def _may_bet(self, model: TableModel) -> bool:
        if self.seated:
            return model.seated and (model.can("bet") or model.can("done"))
        return not model.seated and model.can("bet") and not model.my_bets

    async def _turn(self, hand: str, cards: list[int], styles: list[str]) -> None:
        """TOSS, or now and then a squeeze in one of the ``styles`` the server offers,
        with its progress, then CARD by CARD."""
        if self.rng.random() < self.squeeze_rate and styles:
            self.report.squeezes += 1
            if not await self._act("squeeze", hand=hand, style=self.rng.choice(styles)):
                await self._act("toss", hand=hand)
                return
            for index in cards:
                for pct in (35, 70):
                    await self._act("progress", hand=hand, card=index, percent=pct)
                await self._act("turn", hand=hand, card=index)
        else:
            self.report.tosses += 1
            await self._act("toss", hand=hand)

    async def _act(self, kind: str, **fields: Any) -> bool:
        """Send a table command; True if accepted. Refusals are counted, not fatal."""
        from client_cli.connection import ServerError

        assert self.conn is not None
        try:
            await self.conn.request(kind, table=self.table, **fields)
        except ServerError:
            self.report.refused += 1
            return False
        return True


class _Closed(Exception):
    pass


# ---------------------------------------------------------------------------- running


async def play_bots(bots: list[Bot], timeout: float) -> list[BotReport]:
    """Run the bots together; a bot still playing at ``timeout`` reports an error."""
    tasks = [asyncio.create_task(b.run(), name=b.name) for b in bots]
    _done, pending = await asyncio.wait(tasks, timeout=timeout)
    for t in pending:
        t.cancel()
    reports: list[BotReport] = []
    for bot, task in zip(bots, tasks, strict=True):
        if task in pending:
            with contextlib.suppress(BaseException):
                await task
            bot.report.error = f"still playing after {timeout:g} s"
            reports.append(bot.report)
            continue
        exc = task.exception()
        if exc is not None:
            bot.report.error = f"{type(exc).__name__}: {exc}"
            reports.append(bot.report)
        else:
            reports.append(task.result())
    return reports


def make_bots(args: argparse.Namespace, url: str) -> list[Bot]:
    from client_cli.money import parse_money

    unit = None
    if args.unit is not None:
        try:
            unit = parse_money(args.unit)
        except ValueError as exc:
            raise CliError(f"bot: --unit: {exc}") from None
    if not 0.0 <= args.squeeze <= 1.0:
        raise CliError("bot: --squeeze is a probability, 0 to 1")
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(2**32)
    return [
        Bot(
            url=url,
            table=args.table,
            name=f"Bot{i + 1}",
            strategy=args.strategy,
            rounds=args.rounds,
            shoes=args.shoes,
            rng=random.Random(f"{seed}-{i}"),
            unit=unit,
            unit_text=args.unit,
            squeeze_rate=args.squeeze,
            seated=not args.no_seat,
        )
        for i in range(args.count)
    ]


def run_bots(args: argparse.Namespace) -> int:
    w = who(args)
    bots = make_bots(args, w.url)
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
                    "table": args.table,
                    "strategy": args.strategy,
                    "seconds": round(elapsed, 3),
                    "ok": ok,
                    "bots": [r.to_dict() for r in reports],
                },
                indent=2,
            )
        )
    else:
        print(format_reports(reports, args.table, args.strategy, elapsed))
    return 0 if ok else 1


def format_reports(reports: list[BotReport], table: str, strategy: str, elapsed: float) -> str:
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
        f"{len(reports)} bots at {table} ({strategy}), {elapsed:.1f} s, total net {format_money(total, sign=True)}"
    )
    return "\n".join(lines)
