"""The drawings of cards, the squeeze, seats, the layout, the roads and the odds."""

from __future__ import annotations

from client_helpers import loaded, play_a_coup

from client_cli.render import (
    card_art,
    odds_text,
    render_hands,
    render_layout,
    render_roads,
    render_seats,
    squeeze_art,
)
from client_cli.tui import chip_values
from server.engine.roads import parse_results, roads


def test_drawings() -> None:
    assert card_art("Td")[1] == "│10     │" and len(card_art(None)) == 7
    assert all(len(line) == 9 for line in squeeze_art("9h", "peek", 40))
    assert "9" not in "".join(squeeze_art("9h", "side", 0)) and "9" in "".join(
        squeeze_art("9h", "side", 100)
    )
    quick = squeeze_art("9h", "quick", 40)
    assert "9" in quick[5] and "9" not in quick[1]  # the bottom first
    m = play_a_coup(loaded())
    hands = render_hands(m).plain
    assert "PLAYER  9" in hands and "BANKER  7" in hands and "You won 10.00" in hands
    seats = render_seats(m).plain
    assert next(line for line in seats.splitlines() if "Bo" in line).startswith("◆")
    assert "Player" in render_layout(m).plain
    road = render_roads(roads(parse_results("BPPPBTB")), width=20).plain
    assert "Bead plate" in road and "Big road" in road and "Big eye boy"[:6] in road
    assert "B1" in road  # the tie counted on the latest Banker entry
    assert "Banker 45.00%" in odds_text({"banker": 0.45, "player": 0.44, "tie": 0.11}).plain
    assert chip_values(m) == [100, 500, 1000, 2500, 5000]
