"""Languages on the web table (issue 17).

- A token with ``"language": "fr"``: the page in French — the seats, the buttons, the
  phase, the shoe, a refusal (over the maximum on Tie) — and money the French way
  (``1 000,00``, Intl.NumberFormat), ``<html lang="fr">``.
- No claim: the browser's language (``navigator.languages``: German here); the page's
  ``?lang=`` parameter before it; a choice in Options wins over both, is kept over a
  reload, and "Automatic" gives the choice back.
- Statically: every message id the page's sources use (``t("…")``, ``data-i18n``) is in
  the English catalog (the catalogs' own checks are tests/client/test_i18n.py), and
  the page's scripts (app.js, its screens, state.js) have no words of their own outside
  ``t()`` (a merge that brings in an English literal would leave it English on a French
  page).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect
from web_helpers import RELAXED, SECRET, ServerProcess, TablePage, holder_ready, server_config

from server.process.auth import make_token

# The catalog checks read files; the others drive a server subprocess and a browser (slow).

ROOT = Path(__file__).resolve().parents[2]
STATIC = ROOT / "web"
LOCALES = ROOT / "texts" / "locales"
# The page's own scripts: app.js, its screens and pieces, and the table's model.
PAGE_SCRIPTS = (
    "app.js",
    "cards.js",
    "dialogs.js",
    "dom.js",
    "lobby.js",
    "roads.js",
    "squeeze.js",
    "contribute.js",
    "table.js",
    "state.js",
    # The operator's back office (/operator/): the same catalogs, the same rule.
    "operator/backoffice.js",
    "operator/chart.js",
    "operator/replay.js",
)
NNBSP = "\u202f"  # the French group separator (CLDR), as Intl writes it

TABLES = [
    {"id": "web-fr", "name": "Chemin", "tier": "1-100", "timers": RELAXED},
    {"id": "web-de", "name": "Tisch", "tier": "1-100", "timers": RELAXED},
]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    s = ServerProcess(tmp_path_factory.mktemp("web-i18n"), server_config(TABLES)).start()
    yield s
    s.stop()


def test_every_message_id_the_page_uses_is_in_the_catalog() -> None:
    import json

    keys = set(json.loads((LOCALES / "en.json").read_text(encoding="utf-8")))
    used: set[str] = set()
    for name in (*PAGE_SCRIPTS, "i18n.js"):
        text = (STATIC / name).read_text(encoding="utf-8")
        used |= set(re.findall(r"""\bt\(\s*["'`]([a-z][a-z0-9_.]*)(?=["'`]|\$\{)""", text))
        # a message id chosen by a condition: t(cond ? "a.b" : "a.c")
        for call in re.findall(r"\bt\(([^()]*\?[^()]*)", text):
            used |= set(
                re.findall(r"""["'`]((?:page|ev|phase|area|btn|who|bo)\.[a-z0-9_.]*)["'`]""", call)
            )
    for page in ("index.html", "operator/index.html"):
        html = (STATIC / page).read_text(encoding="utf-8")
        used |= set(re.findall(r'data-i18n(?:-[a-z-]+)?="([^"]+)"', html))
    assert {"btn.sit", "page.refused.over_max", "ev.sat", "page.lobby.title"} <= used
    assert {"bo.replay.step", "bo.refused", "bo.replay.next", "bo.totals.title"} <= used
    missing = sorted(
        u
        for u in used
        if u not in keys and not any(k.startswith(u) for k in keys if u.endswith((".", "_")))
    )
    assert not missing, f"message ids the page uses that en.json lacks: {missing}"


# A string literal of the page's scripts that reads as words: two words ("seat empty"
# is a class list, after `class:`), or a capitalised word ("Connecting…").
_WORDS = re.compile(r"[A-Za-z]{2,}[ :][A-Za-z…]|^[A-Z][a-z]+")
_LITERAL_JS = re.compile(
    r"""(?<![\w$])"((?:[^"\\\n]|\\.)*)"|`((?:[^`\\]|\\.)*)`|'((?:[^'\\\n]|\\.)*)'"""
)
# Words that are not the page's to translate: postMessage types and the message a frame
# waits for (docs/embedding.md §3).
_NOT_WORDS = {"chemmy:ready", "chemmy:connect", "chemmy:token", "chemmy:status"}


def test_the_page_scripts_have_no_words_outside_the_catalogs() -> None:
    """A merge or a new feature that adds an English literal to the page's scripts
    (instead of t("id")) would leave it English on a French page."""
    found = []
    for name in PAGE_SCRIPTS:
        text = (STATIC / name).read_text(encoding="utf-8")
        text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
        for n, line in enumerate(text.splitlines(), 1):
            line = re.sub(r"(^|\s)//.*$", "", line)
            for m in _LITERAL_JS.finditer(line):
                lit = next((g for g in m.groups() if g is not None), "")
                before = line[: m.start()].rstrip()
                if before.endswith(("t(", "class:")) or lit in _NOT_WORDS:
                    continue
                if lit.startswith("{type: ") or lit.startswith("#"):
                    continue
                if _WORDS.search(re.sub(r"\$\{[^}]*\}", "", lit)):
                    found.append(f"{name}:{n}: {lit!r}")
    assert not found, "words not from the catalogs (wrap them in t()):\n" + "\n".join(found)


@pytest.mark.slow
def test_the_token_says_french(server: ServerProcess, open_page: Callable[..., Page]) -> None:
    page = open_page()
    token = make_token(SECRET, "web-marie", "Marie", ttl=3600, language="fr")
    page.goto(f"{server.http}/?token={token}&table=web-fr")
    page.locator("#table").wait_for(state="visible")
    tp = TablePage(page, "marie")
    expect(page.locator("html")).to_have_attribute("lang", "fr")
    expect(page.locator("#act-sit")).to_have_text("S'ASSEOIR")
    expect(page.locator("#seats .seat[data-seat='1'] .sit-here")).to_have_text("S'asseoir")
    expect(page.locator("#phase")).to_have_text("En attente de joueurs")
    expect(page.locator("#balance")).to_have_text(f"1{NNBSP}000,00")
    expect(page.locator("#btn-cashier")).to_have_text("Caisse")
    expect(page.locator("#you-seat")).to_contain_text("Vous regardez")
    expect(page.locator(".area[data-area='tie'] .area-name")).to_have_text("Égalité")

    holder_ready(tp, 1)
    expect(page.locator("#phase")).to_have_text("Faites vos jeux")
    expect(page.locator("#seats .seat.me .seat-name")).to_have_text("Marie (vous)")
    expect(page.locator("#act-done")).to_have_text("TERMINÉ")
    expect(page.locator("#shoe-info")).to_contain_text("Sabot 1")
    # 25,00 on Tie, over its maximum: refused, in French, with French money.
    tp.chip(3)
    tp.click("#layout .area[data-area='tie']")
    expect(page.locator("#message")).to_have_text(
        "Refusé : Au-dessus du maximum sur Égalité (15,00)", timeout=10_000
    )
    # A click that arrives after the table moved on: "too late", and where it is now
    # (issue 34 §3: not "Refusé : Trop tard : pas maintenant").
    page.evaluate("chemmyPage.cmd('accept_shoe')")
    expect(page.locator("#message")).to_have_text(
        "Trop tard — la table est passée à la suite (Faites vos jeux)"
    )
    expect(page.locator("#chips .chip[data-index='0']")).to_have_text("1")  # not "1,00"


@pytest.mark.slow
def test_the_browser_then_the_parameter_then_options(
    server: ServerProcess, open_page: Callable[..., Page]
) -> None:
    page = open_page(locale="de-DE")
    page.goto(f"{server.http}/?guest=1&name=Greta")
    expect(page.locator("html")).to_have_attribute("lang", "de")
    expect(page.locator("#lobby h1")).to_have_text("Wählen Sie Ihren Tisch")
    expect(page.locator("#tables")).to_contain_text("Schlitten")
    expect(page.locator("#btn-options")).to_have_text("Optionen")

    page.goto(f"{server.http}/?guest=1&name=Greta&lang=fr&table=web-de")  # the operator's word
    page.locator("#table").wait_for(state="visible")
    expect(page.locator("#act-sit")).to_have_text("S'ASSEOIR")

    # Options: English, chosen, wins over ?lang= and the browser, and stays over a reload.
    page.click("#btn-options")
    page.select_option("#options-form select[name='language']", "en")
    expect(page.locator("#act-sit")).to_have_text("SIT")
    expect(page.locator("#dlg-options h2")).to_have_text("Options")
    expect(page.locator("html")).to_have_attribute("lang", "en")
    page.keyboard.press("Escape")
    page.reload()
    page.locator("#table").wait_for(state="visible")
    expect(page.locator("#act-sit")).to_have_text("SIT")
    expect(page.locator("#balance")).to_have_text("1,000.00")
    # "Automatic" gives the choice back: ?lang=fr again.
    page.click("#btn-options")
    page.select_option("#options-form select[name='language']", "auto")
    expect(page.locator("#act-sit")).to_have_text("S'ASSEOIR")
    expect(page.locator("#balance")).to_have_text(f"1{NNBSP}000,00")
    expect(page.locator("#dlg-options h2")).to_have_text("Options")
    expect(page.locator("#dlg-options label").first).to_contain_text("Vitesse du jeu")


@pytest.mark.slow
def test_state_js_follows_the_language(
    server: ServerProcess, open_page: Callable[..., Page]
) -> None:
    page = open_page(f"{server.http}/?guest=1")
    got: Any = page.evaluate(
        """async () => {
          const i18n = await import('/i18n.js');
          const m = await import('/state.js');
          const en = [m.formatMoney(123456), m.AREA_NAMES.tie, m.resultText({outcome: 'banker', banker_total: 7, player_total: 5})];
          await i18n.setLanguage('de');
          const de = [m.formatMoney(123456), m.AREA_NAMES.tie, m.resultText({outcome: 'banker', banker_total: 7, player_total: 5}), m.parseMoney('1.234,5')];
          await i18n.setLanguage('en');
          return [en, de];
        }"""
    )
    assert got == [
        ["1,234.56", "Tie", "Banker wins 7 to 5"],
        ["1.234,56", "Unentschieden", "Bank gewinnt 7 zu 5", 123450],
    ]


# ---------------------------------------------------------------------------- issue 34 §3

# Every text the message display and the Available show, from the page's first script on
# (a screen that showed English for a moment showed English).
DISPLAY_SPY = """
window.__shown = { message: [], balance: [] };
addEventListener("DOMContentLoaded", () => {
  for (const [key, sel] of [["message", "#message"], ["balance", "#balance"]]) {
    const el = document.querySelector(sel);
    const seen = () => { if (el.textContent && el.textContent !== window.__shown[key].at(-1)) window.__shown[key].push(el.textContent); };
    new MutationObserver(seen).observe(el, { childList: true, characterData: true, subtree: true });
  }
});
"""


def catalog(lang: str) -> dict[str, str]:
    import json

    return dict(json.loads((LOCALES / f"{lang}.json").read_text(encoding="utf-8")))


@pytest.mark.slow  # a server subprocess and a browser: seconds
def test_the_tokens_language_from_the_first_frame(
    server: ServerProcess, open_page: Callable[..., Page]
) -> None:
    """Issue 34 §3: "Connected as Marie" came in English on a French page, every time,
    and the bottom bar's money in the browser's way: the token's language is now loaded
    before anything is drawn."""
    page = open_page(locale="en-US")
    page.add_init_script(DISPLAY_SPY)
    token = make_token(SECRET, "web-marie2", "Marie", ttl=3600, language="fr")
    page.goto(f"{server.http}/?token={token}")
    expect(page.locator("#lobby h1")).to_have_text("Choisissez votre table")
    expect(page.locator("#balance")).to_have_text(f"1{NNBSP}000,00")
    shown = page.evaluate("window.__shown")
    assert not [m for m in shown["message"] if m.startswith("Connected as")], shown["message"]
    assert "Connecté en tant que Marie" in shown["message"], shown["message"]
    french = f"1{NNBSP}000,00"
    assert french in shown["balance"], shown["balance"]
    assert set(shown["balance"]) <= {french, "\u2013"}, shown["balance"]  # never "1,000.00"


@pytest.mark.slow  # a server subprocess and a browser: seconds
def test_counts_and_phrases_follow_the_languages_plural_rules(
    server: ServerProcess, open_page: Callable[..., Page]
) -> None:
    """Issue 34 §3: the page's sentences with a count take CLDR's plural forms
    (Intl.PluralRules): not "1 cards burned face down", "1 players' randomness", "You
    have played for 1 minutes"; your own reveal is yours; a net of zero from bets won
    and lost breaks even (a push is every bet pushed)."""
    page = open_page(f"{server.http}/?guest=1")
    got = page.evaluate(
        """async () => {
          const i18n = await import('/i18n.js');
          const m = await import('/state.js');
          const d = await import('/dialogs.js');
          const notes = (s, kind, data) => s.apply(kind, data).map((n) => n.text);
          const run = () => {
            const s = new m.TableState('me');
            s.load({ table: 'x', phase: 'betting', seats: [{ seat: 1, player: 'me', name: 'Me' }], you: { player: 'me', actions: {} } });
            const out = {};
            out.burned1 = notes(s, 'burned', { card: 'Td', count: 1 })[0];
            out.burned3 = notes(s, 'burned', { card: 'Td', count: 3 })[0];
            out.ended1 = notes(s, 'shoe_ended', { shoe_no: 4, coups: [{}] })[0];
            out.mine = notes(s, 'contribution_revealed', { player: 'me', value: 'ab' })[0];
            out.randomness1 = i18n.t('page.shoe.randomness', { count: 1 });
            out.minute = d.realityText({ session_seconds: 61 });
            out.second = d.realityText({ session_seconds: 1 });
            s.apply('betting_closed', { round_id: 'x-1-1', bets: { me: { banker: 100, player: 100 } } });
            s.apply('result', { outcome: 'banker', banker_total: 7, player_total: 5 });
            out.even = notes(s, 'settled', { net: 0, payouts: [
              { player: 'me', area: 'banker', outcome: 'win' }, { player: 'me', area: 'player', outcome: 'lose' }] })[0];
            return out;
          };
          const en = run();
          await i18n.setLanguage('fr');
          const fr = run();
          await i18n.setLanguage('en');
          return { en, fr };
        }"""
    )
    en, fr = got["en"], got["fr"]
    assert en["burned1"] == "Burn card 10♦: 1 card burned face down"
    assert en["burned3"] == "Burn card 10♦: 3 cards burned face down"
    assert en["ended1"].endswith("(1 coup)")
    assert en["mine"] == "You revealed your randomness"
    assert en["randomness1"] == "1 player's randomness in this shoe"
    assert en["minute"] == "You have played for 1 minute."
    assert en["second"] == "You have played for 1 second."
    assert en["even"] == "Banker wins 7 to 5 — You break even"
    assert fr["burned1"] == "Carte brûlée 10♦ : 1 carte brûlée face cachée"
    assert fr["ended1"].endswith("(1 coup)")
    assert fr["mine"] == "Vous avez révélé votre aléa"
    assert fr["minute"] == "Vous jouez depuis 1 minute."


@pytest.mark.slow  # a server subprocess and a browser: seconds
def test_french_roads_and_ask_buttons_and_a_language_chosen_at_once(
    server: ServerProcess, open_page: Callable[..., Page]
) -> None:
    """Issue 34 §3 and §7: a French page's roads write Joueur, Banque, Égalité as J, B, É
    (as its stats line) and its "ask" buttons "B ?" and "J ?"; the result is said once
    in the log; after Options → Deutsch the message display speaks German at once (it
    stayed French until the next event)."""
    page = open_page()
    token = make_token(SECRET, "web-jules", "Jules", ttl=3600, language="fr")
    page.goto(f"{server.http}/?token={token}&table=web-de")
    page.locator("#table").wait_for(state="visible")
    tp = TablePage(page, "jules")
    holder_ready(tp, 2)
    tp.bet("banker")
    round_id = tp.round_id()
    tp.click("#act-done")
    tp.toss_until_settled(round_id)
    outcome = tp.state("s.lastResult.outcome")
    letter = {"banker": "B", "player": "J", "tie": "É"}[outcome]
    expect(page.locator("#road-bead .bead").first).to_have_text(letter)
    expect(page.locator("#road-ask .ask")).to_have_count(2)
    expect(page.locator("#road-ask .ask.banker")).to_contain_text("B ?")
    expect(page.locator("#road-ask .ask.player")).to_contain_text("J ?")
    # The coup's result is in the log once (it came three times: result, settled and
    # the next coup's betting).
    result = tp.state("s.resultLine").split(" — ")[0]
    logged = page.locator("#log li").all_inner_texts()
    assert sum(result in line for line in logged) == 1, logged
    # Options → Deutsch: the display in German at once.
    before = tp.text("#message")
    page.click("#btn-options")
    page.select_option("#options-form select[name='language']", "de")
    page.keyboard.press("Escape")
    phase = tp.state("s.phase")
    de = catalog("de")
    wanted = de.get(f"phase_sentence.{phase}") or tp.state("s.resultLine")
    expect(page.locator("#message")).to_have_text(wanted)
    assert tp.text("#message") != before
