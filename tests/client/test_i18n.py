"""Languages (issue 17): the catalogs the page and the terminal client share, every
message id the sources use, money per language, and the terminal client in French
under ``LANG=fr_FR.UTF-8``, in German when chosen in Options, and in the token's
``language`` before the locale's."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from client_helpers import at_table, model_of, text_of, until

from client_cli import i18n
from client_cli.i18n import (
    LANGUAGES,
    catalog,
    choose_language,
    locale_language,
    placeholders,
    refusal_text,
    set_language,
    t,
)
from client_cli.money import format_money, parse_money
from client_cli.sentences import result_text, settled
from client_cli.tui import ChemmyApp, Options, TableScreen

ROOT = Path(__file__).resolve().parents[2]
LOCALES = ROOT / "texts" / "locales"


@pytest.fixture(autouse=True)
def english_after() -> Iterator[None]:
    """The language is the process's: every test leaves it English."""
    yield
    set_language("en")


# ---------------------------------------------------------------------------- the catalogs


def test_one_catalog_per_language_with_exactly_the_english_keys_and_placeholders() -> None:
    files = sorted(p.stem for p in LOCALES.glob("*.json"))
    assert files == sorted(LANGUAGES) and len(LANGUAGES) >= 3 and "fr" in LANGUAGES
    en = json.loads((LOCALES / "en.json").read_text(encoding="utf-8"))
    for lang in LANGUAGES:
        words = json.loads((LOCALES / f"{lang}.json").read_text(encoding="utf-8"))
        assert set(words) == set(en), f"{lang}: {sorted(set(words) ^ set(en))}"
        for key, text in en.items():
            assert isinstance(words[key], str) and words[key].strip(), (lang, key)
            assert placeholders(words[key]) == placeholders(text), (lang, key)
        if lang != "en":  # translated, not copied (a few words are the same: "Options")
            same = [k for k in en if words[k] == en[k]]
            assert len(same) < len(en) // 5, f"{lang} copies English: {same}"


def _namespaces() -> set[str]:
    return {key.split(".", 1)[0] for key in catalog("en")}


def used_ids(text: str, pattern: str) -> set[str]:
    return set(re.findall(pattern, text))


# A message id in the sources: a quoted literal "ns.rest" whose namespace is one of the
# catalog's; a dynamic one (an f-string, a template, a prefix for LocalNames) ends in
# "." or stops at the first "{" / "${", and must then be the prefix of some id.
_LITERAL = r"""["'`]([a-z][a-z0-9_]*\.[a-z0-9_.]*)(?=["'`]|\$?\{)"""


def _check(ids: set[str], where: str) -> None:
    keys = set(catalog("en"))
    namespaces = _namespaces()
    missing = []
    for ident in ids:
        if ident.split(".", 1)[0] not in namespaces or re.search(
            r"\.(json|js|md|css|html)$", ident
        ):
            continue
        if ident in keys or (
            (ident.endswith(".") or ident.endswith("_")) and any(k.startswith(ident) for k in keys)
        ):
            continue
        missing.append(ident)
    assert not missing, f"{where} uses message ids not in en.json: {sorted(missing)}"


def test_every_message_id_the_terminal_client_uses_exists() -> None:
    ids: set[str] = set()
    for path in (ROOT / "client_cli").rglob("*.py"):
        ids |= used_ids(path.read_text(encoding="utf-8"), _LITERAL)
    assert {"ev.sat", "cli.lobby.title", "btn.regret", "error."} & ids
    _check(ids, "client_cli")


# ---------------------------------------------------------------------------- choosing


def test_the_choice_options_then_token_then_locale_then_english() -> None:
    fr = {"LANG": "fr_FR.UTF-8"}
    assert choose_language("auto", None, fr) == "fr"
    assert choose_language("auto", "de-CH", fr) == "de"  # the operator's word first
    assert choose_language("en", "de", fr) == "en"  # then the player's, once chosen
    assert choose_language("auto", "ja", {}) == "en"  # no catalog: English
    assert choose_language(None, None, {"LANG": "C.UTF-8"}) == "en"
    assert locale_language({"LANGUAGE": "ja:de", "LANG": "fr_FR.UTF-8"}) == "de"
    assert locale_language({"LC_ALL": "de_DE.UTF-8", "LANG": "fr_FR.UTF-8"}) == "de"
    assert locale_language({"LC_ALL": "C", "LANG": "fr_FR"}) is None  # LC_ALL decides


def test_french_words_money_and_refusals() -> None:
    assert format_money(123456) == "1,234.56" and parse_money("1,000.25") == 100025
    set_language("fr")
    assert format_money(123456) == "1\u202f234,56"
    assert format_money(-5) == "-0,05" and format_money(250, sign=True) == "+2,50"
    assert parse_money("12,5") == 1250 and parse_money("1 234,56") == 123456
    assert parse_money(format_money(100000000)) == 100000000
    result = {"outcome": "banker", "banker_total": 7, "player_total": 5, "natural": True}
    assert result_text(result) == "La Banque gagne 7 à 5 (naturel)"
    assert settled(result, 950) == "La Banque gagne 7 à 5 (naturel) — Vous gagnez 9,50"
    assert t("ev.sat", name="Ann", seat=3) == "Ann prend la place 3"
    assert refusal_text("wrong_phase", "not now: the table is betting") == "pas maintenant"
    assert refusal_text("new_code", "a new refusal") == "a new refusal"  # not yet translated
    set_language("de")
    assert format_money(123456) == "1.234,56" and parse_money("1.234,56") == 123456
    set_language("en")
    assert refusal_text("wrong_phase", "not now: the table is betting") == (
        "not now: the table is betting"  # the server's own, more precise, in English
    )


# ---------------------------------------------------------------------------- the terminal


def _locale(monkeypatch: pytest.MonkeyPatch, lang: str) -> None:
    for var in i18n.LOCALE_VARIABLES:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("LANG", lang)


async def _sit_and_look(app: ChemmyApp) -> dict[str, str]:
    async with app.run_test(size=(150, 45)) as pilot:
        await at_table(pilot, app)
        await pilot.press("s")
        await until(pilot, lambda: model_of(app).seated, "a seat")
        screen = app.screen
        assert isinstance(screen, TableScreen)
        seen = {
            "status": text_of(app, "#status"),
            "you": text_of(app, "#you"),
            "seats": text_of(app, "#seats"),
            "message": model_of(app).message,
            "done": str(screen.query_one("#act-done").render()),
            "regret": str(screen.query_one("#act-regret").render()),
            "identity": app.identity_text(),  # the lobby's status line names the player
            # the words the footer shows for the keys
            "footer": [
                b.description for (_n, b, _e, _t) in screen.active_bindings.values() if b.show
            ],
        }
        await pilot.press("s")  # stand again, for the next test
        await until(pilot, lambda: not model_of(app).seated, "standing")
        await app.action_quit()
    return seen


@pytest.mark.slow
async def test_the_terminal_speaks_french_under_a_french_locale(
    chemmy_server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    _locale(monkeypatch, "fr_FR.UTF-8")
    app = ChemmyApp(chemmy_server.url, guest=True, name="Ninon", table="tui-i18n")
    seen = await _sit_and_look(app)
    assert "Vous : Ninon" in seen["you"] and "solde 1\u202f000,00" in seen["you"]
    assert "PLACES" in seen["seats"]
    assert "TERMINÉ d" in seen["done"] and "REPRENDRE r" in seen["regret"]
    assert {"Tableaux", "Salle", "Quitter", "Historique"} <= set(seen["footer"]), seen["footer"]
    assert seen["identity"].startswith("invité Ninon (guest-") and "· solde " in seen["identity"]
    assert not {"Roads", "Lobby", "Quit", "History"} & set(seen["footer"]), seen["footer"]
    assert "coup " in seen["status"] and "égalité ≤" in seen["status"]
    assert any(w in seen["message"] for w in ("Vous prenez la place", "Sabot", "sabot", "jeux"))


@pytest.mark.slow
async def test_options_choose_over_the_locale_and_the_token_over_the_locale(
    chemmy_server: Any, monkeypatch: pytest.MonkeyPatch, make_token: Callable[..., str]
) -> None:
    _locale(monkeypatch, "fr_FR.UTF-8")
    app = ChemmyApp(
        chemmy_server.url, guest=True, name="Dora", table="tui-i18n", options=Options(language="de")
    )
    seen = await _sit_and_look(app)
    assert "Sie: Dora" in seen["you"] and "FERTIG d" in seen["done"]
    assert {"Tafeln", "Beenden"} <= set(seen["footer"]), seen["footer"]

    _locale(monkeypatch, "C.UTF-8")
    token = make_token("i18n-marie", "Marie", language="fr")
    app = ChemmyApp(chemmy_server.url, token=token, table="tui-i18n")
    seen = await _sit_and_look(app)
    assert "Vous : Marie" in seen["you"] and "TERMINÉ d" in seen["done"]


async def test_a_language_chosen_in_options_is_used_at_once_and_saved(
    chemmy_server: Any, monkeypatch: pytest.MonkeyPatch, client_options_file: Path
) -> None:
    from textual.widgets import Select, Static

    from client_cli.tui import OptionsScreen

    _locale(monkeypatch, "de_DE.UTF-8")
    app = ChemmyApp(chemmy_server.url, guest=True, name="Olga")
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: app.conn.identity is not None, "hello")
        title = app.lobby.query_one("#lobby-title", Static)
        assert "wählen Sie einen Tisch" in str(title.render())
        await pilot.press("o")
        await until(pilot, lambda: isinstance(app.screen, OptionsScreen), "the options")
        app.screen.query_one("#opt-language", Select).value = "fr"
        await until(pilot, lambda: app.options.language == "fr", "French chosen")
        assert "choisissez une table" in str(title.render())
        await pilot.press("escape")
        await app.action_quit()
    assert json.loads(client_options_file.read_text())["language"] == "fr"
