"""The keyword analyzer: text to BM25 terms, the same for memories and queries (engram/search/keyword_index.py).

1. NFKC, then case folding, then accents dropped from Latin, Greek and Cyrillic letters (é -> e) but not
   from kana or Hangul, whose marks change the letter.
2. Tokens are runs of letters and digits; runs joined by one of `- . _ : / @ +` form a compound
   (`ENG-1502`, `pg-prod-02.internal`, `4.15.9`, `READ_MEDIA`, `schema-registry.internal:8081`).
3. Every part of a compound is a term (`eng`, `1502`), and so is the whole compound (`eng-1502`), each
   dotted or colon-separated piece that is itself hyphenated (`pg-prod-02`), and a dotted version's
   major.minor (`4.15`). A query for the exact identifier thus outranks memories sharing only a part.
4. The text's language is guessed from its stop words among Snowball's languages (engram/search/languages.py,
   English when none is found), and that language's stop words are dropped: shared function words such
   as "what", "do", "my" would otherwise earn keyword score. A compound keeps its stop-word parts inside
   the whole (`what-we-do`).
   Words of letters only are then stemmed with the Snowball English stemmer (snowballstemmer on PyPI), so
   `upgraded` matches `upgrade`; compounds and numbers are kept verbatim. One stemmer for every language on
   purpose: a short query has no stop word to tell its language by, and a query stemmed in English must
   still meet a memory in French ("café" in "un café au lait" is "caf" to the French stemmer, "cafe" to
   the English one); the English rules take little off words of other languages.
5. Runs of CJK characters (Han, kana, Hangul), which have no spaces between words, become overlapping
   bigrams (a lone character stays a unigram), the usual dictionary-free CJK indexing.
The compound rules are hand-written: no maintained tokenizer (FTS5's unicode61 and porter included)
keeps identifiers whole while also splitting them, which is what ticket ids and hostnames need.
"""

from __future__ import annotations

import re
import unicodedata

import snowballstemmer

from .languages import STOPWORDS, guess

_COMPOUND = re.compile(r"[^\W_]+(?:[-._:/@+][^\W_]+)*")
_PART = re.compile(r"[^\W_]+")
_PIECES = re.compile(r"[.:/@]")
_VERSION = re.compile(r"\d+\.\d+(?:\.\d+)+")
_CJK = re.compile(r"[\u1100-\u11ff\u2e80-\u9fff\uac00-\ud7af\uf900-\ufaff\uff66-\uff9f]+")


def fold(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).casefold()
    if text.isascii():
        return text
    out: list[str] = []
    for char in unicodedata.normalize("NFD", text):
        # Drop a combining mark only after a Latin/Greek/Cyrillic base letter (below U+0530).
        if unicodedata.combining(char) and out and ord(out[-1]) < 0x530:
            continue
        out.append(char)
    return unicodedata.normalize("NFC", "".join(out))


_STEMMER = snowballstemmer.stemmer("english")
_STEMS: dict[str, str] = {}  # word -> stem; a plain dict is several times faster than lru_cache here
_MAX_STEMS = 500_000  # a vocabulary bound: past it new words are stemmed each time, not remembered


def stem(word: str) -> str:
    found = _STEMS.get(word)
    if found is None:
        found = _STEMMER.stemWord(word) if word.isalpha() and word.isascii() else word
        if len(_STEMS) < _MAX_STEMS:
            _STEMS[word] = found
    return found


def terms(text: str | None) -> list[str]:
    """The BM25 terms of `text`, in order of appearance, repeats kept (they are term frequencies)."""
    if not text:
        return []
    folded = fold(text)
    plain = folded.isascii()
    tokens = _COMPOUND.findall(folded)
    stop = STOPWORDS[guess(tokens)]
    found: list[str] = []
    for token in tokens:
        if token.isalnum() and plain:  # the common case: one plain word or number
            if token not in stop:
                found.append(_STEMS.get(token) or stem(token))
            continue
        if token.isalnum():
            found.extend(_word_terms(token, stop))
            continue
        parts = _PART.findall(token)
        for part in parts:
            found.extend(_word_terms(part, stop))
        found.append(token)
        pieces = _PIECES.split(token)
        if len(pieces) > 1:
            found.extend(p for p in pieces if "-" in p or "_" in p)
        if _VERSION.fullmatch(token):
            found.append(".".join(parts[:2]))
    return found


def _word_terms(part: str, stop: frozenset[str]) -> list[str]:
    if part.isascii():
        return [] if part in stop else [stem(part)]
    out: list[str] = []
    at = 0
    for run in _CJK.finditer(part):
        if run.start() > at:
            out.extend(_word_terms(part[at : run.start()], stop))
        chars = run.group()
        out.extend([chars] if len(chars) == 1 else [chars[i : i + 2] for i in range(len(chars) - 1)])
        at = run.end()
    if at < len(part):
        rest = part[at:]
        if rest not in stop:
            out.append(stem(rest))
    return out
