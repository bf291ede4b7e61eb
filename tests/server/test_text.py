"""The one text check of names and chat (server/protocol/text.py)."""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import given
from hypothesis import strategies as st

from server.process.auth import clean_name
from server.protocol.text import clean_text


@pytest.mark.parametrize(
    ("text", "cleaned"),
    [
        ("good luck", "good luck"),
        ("  good \t\n luck\r\n ", "good luck"),
        ("a\u00a0b\u3000c\u2028d\u2029e", "a b c d e"),  # Unicode spaces and separators
        ("Zoe\u0301", "Zoé"),  # NFC
        ("👩\u200d💻", "👩\u200d💻"),  # a joined emoji
        ("👩🏽\u200d💻", "👩🏽\u200d💻"),  # with a skin tone
        ("👁\ufe0f\u200d🗨\ufe0f", "👁\ufe0f\u200d🗨\ufe0f"),  # with variation selectors
        ("1\ufe0f\u20e3", "1\ufe0f\u20e3"),  # a keycap
        ("مرحبا שלום", "مرحبا שלום"),  # right-to-left scripts need no override
        ("", ""),
        ("   ", ""),
    ],
)
def test_what_passes(text: str, cleaned: str) -> None:
    assert clean_text(text) == cleaned


@pytest.mark.parametrize(
    "text",
    [
        "\x1b[31mred",
        "\x00",
        "\x07",
        "\x0b",
        "\x0c",
        "\x1f",
        "\x7f",
        "\x85",
        "\x9b",
        "\u202a\u202b\u202c\u202d\u202e",
        "\u2066\u2067\u2068\u2069",
        "\u200e\u200f\u061c",
        "\u200b",
        "\u200c",
        "\u2060",
        "\ufeff",
        "\u00ad",
        "a\u200db",  # a joiner between letters
        "\u200d👩",  # ... or at an end
        "👩\u200d",
        "\ue000",  # private use
        "\U000e0067",  # a tag
        "\U0010ffff",  # a noncharacter
        "\U000e01ef\u0378",  # a variation selector is fine, unassigned is not
    ],
)
def test_what_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="U\\+"):
        clean_text("fine " + text + " fine")


def test_only_strings() -> None:
    for value in (None, 5, b"bytes", ["a"]):
        with pytest.raises(ValueError):
            clean_text(value)


def test_names_use_it_and_count_after_cleaning() -> None:
    assert clean_name("  Ann   Lee ") == "Ann Lee"
    assert clean_name("x" * 32) == "x" * 32
    for bad in ("", "   ", "x" * 33, "Ann\x1b[0m", "\u202eevil", "a\u200bb"):
        with pytest.raises(ValueError):
            clean_name(bad)


_SHOWN = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})


@given(st.text(max_size=60))
def test_anything_cleaned_shows_nothing_hidden(text: str) -> None:
    try:
        cleaned = clean_text(text)
    except ValueError:
        return
    assert cleaned == cleaned.strip()
    assert "  " not in cleaned
    assert unicodedata.normalize("NFC", cleaned) == cleaned
    for i, ch in enumerate(cleaned):
        category = unicodedata.category(ch)
        if ch == "\u200d":  # only inside an emoji sequence
            assert 0 < i < len(cleaned) - 1
            continue
        assert category not in _SHOWN, (ch, category)
        assert category != "Zs" or ch == " "
    assert clean_text(cleaned) == cleaned  # idempotent
