"""The terminal client's words in the player's language: message catalogs and the choice.

The catalogs are the texts both clients share (``texts/locales/<language>.json``): one
JSON object per language, message id -> text, with ``{name}`` placeholders (a message with plural forms has them as ``KEY.one``...
beside ``KEY``, chosen by its ``{count}``: :func:`t`); the words
the page and the terminal say alike (phases, bet areas, the table's sentences, the
server's refusals by error code) have one id in both, and each client's own words are
``page.*`` or ``cli.*`` (docs/architecture.md, "Languages"). English is complete; a
text missing from another catalog falls back to English, then to its id.

Which language (:func:`choose_language`): the one chosen in Options, once chosen; else
the token's ``language`` claim (the ``hello`` reply); else the terminal's locale
(``LANGUAGE``, ``LC_ALL``, ``LC_MESSAGES``, ``LANG``); else English. A language is used
when it has a catalog (:data:`LANGUAGES`); ``fr-CA`` is French.

The current language is the process's (like :mod:`gettext`): :func:`set_language` sets
it and :func:`t` reads it. Pure but for the catalogs, read once.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterator, Mapping

from babel import Locale

import texts

__all__ = [
    "LANGUAGES",
    "LANGUAGE_NAMES",
    "LocalNames",
    "catalog",
    "choose_language",
    "current_language",
    "locale_language",
    "placeholders",
    "plural_category",
    "refusal_text",
    "set_language",
    "supported",
    "t",
]

#: The languages with a catalog, English (the reference) first.
LANGUAGES: tuple[str, ...] = ("en", "fr", "de")
#: Each language's name in itself (the Options' choices).
LANGUAGE_NAMES = {"en": "English", "fr": "Français", "de": "Deutsch"}
#: The locale variables, in the order gettext reads them.
LOCALE_VARIABLES = ("LANGUAGE", "LC_ALL", "LC_MESSAGES", "LANG")
_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")

_current = "en"


@functools.cache
def catalog(language: str) -> Mapping[str, str]:
    """A language's catalog (read once); ``{}`` for a language without one."""
    if language not in LANGUAGES:
        return {}
    data = json.loads(texts.catalog_bytes(language).decode("utf-8"))
    return {str(k): str(v) for k, v in data.items()}


def placeholders(text: str) -> set[str]:
    """The ``{name}`` placeholders of a text."""
    return set(_PLACEHOLDER.findall(text))


def supported(tag: object) -> str | None:
    """The catalog's language for a tag (``"fr-CA"`` -> ``"fr"``, ``"fr_FR.UTF-8"`` ->
    ``"fr"``), or ``None``."""
    if not isinstance(tag, str) or not tag:
        return None
    primary = re.split(r"[-_.@]", tag.strip(), maxsplit=1)[0].lower()
    return primary if primary in LANGUAGES else None


def locale_language(environ: Mapping[str, str]) -> str | None:
    """The terminal's language from its locale variables (``LANGUAGE`` may list
    several, ``fr:de``); ``C`` and ``POSIX`` say nothing."""
    for var in LOCALE_VARIABLES:
        value = environ.get(var, "")
        if not value:
            continue
        for part in value.split(":"):
            if part in ("C", "POSIX") or part.startswith(("C.", "POSIX.")):
                continue
            lang = supported(part)
            if lang:
                return lang
        if var != "LANGUAGE":
            return None  # the first set of LC_ALL, LC_MESSAGES, LANG decides
    return None


def choose_language(option: str | None, token: str | None, environ: Mapping[str, str]) -> str:
    """Options (when not ``"auto"``) > the token's claim > the locale > English."""
    return (
        (supported(option) if option and option != "auto" else None)
        or supported(token)
        or locale_language(environ)
        or "en"
    )


def set_language(language: str) -> str:
    """Speak ``language`` from now on (English when it has no catalog); returns it."""
    global _current
    _current = supported(language) or "en"
    return _current


def current_language() -> str:
    return _current


@functools.cache
def _locale(language: str) -> Locale:
    return Locale.parse(language)


def plural_category(count: float, language: str | None = None) -> str:
    """CLDR's plural category of ``count`` in ``language`` (default: the current one):
    ``"one"``, ``"few"``, ``"many"``, ``"other"``... (Babel's copy of CLDR, as the page's
    ``Intl.PluralRules``: in French 0 and 1 are ``"one"``)."""
    return str(_locale(language or _current).plural_form(count))


def t(key: str, /, **params: object) -> str:
    """The text of ``key`` in the current language, its placeholders filled:
    ``t("ev.sat", name="Ann", seat=3)`` -> ``"Ann sits in seat 3"``. A message with
    plural forms is chosen by its ``count`` (CLDR's rules, as the page's ``t``):
    ``KEY.one`` (``KEY.few``... as the language has them) when the catalog has that form
    for the count's category, else ``KEY``, the "other" form. A text missing from the
    catalog falls back to English, in English's rules."""
    language = _current if key in catalog(_current) else "en"
    words = catalog(language)
    text = words.get(key) or key
    count = params.get("count")
    if isinstance(count, int | float) and not isinstance(count, bool):
        text = words.get(f"{key}.{plural_category(count, language)}") or text
    if not params:
        return text
    return _PLACEHOLDER.sub(
        lambda m: str(params[m.group(1)]) if m.group(1) in params else m.group(0), text
    )


def refusal_text(code: object, message: object) -> str:
    """A server refusal in words: the server's own message in English (its language,
    and more precise), the catalog's ``error.<code>`` text in another language, else
    the message as it came."""
    text = str(message or code or "")
    if _current == "en":
        return text
    own = catalog(_current).get(f"error.{code}")
    return own or text


class LocalNames(Mapping[str, str]):
    """``{id: text}`` for ids ``prefix + id``, read in the current language at each
    look-up (``AREA_NAMES["tie"]``), so a module-level table follows the language."""

    def __init__(self, prefix: str, ids: tuple[str, ...]) -> None:
        self.prefix = prefix
        self.ids = ids

    def __getitem__(self, key: str) -> str:
        if key not in self.ids:
            raise KeyError(key)
        return t(self.prefix + key)

    def __iter__(self) -> Iterator[str]:
        return iter(self.ids)

    def __len__(self) -> int:
        return len(self.ids)
