"""String lengths as lexicons count them: UTF-8 bytes (maxLength) and graphemes (maxGraphemes).

Grapheme clusters: neither the standard library nor this project's dependencies segment text by
UAX #29 (the ``regex`` package's ``\\X`` would, at the cost of a new dependency). This is a close
approximation: a code point joins the previous cluster when it is a combining mark (Mn/Mc/Me), a
variation selector, an emoji skin-tone modifier or tag character, a zero-width joiner or the code
point after one, a letter after a virama (Unicode 15.1's Indic conjunct rule, so "स्ते" is one), the
second regional indicator of a flag, or the LF of a CRLF. It counts Latin,
accented, emoji (ZWJ sequences, flags, skin tones) and most Indic text as people see it; it splits
Hangul written as separate conjoining jamo, which composed text (the norm) never contains.
Counting only happens when the cheap bounds (graphemes <= code points) cannot decide.
"""

from __future__ import annotations

import unicodedata

_ZWJ = "\u200d"


def utf8_len(s: str) -> int:
    """Length in UTF-8 bytes; ValueError for strings with lone surrogates (not valid Unicode text)."""
    if s.isascii():
        return len(s)
    try:
        return len(s.encode("utf-8"))
    except UnicodeEncodeError:
        raise ValueError("must be valid Unicode text (no lone surrogates)") from None


def _extends(cp: int, ch: str) -> bool:
    return (
        0xFE00 <= cp <= 0xFE0F  # variation selectors
        or 0x1F3FB <= cp <= 0x1F3FF  # emoji skin-tone modifiers
        or 0xE0020 <= cp <= 0xE007F  # tag characters (subdivision flags)
        or 0xE0100 <= cp <= 0xE01EF  # variation selectors supplement
        or ch == _ZWJ
        or (cp >= 0x300 and unicodedata.category(ch) in ("Mn", "Mc", "Me"))
    )


def grapheme_count(s: str) -> int:
    if s.isascii():
        return len(s) - s.count("\r\n")
    count = 0
    prev = "\0"  # any non-joining character, so the first code point starts a cluster
    regional_run = 0
    for ch in s:
        cp = ord(ch)
        if (
            prev == _ZWJ
            or _extends(cp, ch)
            or (prev == "\r" and ch == "\n")
            or (cp >= 0x900 and unicodedata.combining(prev) == 9 and unicodedata.category(ch) == "Lo")
        ):
            prev = ch
            continue
        if 0x1F1E6 <= cp <= 0x1F1FF:  # regional indicators pair up into flags
            regional_run += 1
            if regional_run % 2 == 0:
                prev = ch
                continue
        else:
            regional_run = 0
        count += 1
        prev = ch
    return count
