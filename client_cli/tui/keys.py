"""The terminal client's key map: every key and button label in one place.

The screens take their ``BINDINGS`` from here, and the table's buttons their labels, so
a key is changed once and the help line, the footer and the buttons agree. Keys only
name actions; what an action may do is the server's answer (``model.actions``).
"""

from __future__ import annotations

from textual.binding import Binding, BindingType

__all__ = [
    "ACTION_BUTTONS",
    "AREA_KEYS",
    "AREA_LABELS",
    "LOBBY_KEYS",
    "SQUEEZE_BUTTONS",
    "TABLE_KEYS",
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
AREA_LABELS = {
    "player": "PLAYER",
    "banker": "BANKER",
    "tie": "TIE",
    "player_pair": "P PAIR",
    "banker_pair": "B PAIR",
    "super6": "SUPER 6",
    "dragon_player": "DRAGON P",
    "dragon_banker": "DRAGON B",
}

#: The action bar: (button id suffix, label, the action it runs: the same as its key's).
ACTION_BUTTONS: tuple[tuple[str, str, str], ...] = (
    ("regret", "REGRET r", "regret"),
    ("clear", "CLEAR c", "clear"),
    ("same", "SAME BET a", "send('same_bet')"),
    ("done", "DONE d", "send('done')"),
    ("sit", "SIT s", "sit_stand"),
    ("accept", "ACCEPT y", "send('accept_shoe')"),
    ("decline", "DECLINE n", "send('decline_shoe')"),
    ("pass", "PASS g", "send('pass_shoe')"),
    ("cut", "CUT u", "cut"),
)
#: The squeeze bar, the same way.
SQUEEZE_BUTTONS: tuple[tuple[str, str, str], ...] = (
    ("toss", "TOSS ␣", "toss"),
    ("peek", "PEEK e", "squeeze('peek')"),
    ("side", "SIDE i", "squeeze('side')"),
    ("quick", "QUICK k", "squeeze('quick')"),
    ("card1", "CARD 1", "card(1)"),
    ("card2", "CARD 2", "card(2)"),
)

LOBBY_KEYS: list[BindingType] = [
    Binding("r", "refresh", "Refresh"),
    Binding("enter", "join", "Join", show=True),
    Binding("question_mark", "app.help", "Help"),
    Binding("h", "app.history", "History"),
    Binding("o", "app.options", "Options"),
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
    Binding("l", "leave", "Lobby"),
    Binding("q", "app.quit", "Quit"),
]
