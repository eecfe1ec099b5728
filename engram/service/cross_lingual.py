"""Cross-lingual levelling: a multilingual model's cosines favour memories in the query's own language.

Under multilingual-e5 a query's cosine to an unrelated memory in its own language is 0.015-0.07 higher
than to one in another language (eval/multilingual.json: Japanese queries 0.795 to Japanese memories against
0.745-0.769 to the others, Chinese 0.838 against 0.749-0.771), while an answer leads its non-answers by a
few hundredths. So a Japanese memory that merely shares the query's language outranks the English or
Korean note that answers it. `level` adds the model policy's `cross_lingual` (a cosine, tuned on the tuning
half: docs/benchmarks.md#multilingual) to the fused score of each candidate written in another language
than the query, and re-sorts. It raises the others rather than lowering the query's own language, so a
space in one language keeps its scores exactly (GPTBots' doc_correlation and the confidence see the same
numbers as before); a policy with 0 (MiniLM's, which cannot match across languages) skips the step.

A text's language is read from its script, which needs no model: Hangul is Korean, kana Japanese, Han
without kana Chinese; Latin-script text is told apart by its stop words (Snowball's lists,
engram/search/languages.py; English when there are none). The script is the grammar's: each CJK character
counts one, each Latin stop word two and each other lower-case Latin word one, while identifiers, numbers
and capitalised names count nothing, so "What does 박지훈 do?" is English, and neither "Tom Becker 是谁?"
nor "billing-mad-02 の OS は?" is.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence

from ..search.analyzer import fold
from ..search.languages import ENGLISH, LANGUAGES, STOP_BITS
from ..store import Memory

SAMPLE = 400  # characters looked at: a memory's language shows in its first sentences
_KNOWN: dict[str, str] = {}  # record CID -> language: a CID names one text, so the answer never changes
_MAX_KNOWN = 200_000  # past it new memories are read each time, not remembered (~1 ms per 30 memories)
_HANGUL = re.compile(r"[\u1100-\u11ff\u3130-\u318f\uac00-\ud7af]")
_KANA = re.compile(r"[\u3040-\u30ff\uff66-\uff9f]")
_HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_TOKEN = re.compile(r"[^\W_]+(?:[-._:/@+][^\W_]+)*")  # the analyzer's compounds (engram/search/analyzer.py)
_LATIN_WORD = re.compile(r"[A-Za-z\u00c0-\u024f]+")


def language_of(text: str) -> str:
    """ "ko", "ja" or "zh", or for Latin script a Snowball language name (engram/search/languages.py)."""
    sample = text[:SAMPLE]
    hangul, kana, han = (len(p.findall(sample)) for p in (_HANGUL, _KANA, _HAN))
    words, latin = [], 0
    for token in _TOKEN.findall(sample):
        if not _LATIN_WORD.fullmatch(token):
            continue  # identifiers, numbers and CJK runs say nothing of the grammar
        word = fold(token)
        if len(word) < 2:
            continue  # "e" of "e.g.", "s" of "what's": stop words of some language, evidence of none
        if word in STOP_BITS:
            words.append(word)
            latin += 2
        elif token[0].islower():
            latin += 1
    if hangul + kana + han and hangul + kana + han >= latin:
        if hangul >= kana + han:
            return "ko"
        return "ja" if kana else "zh"
    return LANGUAGES[_latin(words)]


def _language(memory: Memory) -> str:
    found = _KNOWN.get(memory.cid)
    if found is None:
        found = language_of(memory.text)
        if len(_KNOWN) < _MAX_KNOWN:
            _KNOWN[memory.cid] = found
    return found


def _latin(words: list[str]) -> int:
    """Index into LANGUAGES by exclusive stop words: a word that is also an English stop word ("in", "a")
    is no evidence against English, so "e.g." or "in" do not make an English note Italian (the analyzer's
    `guess`, which only picks a stop list, counts them). Another language wins with two such words more
    than English has stop words, or one when English has none ("¿Quién es Javier Ortega?")."""
    counts = [0] * len(LANGUAGES)
    for word in words:
        mask = STOP_BITS.get(word, 0)
        if mask >> ENGLISH & 1:
            counts[ENGLISH] += 1
            continue
        for n in range(len(LANGUAGES)):
            counts[n] += mask >> n & 1
    best = max((n for n in range(len(LANGUAGES)) if n != ENGLISH), key=lambda n: (counts[n], -n))
    english = counts[ENGLISH]
    if (counts[best] >= 2 and counts[best] > english) or (counts[best] >= 1 and english == 0):
        return best
    return ENGLISH


def level(
    fused: Sequence[tuple[int, float]], lifted: Collection[int], bonus: float
) -> list[tuple[int, float]]:
    """`fused` with `bonus` added to the score (clipped to 1) of each row in `lifted` (`foreign`: the
    candidates in another language than the query), best first again (ties to the lower row id, as
    fusion.fuse)."""
    if bonus <= 0 or not lifted:
        return list(fused)
    raised = [(row, min(1.0, score + bonus) if row in lifted else score) for row, score in fused]
    raised.sort(key=lambda item: (-item[1], item[0]))
    return raised


def foreign(memories: Mapping[int, Memory], query: str | None) -> frozenset[int]:
    """The rows of `memories` written in another language than `query`. Their cosines are a few
    hundredths low for what they mean, so the confidence's cosine threshold, chosen on same-language
    pairs, sees them lifted too (ranking.lifted_top; explain.finish per hit)."""
    if not query or not query.strip():
        return frozenset()
    asked = language_of(query)
    return frozenset(row for row, memory in memories.items() if _language(memory) != asked)
