"""Drawing a table in a terminal: text-art cards, the squeeze, seats, the bet layout,
the roads, the odds and the history, as Rich :class:`~rich.text.Text`.

Pure functions of the client's :class:`~client_cli.model.TableModel` (or of plain data
from the server): no I/O, no clock, so the full-screen client (``client_cli.tui``)
and the tests share them. Money is shown only through
:func:`~client_cli.money.format_money`; a hand's total is the server's. The words are
the catalogs' (:mod:`client_cli.i18n`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from rich.text import Text

from client_cli.i18n import LocalNames, t
from client_cli.model import CoupView, TableModel
from client_cli.money import format_money
from client_cli.sentences import AREA_NAMES, SUITS, result_text

__all__ = [
    "CARD_H",
    "CARD_W",
    "card_art",
    "odds_text",
    "render_hands",
    "render_layout",
    "render_roads",
    "render_seats",
    "squeeze_art",
]

CARD_W = 9
CARD_H = 7
_INNER_W = CARD_W - 2
_INNER_H = CARD_H - 2
RED_SUITS = ("h", "d")
OUTCOME_STYLE = {"banker": "bold red", "player": "bold blue", "tie": "bold green"}
#: An outcome's letter on a road, in the current language (B/P/T; French B/J/É, German
#: B/S/U), as the page's roads and stats write them.
OUTCOME_LETTER = LocalNames("road.letter.", ("banker", "player", "tie"))
BACK = "░"


def _face(card: str) -> list[str]:
    """The inside (5 rows of 7) of a face-up card."""
    rank = "10" if card[:-1] == "T" else card[:-1]
    suit = SUITS.get(card[-1:], card[-1:])
    return [
        f"{rank:<{_INNER_W}}",
        f"{suit:<{_INNER_W}}",
        f"{suit:^{_INNER_W}}",
        f"{suit:>{_INNER_W}}",
        f"{rank:>{_INNER_W}}",
    ]


def _frame(rows: list[str]) -> list[str]:
    return ["┌" + "─" * _INNER_W + "┐", *(f"│{r}│" for r in rows), "└" + "─" * _INNER_W + "┘"]


def card_art(card: str | None) -> list[str]:
    """A card as 7 lines of 9 characters; ``None`` is the back."""
    if not card:
        return _frame([BACK * _INNER_W] * _INNER_H)
    return _frame(_face(card))


def squeeze_art(card: str | None, style: str, percent: int) -> list[str]:
    """A card partly revealed by a squeeze: PEEK bends a corner (a growing top-left
    rectangle), SIDE opens from the left edge, QUICK lifts from the bottom. With
    ``card`` unknown (someone else squeezing) the revealed part is shown blank."""
    pct = max(0, min(100, percent))
    face = _face(card) if card else [" " * _INNER_W] * _INNER_H
    if pct >= 100:
        return _frame(face)
    rows: list[str] = []
    for r in range(_INNER_H):
        line = []
        for col in range(_INNER_W):
            if style == "side":
                shown = col < math.ceil(pct / 100 * _INNER_W)
            elif style == "quick":
                shown = r >= _INNER_H - math.ceil(pct / 100 * _INNER_H)
            else:  # peek: the corner first
                shown = r < math.ceil(pct / 100 * _INNER_H) and col < math.ceil(
                    pct / 100 * _INNER_W
                )
            line.append(face[r][col] if shown else BACK)
        rows.append("".join(line))
    return _frame(rows)


def _card_style(card: str | None) -> str:
    if not card:
        return "dim"
    return "bold red" if card[-1:] in RED_SUITS else "bold"


def _hand_block(
    coup: CoupView | None,
    hand: str,
    *,
    local: dict[tuple[str, int], int],
) -> tuple[list[list[str]], list[str]]:
    """The arts of one hand's cards and their styles (all 7 lines each)."""
    arts: list[list[str]] = []
    styles: list[str] = []
    if coup is None:
        return arts, styles
    for i, cv in enumerate(coup.cards(hand), start=1):
        if cv.up and cv.card:
            arts.append(card_art(cv.card))
            styles.append(_card_style(cv.card))
            continue
        known = coup.private.get((hand, i))
        pct = local.get((hand, i), coup.progress.get((hand, i)))
        if pct is not None and coup.style:
            arts.append(squeeze_art(known if (hand, i) in local else None, coup.style, pct))
            styles.append(_card_style(known) if (hand, i) in local else "yellow")
        else:
            arts.append(card_art(None))
            styles.append("dim")
    return arts, styles


def render_hands(model: TableModel, local: dict[tuple[str, int], int] | None = None) -> Text:
    """Both hands side by side, with totals, the turners and the squeeze's progress.
    ``local`` is this client's own squeeze animation ((hand, card) -> percent)."""
    local = local or {}
    coup = model.coup or model.last_coup
    out = Text()
    heads: list[str] = []
    blocks: list[tuple[list[list[str]], list[str]]] = []
    for hand in ("player", "banker"):
        arts, styles = _hand_block(coup, hand, local=local)
        title = t(f"hand_title.{hand}")
        if coup is not None and any(c.up for c in coup.cards(hand)):
            total = coup.total(hand)
            title += f"  {total}" if total is not None else ""
        if coup is not None and model.coup is not None:
            turner = coup.turners.get(hand)
            title += "  " + t("cli.render.turns", who=model.name(turner))
            if coup.hand == hand and coup.style:
                title += f" {coup.style.upper()}"
                pcts = [p for (h, _), p in coup.progress.items() if h == hand]
                if pcts and coup.squeezer != model.me:
                    title += f" {max(pcts)}%"
        heads.append(title)
        blocks.append((arts, styles))
    width = CARD_W * 3 + 2
    out.append(f"{heads[0]:<{width}}   {heads[1]}\n", style="bold")
    for line in range(CARD_H):
        for b, (arts, styles) in enumerate(blocks):
            used = 0
            for art, style in zip(arts, styles, strict=True):
                out.append(art[line], style=style)
                out.append(" ")
                used += CARD_W + 1
            if b == 0:
                out.append(" " * (width - used + 3))
        out.append("\n")
    if coup is None:
        out.append(t("cli.render.no_cards") + "\n", style="dim")
    elif coup.result:
        r = coup.result
        style = OUTCOME_STYLE.get(str(r.get("outcome")), "bold")
        text = model.result_line if model.coup is None and model.result_line else result_text(r)
        out.append(text + "\n", style=style)
    return out


def render_seats(model: TableModel, *, name_width: int = 10) -> Text:
    """The seats: number, name (cut to ``name_width``), shoe marker, connection, bets
    and DONE."""
    out = Text()
    seats = model.seats_in_order()
    out.append(t("cli.render.seats"), style="bold")
    if model.house_holds:
        out.append("  " + t("cli.render.house_holds"), style="dim")
    out.append("\n")
    if not seats:
        out.append("  " + t("cli.render.nobody") + "\n", style="dim")
    for s in seats:
        mark = "◆" if s.player == model.holder else " "
        style = "bold yellow" if s.player == model.me else ""
        out.append(f"{mark}{s.seat:>2} ", style="bold magenta" if mark != " " else "")
        out.append(f"{s.name[:name_width]:<{name_width}}", style=style)
        if not s.connected:
            out.append(" ⚠", style="red")
        if s.done:
            out.append(" ✓", style="green")
        if model.offer and model.offer.get("player") == s.player:
            out.append(" " + t("cli.render.offered"), style="magenta")
        total = sum(s.bets.values())
        if total:
            out.append(f" {format_money(total)}", style="cyan")
        out.append("\n")
    if model.spectators:
        out.append("  " + t("cli.render.watching", count=model.spectators) + "\n", style="dim")
    if model.bettors:  # bettors without a seat (§5): how many, their chips in the felt
        out.append("  " + t("cli.render.bettors", count=model.bettors) + "\n", style="cyan")
    out.append(t("cli.render.holder_legend") + "\n", style="dim")
    return out


def render_layout(model: TableModel, *, totals: bool = True) -> Text:
    """The bet areas with everyone's stacks (and the area totals when ``totals``)."""
    out = Text()
    area_totals = model.area_totals()
    for area in model.areas:
        name = AREA_NAMES.get(area, area)
        mine = model.my_stake.get(area, 0)
        style = (
            "red"
            if area == "banker"
            else "blue"
            if area == "player"
            else "green"
            if area == "tie"
            else ""
        )
        out.append(f"{name:<14}", style=f"bold {style}".strip())
        if totals:
            out.append(f"{format_money(area_totals.get(area, 0)):>10}", style="cyan")
        you = t("cli.render.you", amount=f"{format_money(mine):>8}")
        out.append(f"  {you}" if mine else " " * 14, style="bold yellow")
        stacks = ", ".join(
            f"{who} {format_money(v)}" for who, v in model.stacks(area) if who != t("who.you")
        )
        if stacks:
            out.append("  " + stacks[:60], style="dim")
        out.append("\n")
    return out


# ------------------------------------------------------------------------------ roads

_DERIVED_GLYPH = {"big_eye_boy": "o", "small_road": "●", "cockroach_pig": "/"}
_DERIVED = (  # (road, its title's message id)
    ("big_eye_boy", "road.eye"),
    ("small_road", "road.small"),
    ("cockroach_pig", "cli.road.pig"),
)
_COLOR_STYLE = {"red": "bold red", "blue": "bold blue"}


Grid = list[list[tuple[str, str]]]  # rows of (text, style) cells


def _window(cells: list[dict[str, Any]], width: int) -> int:
    """The first column to show so the last ``width`` columns fit."""
    last = max((int(c.get("col", 0)) for c in cells), default=-1)
    return max(0, last - width + 1)


def _place(cells: list[dict[str, Any]], rows: int, cols: int, blank: str, cell: Any) -> Grid:
    """A grid of the latest ``cols`` columns of a road; ``cell(c)`` draws one entry."""
    grid = [[(blank, "dim") for _ in range(cols)] for _ in range(rows)]
    first = _window(cells, cols)
    for c in cells:
        col, row = int(c["col"]) - first, int(c["row"])
        if 0 <= col < cols and 0 <= row < rows:
            grid[row][col] = cell(c)
    return grid


def _bead(c: dict[str, Any]) -> tuple[str, str]:
    outcome = str(c.get("outcome"))
    pair = "'" if c.get("player_pair") or c.get("banker_pair") else " "
    return OUTCOME_LETTER.get(outcome, "?") + pair, OUTCOME_STYLE.get(outcome, "")


def _big(c: dict[str, Any]) -> tuple[str, str]:
    outcome = str(c.get("outcome"))
    ties = int(c.get("ties") or 0)
    mark = str(min(ties, 9)) if ties else " "
    return OUTCOME_LETTER.get(outcome, "?") + mark, OUTCOME_STYLE.get(outcome, "")


def _emit_side_by_side(out: Text, blocks: list[tuple[str, Grid, int]]) -> None:
    """Roads next to each other: (title, grid, width in characters) each, one space apart."""
    for title, _grid, chars in blocks:
        out.append(title[:chars], style="underline")
        out.append(" " * (chars - len(title[:chars]) + 1))
    out.append("\n")
    for r in range(max(len(g) for _t, g, _w in blocks)):
        for _title, grid, _chars in blocks:
            for ch, style in grid[r]:
                out.append(ch, style=style)
            out.append(" ")
        out.append("\n")


def render_roads(roads: Mapping[str, Any], *, width: int = 24, side_by_side: bool = False) -> Text:
    """Bead plate, big road and the three derived roads, the latest columns that fit
    ``width``, with the shoe's statistics and the "ask road" predictions. With
    ``side_by_side`` the bead plate and the big road share a row (a roads screen that
    fits 24 lines)."""
    out = Text()
    rows = int(roads.get("rows") or 6)
    stats = roads.get("stats") or {}
    out.append(t("roads.title").upper(), style="bold")
    if stats:
        out.append(
            f"  coups {stats.get('coups', 0)}  B {stats.get('banker', 0)}  P {stats.get('player', 0)}"
            f"  T {stats.get('tie', 0)}  PP {stats.get('player_pair', 0)}  BP {stats.get('banker_pair', 0)}"
            f"  nat {stats.get('natural', 0)}"
        )
    out.append("\n")

    # Bead plate (one bead per coup) and big road (the tie count after an entry): two
    # characters a column.
    bead = list(roads.get("bead_plate") or [])
    big = list((roads.get("big_road") or {}).get("cells") or [])
    half = max(2, (width - 1) // 2) if side_by_side else width
    cols = max(1, half // 2)
    plates = [
        (t("road.bead"), _place(bead, rows, cols, "· ", _bead), cols * 2),
        (t("road.big"), _place(big, rows, cols, "· ", _big), cols * 2),
    ]
    if side_by_side:
        _emit_side_by_side(out, plates)
    else:
        for block in plates:
            _emit_side_by_side(out, [block])

    # Derived roads, one character per cell, side by side in thirds of the width.
    dw = max(4, (width - 2) // 3)
    derived = []
    for key, title in _DERIVED:
        cells = list((roads.get(key) or {}).get("cells") or [])
        glyph = _DERIVED_GLYPH[key]
        derived.append(
            (
                t(title),
                _place(
                    cells,
                    rows,
                    dw,
                    "·",
                    lambda c, g=glyph: (g, _COLOR_STYLE.get(str(c.get("color")), "")),
                ),
                dw,
            )
        )
    _emit_side_by_side(out, derived)

    predictions = roads.get("predictions") or {}
    if predictions:
        out.append(t("cli.roads.ask"))
        for side in ("banker", "player"):
            out.append(f"{OUTCOME_LETTER[side]}:", style=OUTCOME_STYLE[side])
            for key, _t in _DERIVED:
                color = (predictions.get(side) or {}).get(key)
                out.append(
                    _DERIVED_GLYPH[key] if color else "-", style=_COLOR_STYLE.get(str(color), "dim")
                )
            out.append("  ")
        out.append("\n")
    return out


def odds_text(odds: Mapping[str, Any] | None) -> Text:
    """The exact odds of the next coup from the cards that remain, and house edges."""
    out = Text()
    out.append(t("odds.title").upper(), style="bold")
    if not odds:
        out.append("  " + t("cli.odds.later") + "\n", style="dim")
        return out
    cards = odds.get("cards")
    out.append("  " + t("cli.odds.next", cards=cards) + "\n" if cards else "\n")

    def pct(key: str) -> str:
        v = odds.get(key)
        return f"{100 * float(v):.2f}%" if isinstance(v, int | float) else "-"

    out.append(f"{AREA_NAMES['banker']} {pct('banker')}  ", style="red")
    out.append(f"{AREA_NAMES['player']} {pct('player')}  ", style="blue")
    out.append(f"{AREA_NAMES['tie']} {pct('tie')}\n", style="green")
    out.append(
        f"P pair {pct('player_pair')}  B pair {pct('banker_pair')}  natural {pct('natural')}\n"
    )
    edges = odds.get("edges") or {}
    if edges:
        parts = []
        for area in ("banker", "player", "tie", "player_pair"):
            v = edges.get(area)
            if isinstance(v, int | float):
                parts.append(f"{AREA_NAMES.get(area, area)} {100 * float(v):+.3f}%")
        out.append(t("cli.odds.edge") + " " + "  ".join(parts) + "\n", style="dim")
    return out
