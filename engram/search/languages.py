"""Which Snowball language a text is in, for its stop words (engram/search/analyzer.py).

The stop lists are Snowball's own (BSD-3-Clause, snowballstem.org, shipped in data/stopwords/ with their
LICENSE): a few hundred function words per language, unlike the ISO lists that also drop content words
such as "date", "name" or "home". A text's language is the one whose stop list holds most of its words,
the classic stopword language guess (Grefenstette 1995). English wins ties, texts with no stop word at all,
and texts with a single stop word of another language: a tag or a one-word query such as "ci" (Italian for
"us") or "die" is evidence of nothing, and dropping it would leave the query empty.
Only Latin-script words take part: CJK runs are indexed as bigrams with no stop list.
"""

from __future__ import annotations

import unicodedata
from importlib import resources

# English first: it wins every tie.
LANGUAGES = ("english", "spanish", "french", "german", "portuguese", "italian", "dutch")
ENGLISH = 0
MIN_EVIDENCE = 2  # stop words another language needs before it is chosen over English


def _fold(word: str) -> str:
    # The analyzer's folding of Latin letters (accents dropped), so a stop list matches folded tokens.
    decomposed = unicodedata.normalize("NFD", unicodedata.normalize("NFKC", word).casefold())
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def _load() -> tuple[dict[str, int], tuple[frozenset[str], ...]]:
    bits: dict[str, int] = {}
    sets = []
    folder = resources.files("engram.search") / "data" / "stopwords"
    for n, language in enumerate(LANGUAGES):
        words = {_fold(w) for w in (folder / f"{language}.txt").read_text("utf-8").split()}
        sets.append(frozenset(words))
        for word in words:
            bits[word] = bits.get(word, 0) | (1 << n)
    return bits, tuple(sets)


STOP_BITS, STOPWORDS = _load()


def guess(words: list[str]) -> int:
    """Index into LANGUAGES of the language whose stop list holds most of `words` (folded tokens)."""
    counts = [0] * len(LANGUAGES)
    seen = False
    for word in words:
        mask = STOP_BITS.get(word)
        if mask:
            seen = True
            for n in range(len(LANGUAGES)):
                if mask >> n & 1:
                    counts[n] += 1
    if not seen:
        return ENGLISH
    best = max(range(len(LANGUAGES)), key=lambda n: (counts[n], -n))
    return best if counts[best] >= MIN_EVIDENCE else ENGLISH
