"""The client's Options (seed 000: game speed, chip balloons, sound effects, voices),
saved between runs: the file's place, reading it forgivingly, writing it whole; and in
the headless app, a change on the Options screen is there at the next start."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from client_helpers import until
from textual.widgets import Label

from client_cli.options import OPTIONS_ENV, Options, load_options, options_path, save_options
from client_cli.tui import ChemmyApp, OptionsScreen


def test_where_the_options_live(tmp_path: Path) -> None:
    home = {"HOME": str(tmp_path / "home")}
    assert options_path(home) == tmp_path / "home" / ".config" / "chemmy" / "options.json"
    xdg = {**home, "XDG_CONFIG_HOME": str(tmp_path / "xdg")}
    assert options_path(xdg) == tmp_path / "xdg" / "chemmy" / "options.json"
    named = {**xdg, OPTIONS_ENV: str(tmp_path / "mine.json")}
    assert options_path(named) == tmp_path / "mine.json"


def test_the_defaults_are_seed_000s(tmp_path: Path) -> None:
    options, warning = load_options(tmp_path / "none.json")
    assert options == Options(speed=4, chip_totals=True, bell=True, voices=True)
    assert warning is None


def test_saved_and_read_back(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "folder" / "options.json"
    mine = Options(speed=2, chip_totals=False, bell=False, voices=True)
    assert save_options(mine, path) == path
    assert json.loads(path.read_text()) == {
        "speed": 2,
        "chip_totals": False,
        "bell": False,
        "voices": True,
        "language": "auto",  # follows the token and the locale until chosen (issue 17)
    }
    assert load_options(path) == (mine, None)
    assert [p.name for p in path.parent.iterdir()] == ["options.json"]  # no temporary left


@pytest.mark.parametrize(
    ("text", "expect", "said"),
    [
        ("{not json", Options(), "not JSON"),
        ("[1, 2]", Options(), "not a JSON object"),
        ('{"speed": 9, "bell": false}', Options(bell=False), "speed"),
        ('{"speed": true, "voices": "no"}', Options(), "speed, voices"),
        ('{"speed": 1, "colour": "red"}', Options(speed=1), "colour"),
    ],
)
def test_a_bad_file_gives_the_defaults_and_says_why(
    tmp_path: Path, text: str, expect: Options, said: str
) -> None:
    path = tmp_path / "options.json"
    path.write_text(text)
    options, warning = load_options(path)
    assert options == expect
    assert warning is not None and said in warning and str(path) in warning


def test_an_unreadable_file_and_an_unwritable_folder(tmp_path: Path) -> None:
    folder = tmp_path / "options.json"
    folder.mkdir()  # a folder where the file should be: cannot be read or replaced
    options, warning = load_options(folder)
    assert options == Options() and warning is not None
    with pytest.raises(OSError):
        save_options(Options(), folder)


@pytest.mark.slow
async def test_options_changed_on_the_screen_are_there_next_time(
    chemmy_server: Any, client_options_file: Path
) -> None:
    client_options_file.write_text(json.dumps({"speed": 2, "bell": False}))
    app = ChemmyApp(chemmy_server.url, guest=True, name="Opal")
    async with app.run_test(size=(100, 30)) as pilot:
        assert app.options == Options(speed=2, bell=False)
        await pilot.press("o")
        await until(pilot, lambda: isinstance(app.screen, OptionsScreen), "the options")
        await pilot.press("plus")
        assert str(app.screen.query_one("#speed", Label).render()) == "3"
        await pilot.click("#opt-voices")
        await until(pilot, lambda: not app.options.voices, "voices off")
        await pilot.press("escape")
        await app.action_quit()
    saved = json.loads(client_options_file.read_text())
    assert saved == {
        "speed": 3,
        "chip_totals": True,
        "bell": False,
        "voices": False,
        "language": "auto",
    }

    again = ChemmyApp(chemmy_server.url, guest=True, name="Opal")
    assert again.options == Options(speed=3, chip_totals=True, bell=False, voices=False)
