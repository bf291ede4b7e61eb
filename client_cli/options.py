"""The player's Options (seed 000's Options window), kept between runs of ``chemmy play``.

- **Game speed** 1-5 (default 4): how fast the squeeze animates;
- **Chip balloons** (default on): each bet area shows the total of everyone's chips;
- **Sound effects** (default on): the terminal bell on your turn, on a win, on a refusal;
- **Voices** (default on): the croupier's announcements ("You won 9.50", "Your turn")
  pop up as notices, besides the message line;
- **Language** (default ``"auto"``): ``"en"``, ``"fr"`` or ``"de"`` once chosen, which
  wins over the token's ``language`` and the terminal's locale; ``"auto"`` follows them
  (:func:`client_cli.i18n.choose_language`).

They are saved as a small JSON file: ``$CHEMMY_CLIENT_OPTIONS`` if set (tests use it),
else ``$XDG_CONFIG_HOME/chemmy/options.json``, else ``~/.config/chemmy/options.json``.

This module must never take the client down over that file: a missing file gives the
defaults, an unreadable or malformed one the defaults and a warning, and a value out of
range (or an unknown key) is dropped. Saving raises :class:`OSError` for the caller to
report. No other I/O.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from client_cli.i18n import LANGUAGES

__all__ = ["OPTIONS_ENV", "Options", "load_options", "options_path", "save_options"]

OPTIONS_ENV = "CHEMMY_CLIENT_OPTIONS"
SPEEDS = range(1, 6)


@dataclass(frozen=True)
class Options:
    """The player's options; change them with :func:`dataclasses.replace`."""

    speed: int = 4  # game speed: animation 1 (slow) .. 5 (fast)
    chip_totals: bool = True  # chip balloons: each area's total of everyone's chips
    bell: bool = True  # sound effects: the terminal bell
    voices: bool = True  # the croupier's announcements as pop-up notices
    language: str = "auto"  # "auto" (the token's, else the locale's) or a catalog's

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any]) -> tuple[Options, list[str]]:
        """Options from a saved map, and what was dropped from it (unknown keys, values
        of the wrong type or out of range keep their defaults)."""
        kept: dict[str, Any] = {}
        dropped: list[str] = []
        known = {f.name for f in fields(cls)}
        for key, value in raw.items():
            if key in known and _valid(key, value):
                kept[key] = value
            else:
                dropped.append(str(key))
        return cls(**kept), dropped


def _valid(key: str, value: object) -> bool:
    if key == "speed":
        return type(value) is int and value in SPEEDS
    if key == "language":
        return value == "auto" or value in LANGUAGES
    return isinstance(value, bool)


def options_path(environ: Mapping[str, str] | None = None) -> Path:
    """Where the options live (see the module docstring)."""
    env = os.environ if environ is None else environ
    if env.get(OPTIONS_ENV):
        return Path(env[OPTIONS_ENV])
    base = env.get("XDG_CONFIG_HOME") or str(Path(env.get("HOME") or Path.home()) / ".config")
    return Path(base) / "chemmy" / "options.json"


def load_options(path: Path | None = None) -> tuple[Options, str | None]:
    """The saved options (the defaults when there are none), and a warning to show
    when the file could not be used as it is."""
    path = path or options_path()
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return Options(), None
    except (OSError, UnicodeDecodeError) as exc:
        return Options(), f"options not read from {path}: {exc}"
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        return Options(), f"options not read from {path}: not JSON ({exc})"
    if not isinstance(raw, dict):
        return Options(), f"options not read from {path}: not a JSON object"
    options, dropped = Options.from_dict(raw)
    warning = f"options in {path}: ignored {', '.join(dropped)}" if dropped else None
    return options, warning


def save_options(options: Options, path: Path | None = None) -> Path:
    """Write the options (creating the folder); replaces the file at once, so a crash
    never leaves half a file. Raises :class:`OSError`."""
    path = path or options_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(options.to_dict(), indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, path)
    return path
