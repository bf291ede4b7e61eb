"""The terminal client's key map: every key and button label in one place.

The screens take their ``BINDINGS`` from here, and the table's buttons their labels (in
the current language: message ids of the catalogs, :mod:`client_cli.i18n`), so a key is
changed once and the help line, the footer and the buttons agree. The footer's words
are English for now: Textual reads a binding's description once. Keys only
name actions; what an action may do is the server's answer (``model.actions``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING

from textual.binding import Binding, BindingType

from client_cli.i18n import LocalNames, t

if TYPE_CHECKING:
    from textual.dom import DOMNode

__all__ = [
    "ACTION_BUTTONS",
    "AREA_KEYS",
    "AREA_LABELS",
    "LOBBY_KEYS",
    "SQUEEZE_BUTTONS",
    "TABLE_KEYS",
    "button_label",
]

AREA_KEYS = {
    "player": "p",
    "banker": "b",
    "tie": "t",
    "player_pair": "[",
    "banker_pair": "]",
    "super6": "6",
    "dragon_player": "{",
    "dragon_banker": "}",
}
#: The bet buttons' labels, in the current language (``cli.area.*``).
AREA_LABELS: Mapping[str, str] = LocalNames("cli.area.", tuple(AREA_KEYS))

#: The action bar: (button id suffix, its label's message id, its key as shown, the
#: action it runs: the same as its key's).
ACTION_BUTTONS: tuple[tuple[str, str, str, str], ...] = (
    ("regret", "btn.regret", "r", "regret"),
    ("clear", "btn.clear", "c", "clear"),
    ("same", "btn.same", "a", "send('same_bet')"),
    ("done", "btn.done", "d", "send('done')"),
    ("sit", "btn.sit", "s", "sit_stand"),
    ("accept", "btn.accept", "y", "send('accept_shoe')"),
    ("decline", "btn.decline", "n", "send('decline_shoe')"),
    ("pass", "cli.btn.pass", "g", "send('pass_shoe')"),
    ("cut", "btn.cut", "u", "cut"),
)
#: The squeeze bar, the same way.
SQUEEZE_BUTTONS: tuple[tuple[str, str, str, str], ...] = (
    ("toss", "btn.toss", "␣", "toss"),
    ("peek", "btn.peek", "e", "squeeze('peek')"),
    ("side", "btn.side", "i", "squeeze('side')"),
    ("quick", "btn.quick", "k", "squeeze('quick')"),
    ("card1", "btn.card", "", "card(1)"),
    ("card2", "btn.card", "", "card(2)"),
)


def button_label(message_id: str, key: str, **params: object) -> str:
    """A button's words in the current language, then its key: ``REGRET r``."""
    text = t(message_id, **params)
    return f"{text} {key}" if key else text


LOBBY_KEYS: list[BindingType] = [
    Binding("r", "refresh", "Refresh"),
    Binding("enter", "join", "Join", show=True),
    Binding("question_mark", "app.help", "Help"),
    Binding("h", "app.history", "History"),
    Binding("o", "app.options", "Options"),
    Binding("x", "app.responsible", "Take a break"),
    Binding("escape", "back", "Back to your tables", show=False),
    Binding("q", "app.quit", "Quit"),
]

TABLE_KEYS: list[BindingType] = [
    Binding("1", "digit(1)", "Chip 1", show=False),
    Binding("2", "digit(2)", "Chip 2", show=False),
    Binding("3", "digit(3)", "Chip 3", show=False),
    Binding("4", "digit(4)", "Chip 4", show=False),
    Binding("5", "digit(5)", "Chip 5", show=False),
    Binding("p", "place('player')", "Player", show=False),
    Binding("b", "place('banker')", "Banker", show=False),
    Binding("t", "place('tie')", "Tie", show=False),
    Binding("left_square_bracket", "place('player_pair')", "P pair", show=False),
    Binding("right_square_bracket", "place('banker_pair')", "B pair", show=False),
    Binding("6", "place('super6')", "Super 6", show=False),
    Binding("left_curly_bracket", "place('dragon_player')", "Dragon P", show=False),
    Binding("right_curly_bracket", "place('dragon_banker')", "Dragon B", show=False),
    Binding("r", "regret", "Regret", show=False),
    Binding("c", "clear", "Clear", show=False),
    Binding("a", "send('same_bet')", "Same bet", show=False),
    Binding("d", "send('done')", "DONE"),
    Binding("s", "sit_stand", "Sit/Stand"),
    Binding("y", "send('accept_shoe')", "Accept shoe", show=False),
    Binding("n", "send('decline_shoe')", "Decline shoe", show=False),
    Binding("g", "send('pass_shoe')", "Pass shoe", show=False),
    Binding("u", "cut", "Cut", show=False),
    Binding("space", "toss", "TOSS", show=False),
    Binding("e", "squeeze('peek')", "PEEK", show=False),
    Binding("i", "squeeze('side')", "SIDE", show=False),
    Binding("k", "squeeze('quick')", "QUICK", show=False),
    Binding("m", "chat", "Chat"),
    Binding("v", "roads", "Roads"),
    Binding("h", "app.history", "History"),
    Binding("question_mark", "app.help", "Help"),
    Binding("o", "app.options", "Options"),
    Binding("x", "app.responsible", "Take a break", show=False),
    Binding("l", "leave", "Lobby"),
    Binding("j", "tables", "Join a table", show=False),
    Binding("tab", "next_table(1)", "Next table", show=False),
    Binding("shift+tab", "next_table(-1)", "Previous table", show=False),
    Binding("f1", "show_table(1)", "Table 1", show=False),
    Binding("f2", "show_table(2)", "Table 2", show=False),
    Binding("f3", "show_table(3)", "Table 3", show=False),
    Binding("f4", "show_table(4)", "Table 4", show=False),
    Binding("q", "app.quit", "Quit"),
]

#: The words of each key's action in the footer (message ids): :func:`relabel_keys`.
KEY_WORDS: Mapping[str, str] = {
    "refresh": "cli.key.refresh",
    "join": "cli.key.join",
    "app.help": "cli.key.help",
    "app.history": "cli.key.history",
    "app.options": "cli.key.options",
    "app.responsible": "cli.key.responsible",
    "app.quit": "cli.key.quit",
    "digit(1)": "cli.key.chip1",
    "digit(2)": "cli.key.chip2",
    "digit(3)": "cli.key.chip3",
    "digit(4)": "cli.key.chip4",
    "digit(5)": "cli.key.chip5",
    "place('player')": "cli.key.player",
    "place('banker')": "cli.key.banker",
    "place('tie')": "cli.key.tie",
    "place('player_pair')": "cli.key.player_pair",
    "place('banker_pair')": "cli.key.banker_pair",
    "place('super6')": "cli.key.super6",
    "place('dragon_player')": "cli.key.dragon_player",
    "place('dragon_banker')": "cli.key.dragon_banker",
    "regret": "cli.key.regret",
    "clear": "cli.key.clear",
    "send('same_bet')": "cli.key.same_bet",
    "send('done')": "cli.key.done",
    "sit_stand": "cli.key.sit_stand",
    "send('accept_shoe')": "cli.key.accept_shoe",
    "send('decline_shoe')": "cli.key.decline_shoe",
    "send('pass_shoe')": "cli.key.pass_shoe",
    "cut": "cli.key.cut",
    "toss": "cli.key.toss",
    "squeeze('peek')": "cli.key.peek",
    "squeeze('side')": "cli.key.side",
    "squeeze('quick')": "cli.key.quick",
    "chat": "cli.key.chat",
    "roads": "cli.key.roads",
    "leave": "cli.key.leave",
    "tables": "cli.key.tables",
    "next_table(1)": "cli.key.next_table",
    "next_table(-1)": "cli.key.previous_table",
    "show_table(1)": "cli.key.table1",
    "show_table(2)": "cli.key.table2",
    "show_table(3)": "cli.key.table3",
    "show_table(4)": "cli.key.table4",
    "back": "cli.key.back",
}


def relabel_keys(node: DOMNode) -> None:
    """Put ``node``'s key bindings in the current language (the footer shows their
    words); the bindings are the same, only their descriptions change."""
    keymap = node._bindings.key_to_bindings
    for key, bound in keymap.items():
        keymap[key] = [
            replace(b, description=t(KEY_WORDS[b.action])) if b.action in KEY_WORDS else b
            for b in bound
        ]
    node.refresh_bindings()
