"""The one check for text that other people see: display names and chat.

A name or a chat line is shown on every watcher's screen, so it must be plain text that
cannot act on that screen. :func:`clean_text` normalizes what is harmless and **refuses**
(never strips) everything else:

- normalized: Unicode NFC; runs of whitespace (tab, line feed, carriage return and the
  Unicode space, line and paragraph separators) become one space; the ends are trimmed;
- refused: C0 and C1 control characters (NUL, BEL, ESC and so the start of every
  ANSI/VT escape sequence, DEL, NEL...), format characters (bidi embeddings, overrides
  and isolates, LRM/RLM, zero-width spaces and joiners, the BOM, soft hyphens, tags),
  surrogates, private-use and unassigned code points. The one exception is the
  zero-width joiner *inside* an emoji sequence (U+200D between two emoji, as in
  "👩‍💻"), which joins pictures and cannot hide a letter.

Refused rather than stripped because stripping changes what the sender wrote without
telling them (``"\\x1b[2J"`` stripped of ESC still shows ``[2J``; a name stripped of a
zero-width space becomes someone else's name), whereas a refusal says exactly what was
wrong and changes nothing (the project's rule for bad input).

Pure: no I/O, no logging; it raises :class:`ValueError` with a message for the sender.
"""

from __future__ import annotations

import unicodedata
from typing import Final

__all__ = ["clean_text"]

_ZWJ: Final = "\u200d"
_VARIATION_SELECTOR_16: Final = "\ufe0f"
#: Whitespace that is normalized to one space (every other control is refused).
_SPACE_CONTROLS: Final = frozenset("\t\n\r")
_SPACE_CATEGORIES: Final = frozenset({"Zs", "Zl", "Zp"})
#: Categories never shown: controls, format characters, surrogates, private use, unassigned.
_REFUSED: Final = {
    "Cc": "a control character",
    "Cf": "an invisible formatting character (bidi, zero-width)",
    "Cs": "a surrogate",
    "Co": "a private-use character",
    "Cn": "an unassigned character",
}


def _is_emoji(ch: str) -> bool:
    """Roughly Extended_Pictographic: symbols (So), skin-tone modifiers (Sk) and the
    emoji variation selector, which is what stands around a joiner in an emoji sequence."""
    return ch == _VARIATION_SELECTOR_16 or unicodedata.category(ch) in ("So", "Sk")


def clean_text(text: object) -> str:
    """``text`` normalized (NFC, whitespace runs to one space, trimmed), or
    :class:`ValueError` naming the first character that may not be shown.

    The result may be empty; the caller checks the length it allows.
    """
    if not isinstance(text, str):
        raise ValueError("text is a string")
    normalized = unicodedata.normalize("NFC", text)
    out: list[str] = []
    pending_space = False
    for i, ch in enumerate(normalized):
        if ch in _SPACE_CONTROLS or unicodedata.category(ch) in _SPACE_CATEGORIES:
            pending_space = bool(out)
            continue
        category = unicodedata.category(ch)
        if category in _REFUSED and not (
            ch == _ZWJ
            and 0 < i < len(normalized) - 1
            and _is_emoji(normalized[i - 1])
            and unicodedata.category(normalized[i + 1]) == "So"
        ):
            raise ValueError(f"{_REFUSED[category]} (U+{ord(ch):04X}) may not be shown")
        if pending_space:
            out.append(" ")
            pending_space = False
        out.append(ch)
    return "".join(out)
