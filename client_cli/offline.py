"""Offline subcommands of ``chemmy``: tools that need no server.

* ``chemmy coup CARD...``: resolve a coup from cards in dealing order (GAME_RULES §2).
* ``chemmy odds``: exact probabilities and house edges of a full shoe (§3, §10).
* ``chemmy simulate --shoes N``: deal whole shoes (§4), observed against exact.
* ``chemmy verify FILE``: check a revealed shoe record (§4, docs/fairness.md); or
  ``chemmy verify --table T``: fetch the table's last revealed shoe from the server first.

Handlers only read arguments, call the engine and print; every rule lives in
``server.engine``. The engine's errors about the user's input (a bad card, an impossible
shoe) are translated here into :class:`~client_cli.main.CliError`. Heavy modules
(numpy, rich) are imported inside the handlers that use them.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any, TypeAlias

from client_cli.common import positive_int
from client_cli.main import CliError
from client_cli.scripts import add_verify_server_args, fetch_shoe_record
from server.engine.cards import CardError, parse_cards
from server.engine.coup import Coup, resolve_coup
from server.engine.payouts import Area, Paytable
from server.engine.shoe import ShoeError, VerifyReport, verify

__all__ = ["register", "run_coup", "run_odds", "run_simulate", "run_verify"]

Subparsers: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"

_AREA_NAMES: dict[str, str] = {
    Area.PLAYER: "Player",
    Area.BANKER: "Banker",
    Area.TIE: "Tie",
    Area.PLAYER_PAIR: "Player Pair",
    Area.BANKER_PAIR: "Banker Pair",
    Area.SUPER6: "Super 6",
    Area.DRAGON_PLAYER: "Dragon Player",
    Area.DRAGON_BANKER: "Dragon Banker",
}


def register(subparsers: Subparsers) -> None:
    """Add ``coup``, ``odds``, ``simulate`` and ``verify`` to the ``chemmy`` parser."""
    p = subparsers.add_parser(
        "coup",
        help="resolve a coup from its cards",
        description="Resolve a coup from cards in the order they leave the shoe: Player, "
        "Banker, Player, Banker, then third cards as the tableau draws them. "
        "Give up to 6 cards; extra cards are not used.",
    )
    p.add_argument("cards", nargs="+", metavar="CARD", help="a card such as 9s Kd 5h 10c")
    p.add_argument("--decks", type=_decks, default=8, help="decks in the shoe (default 8)")
    p.set_defaults(run=run_coup)

    p = subparsers.add_parser(
        "odds",
        help="exact probabilities and house edges",
        description="Exact probabilities of a coup from a full shoe, card removal "
        "counted, and the house edge of every bet.",
    )
    p.add_argument("--decks", type=_decks, default=8, help="decks in the shoe (default 8)")
    p.add_argument(
        "--no-commission",
        action="store_true",
        help="a no-commission table: Banker winning with 6 pays half; Super 6 open",
    )
    p.set_defaults(run=run_odds)

    p = subparsers.add_parser(
        "simulate",
        help="deal whole shoes and compare with the exact odds",
        description="Deal whole shoes (cut, burn, stop card) and print the observed "
        "frequencies beside the exact ones.",
    )
    p.add_argument("--shoes", type=positive_int, required=True, help="shoes to deal")
    p.add_argument("--seed", type=_non_negative_int, default=0, help="random seed (default 0)")
    p.add_argument("--decks", type=_decks, default=8, help="decks in the shoe (default 8)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    p.set_defaults(run=run_simulate)

    p = subparsers.add_parser(
        "verify",
        help="check a revealed shoe record",
        description="Check a revealed shoe record (JSON, see docs/fairness.md): the seed "
        "against its commitment, and every coup against the cards the seed deals. "
        "Exit status 0 if it verifies, 1 if not.",
    )
    p.add_argument(
        "source", nargs="?", metavar="FILE", help="the record, a JSON file ('-' for stdin)"
    )
    add_verify_server_args(p)  # or --table T [--shoe N] [--url URL]: fetch it (client_cli.scripts)
    p.set_defaults(run=run_verify)


# -- argument types --------------------------------------------------------------------

MAX_DECKS = 100  # far beyond any table (§4: 8, or 6); keeps a typo from eating memory


def _plural(n: object, word: str) -> str:
    if isinstance(n, int) and not isinstance(n, bool):
        return f"{n:,} {word}{'' if n == 1 else 's'}"
    return f"{n} {word}s"


def _decks(text: str) -> int:
    n = positive_int(text)
    if n > MAX_DECKS:
        raise argparse.ArgumentTypeError(f"at most {MAX_DECKS}, not {n}")
    return n


def _non_negative_int(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if n < 0:
        raise argparse.ArgumentTypeError(f"must be at least 0, not {n}")
    return n


# -- coup ------------------------------------------------------------------------------


def run_coup(args: argparse.Namespace) -> int:
    from server.engine.odds import counts_after

    try:
        cards = parse_cards(args.cards)
        counts_after(args.decks, cards)  # no card more often than the shoe holds it (§4)
        coup = resolve_coup(cards)
    except CardError as exc:
        raise CliError(f"coup: {exc}") from None
    print(format_coup(coup, given=len(cards), unused=cards[coup.cards_used :]))
    return 0


def format_coup(coup: Coup, *, given: int, unused: list[str] | None = None) -> str:
    """A coup as a few aligned lines: hands, totals, draws, natural, outcome, pairs."""
    width = max(len(coup.player), len(coup.banker)) * 3 - 1
    lines = []
    for side, hand, total, drew in (
        ("Player", coup.player, coup.player_total, coup.player_drew),
        ("Banker", coup.banker, coup.banker_total, coup.banker_drew),
    ):
        how = "drew a third card" if drew else "stood"
        lines.append(f"{side:<9}{' '.join(hand):<{width}}  total {total}  {how}")
    if coup.natural:
        naturals = [
            f"{side} {total}"
            for side, total, nat in (
                ("Player", coup.player_total, coup.player_natural),
                ("Banker", coup.banker_total, coup.banker_natural),
            )
            if nat
        ]
        lines.append(f"{'Natural':<9}{', '.join(naturals)}")
    else:
        lines.append(f"{'Natural':<9}none")
    if coup.outcome == "tie":
        result = f"Tie, {coup.player_total} to {coup.banker_total}"
    else:
        side = "Player" if coup.outcome == "player" else "Banker"
        result = f"{side} wins, {coup.winner_total} to {min(coup.player_total, coup.banker_total)}"
    lines.append(f"{'Outcome':<9}{result}")
    pairs = [
        n
        for n, has in (("Player Pair", coup.player_pair), ("Banker Pair", coup.banker_pair))
        if has
    ]
    lines.append(f"{'Pairs':<9}{', '.join(pairs) if pairs else 'none'}")
    used = f"{coup.cards_used} used of {given} given"
    if unused:
        used += f" (not used: {' '.join(unused)})"
    lines.append(f"{'Cards':<9}{used}")
    return "\n".join(lines)


# -- odds ------------------------------------------------------------------------------


def _pays(area: str, paytable: Paytable) -> str:
    if area == Area.PLAYER:
        return "1:1"
    if area == Area.BANKER:
        if paytable.commission:
            return f"1:1 less {paytable.commission_percent}%"
        return "1:1, on 6 1:2"
    if area == Area.TIE:
        return f"{paytable.tie_pays}:1"
    if area in (Area.PLAYER_PAIR, Area.BANKER_PAIR):
        return f"{paytable.pair_pays}:1"
    if area == Area.SUPER6:
        return f"{paytable.super6_pays}:1"
    return "1:1 to 30:1"


# Which probability of exact_odds goes with each area (None: no single probability).
_AREA_PROBABILITY: dict[str, str | None] = {
    Area.PLAYER: "player",
    Area.BANKER: "banker",
    Area.TIE: "tie",
    Area.PLAYER_PAIR: "player_pair",
    Area.BANKER_PAIR: "banker_pair",
    Area.SUPER6: "banker_six",
    Area.DRAGON_PLAYER: None,
    Area.DRAGON_BANKER: None,
}


def run_odds(args: argparse.Namespace) -> int:
    from server.engine.odds import exact_odds

    no_commission: bool = args.no_commission
    paytable = Paytable(commission=not no_commission, super6=no_commission, dragon=True)
    try:
        odds = exact_odds(args.decks, paytable=paytable)
    except (CardError, ValueError) as exc:
        raise CliError(f"odds: {exc}") from None
    print(format_odds(odds, paytable, decks=args.decks))
    return 0


def format_odds(odds: Mapping[str, Any], paytable: Paytable, *, decks: int) -> str:
    """The exact odds as an aligned table: bet, pays, probability, house edge."""
    table = "commission table" if paytable.commission else "no-commission table"
    cards = odds.get("cards", 52 * decks)
    head = f"Exact odds: {_plural(decks, 'deck')} ({cards} cards), {table}"
    edges: Mapping[str, float] = odds.get("edges", {})
    rows = [("Bet", "Pays", "Probability", "House edge")]
    for area in paytable.areas():
        key = _AREA_PROBABILITY.get(area)
        prob = f"{float(odds[key]):.9f}" if key and key in odds else "-"
        edge = f"{100 * float(edges[area]):.4f}%" if area in edges else "-"
        rows.append((_AREA_NAMES[area], _pays(area, paytable), prob, edge))
    lines = [head, "", *_align(rows, right=(2, 3))]
    if "natural" in odds:
        lines += ["", f"Natural (either side): {float(odds['natural']):.9f}"]
    lines.append("Player and Banker edges count ties as pushes.")
    return "\n".join(lines)


def _align(rows: Sequence[Sequence[str]], *, right: tuple[int, ...] = ()) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    out = []
    for row in rows:
        cells = [
            cell.rjust(widths[i]) if i in right else cell.ljust(widths[i])
            for i, cell in enumerate(row)
        ]
        out.append("  ".join(cells).rstrip())
    return out


# -- simulate --------------------------------------------------------------------------

_SIM_ROWS = (
    ("banker", "Banker"),
    ("player", "Player"),
    ("tie", "Tie"),
    ("player_pair", "Player Pair"),
    ("banker_pair", "Banker Pair"),
    ("banker_six", "Banker wins with 6"),
)


def run_simulate(args: argparse.Namespace) -> int:
    from server.engine.odds import exact_odds
    from server.engine.simulate import simulate_shoes

    shoes: int = args.shoes
    try:
        exact = exact_odds(args.decks)
        with progress_bar(shoes, enabled=not args.no_progress) as advance:
            result = simulate_shoes(shoes, decks=args.decks, seed=args.seed, progress=advance)
    except (CardError, ValueError) as exc:
        raise CliError(f"simulate: {exc}") from None
    observed = result.frequencies()
    print(
        f"Simulated {_plural(result.shoes, 'shoe')} of {_plural(args.decks, 'deck')} "
        f"(seed {args.seed}): {_plural(result.coups, 'coup')}"
    )
    print()
    rows = [("Result", "Observed", "Exact", "Difference", "z")]
    for key, name in _SIM_ROWS:
        if key not in observed or key not in exact:
            continue
        obs, ex = float(observed[key]), float(exact[key])
        se = math.sqrt(ex * (1 - ex) / result.coups) if result.coups else 0.0
        z = f"{(obs - ex) / se:+.2f}" if se else "-"
        rows.append((name, f"{obs:.6f}", f"{ex:.6f}", f"{obs - ex:+.6f}", z))
    for line in _align(rows, right=(1, 2, 3, 4)):
        print(line)
    print()
    print("z: difference in standard errors, treating coups as independent.")
    return 0


ProgressCallback = Callable[[int], None]


@contextmanager
def progress_bar(total: int, *, enabled: bool = True) -> Iterator[ProgressCallback]:
    """A progress callback ``advance(done)`` drawing a bar on stderr.

    rich's bar on a terminal; a plain text bar, one line per tenth, otherwise.
    """
    if not enabled:
        yield lambda done: None
        return
    if sys.stderr.isatty():
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeRemainingColumn

        with Progress(
            "[progress.description]{task.description}",
            BarColumn(),
            MofNCompleteColumn(),
            TimeRemainingColumn(),
            console=Console(stderr=True),
            transient=True,
        ) as progress:
            task = progress.add_task("shoes", total=total)
            yield lambda done: progress.update(task, completed=done)
        return
    yield _TextBar(total, sys.stderr)


class _TextBar:
    """``[#####.....]  50%  500/1000 shoes``, written when the tenth changes."""

    def __init__(self, total: int, out: IO[str], width: int = 30) -> None:
        self.total, self.out, self.width = total, out, width
        self.tenth = -1

    def __call__(self, done: int) -> None:
        tenth = 10 * done // self.total if self.total else 10
        if tenth == self.tenth:
            return
        self.tenth = tenth
        filled = self.width * done // self.total if self.total else self.width
        bar = "#" * filled + "." * (self.width - filled)
        pct = 100 * done // self.total if self.total else 100
        self.out.write(f"[{bar}] {pct:3d}%  {done}/{self.total} shoes\n")
        self.out.flush()


# -- verify ----------------------------------------------------------------------------


def run_verify(args: argparse.Namespace) -> int:
    if str(args.source or "").startswith(("ws://", "wss://")):
        raise CliError(f"verify: {args.source} is a server: give --table T and --url URL")
    offline = args.source and not (args.table or args.url or args.shoe is not None)
    record = load_record(args.source) if offline else fetch_shoe_record(args)
    try:
        report = verify(record)
    except (CardError, ShoeError) as exc:  # the engine should report these; never crash
        report = VerifyReport(False, 0, (str(exc),))
    commitment = str(record.get("commitment", "?"))
    coups = record.get("coups")
    n = len(coups) if isinstance(coups, list) else 0
    decks = record.get("decks", 8)
    print(f"Shoe {commitment}: {_plural(decks, 'deck')}, {_plural(n, 'coup')} recorded")
    print(report)
    return 0 if report.ok else 1


def load_record(source: str) -> dict[str, Any]:
    """Read a revealed shoe record: a JSON object from a file, or stdin for ``-``."""
    text = _read_source(source)
    try:
        record = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CliError(f"verify: {source}: not JSON ({exc})") from None
    if not isinstance(record, dict):
        raise CliError(f"verify: {source}: not a shoe record (a JSON object)")
    return record


def _read_source(source: str) -> str:
    if source.startswith(("http://", "https://")):
        # The place for fetching a record from a table server, when there is one.
        raise CliError(f"verify: {source}: reading a record from a URL is not supported yet")
    if source == "-":
        return sys.stdin.read()
    try:
        return Path(source).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise CliError(f"verify: cannot read {source}: {reason}") from None
