"""`KeywordIndex`: BM25 over one space's memories, in memory, for hybrid and keyword search.

Why not FTS5's bm25() (the store had an FTS5 table until migration 0009): it evaluates bm25() on every matching row with
a B-tree lookup of the row's length each time, so a query holding a common word costs ~300 ms at 100k
memories, and FTS5 cannot score a given set of rows without walking whole posting lists (measured ~1.7 s
for 200 candidates at 100k; docs/benchmarks.md). Here each term's postings are numpy arrays, so a query
costs O(sum of its terms' document frequencies) in vectorised numpy: about a millisecond at 100k.

Scoring is Lucene BM25 with k1 = 1.2, b = 0.4 (a lower b penalises long memories less) over text, tags and
source as one stream whose term frequencies are weighted 1.0 / 0.5 / 0.25 (a word in the text counts more
than the same word in a tag or the source). idf = ln(1 + (N - df + 0.5) / (df + 0.5)) over the space's
live memories, so statistics never mix spaces.

A score is reported as a share of the most the query can attain: BM25 divided by (k1 + 1) x the sum of
the query terms' idf (a term no live row holds counts with the highest idf), BM25's upper bound (each
term's weight tends to k1 + 1 as its frequency grows). A memory of average length holding each query term
once scores 1 / (k1 + 1) = 0.45, and a memory sharing one common term of a long query scores near 0. No
score is clipped, so strong matches keep their order. The score means the same across queries and spaces (a minimum such as GPTBots' doc_correlation can reject a poor keyword
match; docs/compat.md "Scores"), which a division by the best candidate's score could not. Terms come from the identifier-aware analyzer
(engram/search/analyzer.py: folding, stop words, compounds such as ENG-1502 split and kept whole,
stemming, CJK bigrams), the same for memories and queries, so any user text is a valid query; a memory
also gets terms for the dates it names, relative ones resolved against its createdAt, and for the day
it was written; a query's named days and months become the same terms (engram/search/dates.py).

Rows are appended in row-id order (positions 0..n-1); deletions only clear `live`. Not thread-safe: the
caller serialises `add`/`remove` against `search`.
"""

from __future__ import annotations

import re
from array import array
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..store.reserved_tags import content_tags
from .analyzer import fold
from .analyzer import terms as words
from .dates import DATE_TERM, asks_when, created_terms, date_terms, query_date_terms
from .filters import FilterColumns, Filters, attr_token

K1, B = 1.2, 0.4
# Two memories written one right after the other, at least a second and at most five minutes apart, are
# turns of one conversation: each is the other's context (`KeywordResult.adjacent`; engram/service/fusion.py
# `in_context`). Memories stamped within the same second are a bulk write (an import without dates), not a
# conversation.
CONVERSATION_GAP_MS = 5 * 60 * 1000
CONVERSATION_MIN_GAP_MS = 1000
SPEAKER = "speaker"  # attrs.speaker: who said a conversation turn (`KeywordResult.by_others`)
_WORD = re.compile(r"[^\W_]+")
FIELD_WEIGHTS = (1.0, 0.5, 0.25)  # text, tags, source
CREATED_WEIGHT = 0.5  # the day a memory was written (dates.created_terms), weighted as a tag
MAX_QUERY_TERMS = 64


def query_terms(text: str) -> list[str]:
    found = list(dict.fromkeys(words(text)))[:MAX_QUERY_TERMS]
    folded = fold(text)
    # the days and months the query names, as the ISO terms memories get for theirs (engram/search/dates.py)
    found += [t for t in query_date_terms(folded) if t not in found][: max(0, MAX_QUERY_TERMS - len(found))]
    if asks_when(folded):  # "When did ...?" favours memories that say when (engram/search/dates.py)
        found.append(DATE_TERM)
    return found


class KeywordIndex:
    def __init__(self) -> None:
        self.row_ids = np.zeros(0, dtype=np.int64)
        self.live = np.zeros(0, dtype=bool)
        self.lengths = np.zeros(0, dtype=np.float32)
        self.columns = FilterColumns()
        self._postings: dict[
            str, tuple[array[int], array[float]]
        ] = {}  # term -> (positions 'q', weighted tf 'f')
        self._frozen: dict[str, tuple[np.ndarray, np.ndarray, int, float]] = {}
        self.generation = -1
        self.dead = 0
        self._average: float | None = None  # mean live length, cached until rows come or go
        self._adjacency: tuple[np.ndarray, np.ndarray] | None = None  # cached until rows come or go

    def __len__(self) -> int:
        return int(self.row_ids.shape[0])

    @property
    def last_row_id(self) -> int:
        return int(self.row_ids[-1]) if len(self) else 0

    def add(self, rows: Sequence[tuple[Any, ...]]) -> None:
        """Append rows (row_id, author, created_ms, tags, text, source[, attrs]), row ids ascending and new."""
        if not rows:
            return
        start, lengths = len(self), np.zeros(len(rows), dtype=np.float32)
        for offset, (_, _, created_ms, tags, text, source, *_) in enumerate(rows):
            found = words(text)
            # float-valued: the tag and source fields add fractional weights to the words' counts
            tf: defaultdict[str, float] = defaultdict(float, Counter(found))
            lengths[offset] = len(found)
            # the shims' bookkeeping tags are for filtering, not content (engram/store/reserved_tags.py)
            content = " ".join(content_tags(tags))
            # the dates the text names, relative ones resolved against createdAt (engram/search/dates.py),
            # weighted as a tag: derived terms, not the author's words
            dated = date_terms(fold(text), created_ms) if text else []
            lengths[offset] += FIELD_WEIGHTS[1] * len(dated)
            for term in dated:
                tf[term] += FIELD_WEIGHTS[1]
            if CREATED_WEIGHT:
                written = created_terms(created_ms)
                lengths[offset] += CREATED_WEIGHT * len(written)
                for term in written:
                    tf[term] += CREATED_WEIGHT
            for weight, field in zip(FIELD_WEIGHTS[1:], (content, source), strict=True):
                found = words(field)
                lengths[offset] += weight * len(found)
                for word in found:
                    tf[word] += weight
            for term, count in tf.items():
                postings = self._postings.get(term)
                if postings is None:
                    postings = self._postings[term] = (array("q"), array("f"))
                postings[0].append(start + offset)
                postings[1].append(count)
                self._frozen.pop(term, None)
        self.row_ids = np.concatenate([self.row_ids, np.fromiter((r[0] for r in rows), np.int64, len(rows))])
        self.live = np.concatenate([self.live, np.ones(len(rows), dtype=bool)])
        self.lengths = np.concatenate([self.lengths, lengths])
        self._average = None
        self._adjacency = None
        self.columns.extend([r[1] for r in rows], np.array([r[2] for r in rows], dtype=np.int64),
                            [tuple(r[3]) for r in rows], [r[6] if len(r) > 6 else None for r in rows])  # fmt: skip

    def positions(self, row_ids: Iterable[int]) -> np.ndarray:
        """Positions of those row ids that are in the index (others are ignored)."""
        wanted = np.fromiter(row_ids, dtype=np.int64)
        if not len(self) or not wanted.shape[0]:
            return np.zeros(0, dtype=np.int64)
        at = np.searchsorted(self.row_ids, wanted)
        found = (at < len(self)) & (self.row_ids[np.minimum(at, len(self) - 1)] == wanted)
        present: np.ndarray = at[found]
        return present

    def remove(self, row_ids: Iterable[int]) -> None:
        at = self.positions(row_ids)
        removed = int(np.count_nonzero(self.live[at]))
        if removed:
            self.dead += removed
            self.live[at] = False
            self._frozen.clear()  # document frequencies changed
            self._average = None
            self._adjacency = None

    def _term(self, term: str, average: float) -> tuple[np.ndarray, np.ndarray, int]:
        """The term's postings, each one's BM25 term weight tf (k1 + 1) / (tf + k1 (1 - b + b len / avg))
        and the term's live document frequency; cached until the term or the average length changes."""
        frozen = self._frozen.get(term)
        if frozen is None or frozen[3] != average:
            positions, tf = self._postings[term]
            # Copies, not views: an array('q') that exports a buffer could no longer grow.
            at = np.array(positions, dtype=np.int64)
            tf_values = np.array(tf, np.float32)
            norm = K1 * (1.0 - B + B * self.lengths[at] / np.float32(average))
            weights = tf_values * np.float32(K1 + 1.0) / (tf_values + norm)
            frozen = self._frozen[term] = (at, weights, int(np.count_nonzero(self.live[at])), average)
        return frozen[0], frozen[1], frozen[2]

    def adjacency(self) -> tuple[np.ndarray, np.ndarray]:
        """(previous, next) position of each position in the same conversation, -1 for none: the live
        neighbour in write (row-id) order, when the two were created CONVERSATION_MIN_GAP_MS to
        CONVERSATION_GAP_MS apart.
        New arrays each time rows come or go, never changed in place (a KeywordResult keeps them)."""
        if self._adjacency is None:
            before = np.full(len(self), -1, dtype=np.int64)
            after = np.full(len(self), -1, dtype=np.int64)
            live = np.flatnonzero(self.live)
            if live.shape[0] > 1:
                created = self.columns.created_at[live]
                gap = np.abs(np.diff(created))
                close = (gap >= CONVERSATION_MIN_GAP_MS) & (gap <= CONVERSATION_GAP_MS)
                after[live[:-1][close]] = live[1:][close]
                before[live[1:][close]] = live[:-1][close]
            self._adjacency = (before, after)
        return self._adjacency

    def idf(self, text: str) -> dict[str, float]:
        """The BM25 idf of each query term of `text` over the live rows (a term no live row holds gets the
        highest idf): how much each term says, for judging how much of a query a memory covers."""
        return self._idf(query_terms(text))

    def _idf(self, query: Sequence[str]) -> dict[str, float]:
        """`idf` of already analysed query terms (query_terms): one analysis per search, not one per use."""
        live_count = len(self) - self.dead
        weights = {}
        for term in query:
            postings = self._postings.get(term)
            frozen = self._frozen.get(term)  # its live df is cached with its weights (_term)
            if frozen is not None:
                df = frozen[2]
            else:
                df = (
                    int(np.count_nonzero(self.live[np.asarray(postings[0], dtype=np.int64)]))
                    if postings
                    else 0
                )
            weights[term] = float(np.log1p((max(live_count, 0) - df + 0.5) / (df + 0.5)))
        return weights

    def search(
        self, text: str, k: int, filters: Filters | None = None, within: Iterable[int] | None = None
    ) -> KeywordResult:
        """The best `k` live rows that match a word of `text` and pass `filters` (and, if given, are among
        `within`), best first, ties to the lower row id; `KeywordResult.of` scores any other rows later
        (hybrid search scores its vector candidates without a second pass)."""
        live_count = len(self) - self.dead
        query = query_terms(text)
        terms = [t for t in query if t in self._postings]
        every = (filters is None or filters.is_empty()) and within is None and self.dead == 0
        allowed = (
            self.live.copy()
            if filters is None or filters.is_empty()
            else self.columns.allowed(filters, self.live)
        )
        if within is not None:
            only = np.zeros(len(self), dtype=bool)
            only[self.positions(within)] = True
            allowed = allowed & only
        context = (*self.adjacency(), allowed)
        others = self._other_speakers(text)
        if not terms or live_count <= 0:
            return KeywordResult(
                np.zeros(0, np.int64), np.zeros(0, np.float32), self.row_ids, None, context, others
            )
        if self._average is None:
            self._average = float(self.lengths[self.live].mean()) if live_count else 1.0
        scores = np.zeros(len(self), dtype=np.float32)
        dated = None  # a question asking when: the rows that say when, for the ranking's date anchor
        for term in terms:
            positions, weights, df = self._term(term, self._average or 1.0)
            if term == DATE_TERM:
                dated = positions  # ascending (rows are appended in order), live or not
            if df == 0:
                continue
            scores[positions] += np.float32(np.log1p((live_count - df + 0.5) / (df + 0.5))) * weights
        scores /= np.float32((K1 + 1.0) * sum(self._idf(query).values()))  # the share of the most attainable
        if not every:  # (every row live and allowed: nothing to clear, two passes over the rows saved)
            scores[~allowed] = 0.0
        candidates = np.flatnonzero(scores)  # every live, allowed row that matched a word
        if candidates.shape[0] > k:
            candidates = candidates[np.argpartition(-scores[candidates], k - 1)[:k]]
        order = np.lexsort((self.row_ids[candidates], -scores[candidates]))
        best = candidates[order]
        return KeywordResult(self.row_ids[best], scores[best], self.row_ids, scores, context, others, dated)

    def _other_speakers(self, text: str) -> np.ndarray | None:
        """When the query names a speaker of the space (a word of an attrs.speaker value, e.g. "Caroline"
        in "What did Caroline research?"), the mask of positions said by someone it does not name; None
        when it names none. Positions without a speaker are never in it."""
        spoken = self.columns.attrs.values(SPEAKER)
        if not spoken:
            return None
        asked = set(_WORD.findall(fold(text)))
        named = [positions for value, positions in spoken if isinstance(value, str) and _names(value, asked)]
        if not named:
            return None
        mask = np.zeros(len(self), dtype=bool)
        for _, positions in spoken:
            mask[positions] = True
        for positions in named:
            mask[positions] = False
        return mask

    def annotate(
        self, text: str, row_ids: Sequence[int], names: Sequence[str], filters: Filters | None
    ) -> Annotation:
        """What an explanation needs of this space in one pass (engram/service/explain.py): the query
        terms' idf, each row's matched terms, who names which of `names` in `attrs.supersedes`, and the
        live and allowed row counts (why a list is empty)."""
        mask = (
            self.live if filters is None or filters.is_empty() else self.columns.allowed(filters, self.live)
        )
        idf = self.idf(text)  # its terms are terms_of's: the query is analysed once
        named_by = self.with_attr("supersedes", names)
        naming = sorted({r for rows in named_by.values() for r in rows})
        passing = self.row_ids[(at := self.positions(naming))[mask[at]]].tolist() if naming else []
        return Annotation(
            idf, self.terms_of(text, row_ids, idf), named_by, len(self) - self.dead,
            int(np.count_nonzero(mask)), frozenset(passing),
        )  # fmt: skip

    def with_attr(self, name: str, values: Iterable[str]) -> dict[str, list[int]]:
        """{value: live row ids whose attrs[name] is (or, for a list, holds) that string}, from the filter
        columns' postings: which memories name a given one in `attrs.supersedes`, in O(1) per value."""
        found: dict[str, list[int]] = {}
        for value in values:
            positions = self.columns.attrs.postings.get(attr_token(name, value))
            if positions is not None:
                live = positions[self.live[positions]]
                if live.shape[0]:
                    found[value] = self.row_ids[live].tolist()
        return found

    def allowed_rows(self, row_ids: Iterable[int], filters: Filters) -> list[int]:
        """Those of `row_ids` that are live and pass `filters` (a scoped search's exact side)."""
        at = self.positions(row_ids)
        mask = self.columns.allowed(filters, self.live)
        allowed: list[int] = self.row_ids[at[mask[at]]].tolist()
        return allowed

    def terms_of(
        self, text: str, row_ids: Iterable[int], idf: dict[str, float] | None = None
    ) -> dict[int, dict[str, float]]:
        """Per row, each query term it holds and that term's part of the row's keyword share (the BM25
        term weight x idf over the same normaliser as `search`): what matched, for an explanation."""
        rows = list(row_ids)
        at = self.positions(rows)
        position_of = {int(self.row_ids[p]): int(p) for p in at}
        live_count = len(self) - self.dead
        out: dict[int, dict[str, float]] = {row: {} for row in rows}
        # the terms of a given idf are the query's (idf's keys, each once: a term's share is set, not added)
        terms = [t for t in (query_terms(text) if idf is None else idf) if t in self._postings]
        if not terms or live_count <= 0 or not position_of:
            return out
        if self._average is None:
            self._average = float(self.lengths[self.live].mean()) if live_count else 1.0
        norm = float((K1 + 1.0) * sum((self.idf(text) if idf is None else idf).values())) or 1.0
        wanted = np.array(sorted(position_of.values()), dtype=np.int64)
        row_at = {p: r for r, p in position_of.items()}
        for term in terms:
            positions, weights, df = self._term(term, self._average or 1.0)
            if df == 0:
                continue
            term_idf = float(np.log1p((live_count - df + 0.5) / (df + 0.5)))
            hit = np.searchsorted(positions, wanted)
            ok = (hit < positions.shape[0]) & (positions[np.minimum(hit, positions.shape[0] - 1)] == wanted)
            share = weights[hit[ok]].astype(np.float64) * (term_idf / norm)
            for p, value in zip(wanted[ok].tolist(), share.tolist(), strict=True):
                out[row_at[p]][term] = value
        return out


@dataclass(frozen=True)
class Annotation:
    idf: dict[str, float]  # query term -> idf over the live rows
    terms: dict[int, dict[str, float]]  # row -> matched query term -> its part of the keyword share
    named_by: dict[str, list[int]]  # a memory's uri or rkey -> live rows naming it in attrs.supersedes
    live: int  # live rows
    allowed: int  # live rows that pass the filters
    passing: frozenset[int] = frozenset()  # of the rows in named_by, those that pass the filters


def _names(speaker: str, asked: set[str]) -> bool:
    return any(len(word) > 1 and word in asked for word in _WORD.findall(fold(speaker)))


class KeywordResult:
    """The best matches of one query, and every row's score for that query (`of`)."""

    def __init__(
        self,
        row_ids: np.ndarray,
        scores: np.ndarray,
        all_row_ids: np.ndarray,
        all_scores: np.ndarray | None,
        context: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
        others: np.ndarray | None = None,
        dated: np.ndarray | None = None,
    ) -> None:
        self.row_ids, self.scores = row_ids, scores
        self._all_row_ids, self._all_scores = all_row_ids, all_scores
        self._context = context  # (previous position, next position, allowed) per position
        self._others = others  # positions said by a speaker the query does not name (_other_speakers)
        self._dated = dated  # ascending positions of the rows naming a date, when the query asks when

    def dated(self, row_ids: Iterable[int]) -> set[int]:
        """Those live rows passing the search's filters whose text names a date, written or resolved (the
        `@date` term, engram/search/dates.py), when the query asks when ("When did ...?": dates.asks_when);
        empty otherwise."""
        if self._dated is None or not self._dated.shape[0]:
            return set()
        wanted = np.fromiter(row_ids, dtype=np.int64)
        if not wanted.shape[0]:
            return set()
        at = np.minimum(np.searchsorted(self._all_row_ids, wanted), self._all_row_ids.shape[0] - 1)
        known = self._all_row_ids[at] == wanted
        hit = np.minimum(np.searchsorted(self._dated, at), self._dated.shape[0] - 1)
        keep = known & (self._dated[hit] == at)
        if self._context is not None:
            keep &= self._context[2][at]  # live and passing the search's filters
        return set(wanted[keep].tolist())

    def by_others(self, row_ids: Iterable[int]) -> set[int]:
        """Those rows said by someone other than the speaker(s) the query names; empty when it names none."""
        if self._others is None:
            return set()
        wanted = np.fromiter(row_ids, dtype=np.int64)
        if not wanted.shape[0]:
            return set()
        at = np.minimum(np.searchsorted(self._all_row_ids, wanted), self._all_row_ids.shape[0] - 1)
        hit = (self._all_row_ids[at] == wanted) & self._others[at]
        return set(wanted[hit].tolist())

    def adjacent(self, row_ids: Iterable[int]) -> dict[int, tuple[int | None, int | None]]:
        """{row: (the memory before it, the one after it)} in its conversation (KeywordIndex.adjacency),
        each None when there is none or it does not pass the search's filters; rows with neither are left
        out."""
        if self._context is None:
            return {}
        before, after, allowed = self._context
        wanted = np.fromiter(row_ids, dtype=np.int64)
        if not wanted.shape[0] or not self._all_row_ids.shape[0]:
            return {}
        at = np.minimum(np.searchsorted(self._all_row_ids, wanted), self._all_row_ids.shape[0] - 1)
        known = self._all_row_ids[at] == wanted
        rows, at = wanted[known], at[known]
        # both neighbours of every wanted row at once (numpy), then a dict entry only for rows with one:
        # most rows of most spaces have none (notes, documents), and a tuple per row was the cost here
        sides = []
        for neighbour in (before[at], after[at]):
            ok = neighbour >= 0
            ok[ok] = allowed[neighbour[ok]]
            sides.append((ok, np.where(ok, self._all_row_ids[np.maximum(neighbour, 0)], -1)))
        (has_before, before_ids), (has_after, after_ids) = sides
        keep = has_before | has_after
        return {
            row: (b if b >= 0 else None, a if a >= 0 else None)
            for row, b, a in zip(
                rows[keep].tolist(), before_ids[keep].tolist(), after_ids[keep].tolist(), strict=True
            )
        }

    def best(self) -> dict[int, float]:
        return dict(zip(self.row_ids.tolist(), self.scores.astype(np.float64).tolist(), strict=True))

    def of(self, row_ids: Iterable[int]) -> dict[int, float]:
        """Scores of those rows that matched (and passed the filters); others are left out."""
        if self._all_scores is None:
            return {}
        wanted = np.fromiter(row_ids, dtype=np.int64)
        if not wanted.shape[0] or not self._all_row_ids.shape[0]:
            return {}
        at = np.minimum(np.searchsorted(self._all_row_ids, wanted), self._all_row_ids.shape[0] - 1)
        hit = (self._all_row_ids[at] == wanted) & (self._all_scores[at] > 0)
        return dict(
            zip(wanted[hit].tolist(), self._all_scores[at[hit]].astype(np.float64).tolist(), strict=True)
        )
