"""Newer statements before the ones they replace, in the rankings engram chooses (docs/compat.md).

A memory B restates (supersedes) an older memory A, for a given query, when
- B's `attrs.supersedes` names A (its at:// URI or its rkey): the writer said so; or
- B is newer, the two are near-duplicates in meaning (cosine of their vectors >= `min_similarity`), B
  is nearly as relevant to the query as A (fused score >= `min_relevance` x A's), and B holds about as
  much of the query's words as A (keyword share >= `min_keyword` x A's): both answer the same question
  with the same specifics, so the later one is the current state. The last rule is what keeps ordinary
  chat from firing it: the turns of one conversation are close in meaning and similarly relevant to a
  question about it, but only the turn that answers it usually holds the question's own names and words
  ("the LGBTQ support group" against a later "it was so good to talk"). The similarity floor is lower
  when B reports a change (update_cues.reports_change), and all three floors are when a clause of B
  reports a transition of a thing A names, in what A says of it (update_cues.names_what_changed:
  "ci-old.harbor.net was switched off" against "the Jenkins controller ci-old.harbor.net will be switched
  off once ...", not against a note on its executors), an update being about the older memory whatever
  its words;
- and A does not report a dated event: a memory that says "yesterday", "last Friday" or "two weeks ago"
  (engram/search/dates.py) tells what happened then, which stays true whatever is said later; only
  statements of a current state ("staging runs Postgres 15.4") go stale, and so do plans: a memory whose
  only relative dates point ahead ("kube-ams2 follows next month", "on Friday I will ...") is a schedule
  that a newer memory on the same subject can overtake (update_cues.reports_event). Chat is full of
  reports of events, notes rarely are.
Only the order changes: B is moved to just before A, A keeps its place after it and is marked
`superseded_by` B; nothing is dropped (a user may be asking about history). Of several memories that
restate A, B is one naming A explicitly, else the most relevant to the query (the newest on a tie); chains
(C restates B restates A) resolve to the last. Every memory naming A explicitly is moved before A too, so an
explicitly superseded memory never ranks above any of its successors.
The thresholds are tuned on the tuning half of the labelled set (`engram eval`, docs/benchmarks.md).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from ..errors import InvalidInput
from ..identifiers import is_record_key
from ..search.analyzer import fold
from ..store import Memory
from ..store.uris import parse_memory_uri
from .update_cues import names_what_changed, reports_change, reports_event


@dataclass(frozen=True)
class Restatements:
    min_similarity: float = 0.65
    min_relevance: float = 0.5
    min_keyword: float = 0.5
    # the similarity that suffices when the newer memory reports a change of state of what the older says
    # (update_cues.reports_change: a cue word, or a past-tense verb whose specific subject the older
    # memory names): "Kwame now receives storage pages first" restates "storage pages go to Ingrid first"
    # at a cosine of 0.63, an update being about the same thing but not in the same words; None:
    # min_similarity
    change_similarity: float | None = 0.55
    # the floors when the newer memory reports a transition of a thing the older one names, in what the
    # older says of it (update_cues.names_what_changed: "ci-old.harbor.net was switched off" against "...
    # ci-old.harbor.net will be switched off once ..."; "the team ... replaces written weekly status"
    # against a note on weekly status, at a cosine of 0.36): such an update is about the older memory
    # whatever its wording, and it may answer the query in other words than the older did ("the CI
    # migration finished" for "is the Jenkins controller still running?", relevance 0.39 of the older's),
    # so lower floors suffice for all three; tuned on the tuning half (docs/benchmarks.md#stale-leaks:
    # the similarity is not what decides, any of 0.20-0.35 measured the same; the keyword share is, 0.25
    # cost a paraphrase query and an answer, 0.35 let a leak back). None: no such tier
    named_similarity: float | None = 0.3
    named_relevance: float = 0.3
    named_keyword: float = 0.3


def supersedes_attrs(value: str | None) -> dict | None:
    """The `attrs` naming what a new memory replaces (an at:// memory URI or a record key), as an explicit
    update on write sets it (MCP remember's `supersedes`; an import line's `attrs.supersedes`); raises
    InvalidInput for anything else. None when nothing is replaced."""
    if value is None:
        return None
    if not isinstance(value, str) or not (is_record_key(value) or _is_memory_uri(value)):
        raise InvalidInput("supersedes must be the uri (at://...) or record key of the memory it replaces",
                           "InvalidSupersedes")  # fmt: skip
    return {"supersedes": value}


def _is_memory_uri(value: str) -> bool:
    try:
        parse_memory_uri(value)
    except (InvalidInput, ValueError):
        return False
    return True


def explicitly_supersedes(newer: Memory, older: Memory) -> bool:
    named = newer.attrs.get("supersedes") if isinstance(newer.attrs, dict) else None
    names = named if isinstance(named, list) else [named]
    return any(isinstance(n, str) and n in (older.uri, older.rkey) for n in names)


def newer_first(
    ranked: Sequence[tuple[int, float]],
    memories: Mapping[int, Memory],
    vectors: Mapping[int, np.ndarray],
    rule: Restatements,
    keyword: Mapping[int, float] | None = None,
    links: dict[int, tuple[int, str]] | None = None,
) -> tuple[list[int], dict[int, int]]:
    """(row ids in their new order, {older row: the row replacing it}) over the hydrated rows of
    `ranked` (best first); `vectors` are unit vectors of those rows that have one, `keyword` the rows'
    keyword shares (absent: no query word). `links`, when given, receives {older row: (the row replacing it
    directly, "explicit" or "heuristic")}: the verdict and its basis, for explanations."""
    pool = [row for row, _ in ranked if row in memories]
    score = dict(ranked)
    words = keyword or {}
    cosine = _Cosines(pool, vectors)
    replaced_by: dict[int, int] = {}
    restaters: dict[int, list[int]] = {}  # older row -> every newer row restating it, newest first
    for older, suspects in _suspects(pool, memories, cosine, score, words, rule):
        found = [
            newer
            for newer in suspects
            if _restates(memories[newer], memories[older], cosine.get(older, newer), score, words, rule)
        ]
        if not found:
            continue
        # of several memories restating it, one that names it explicitly, else the most relevant to the
        # query replaces it (the newest on a tie): "the replica moved" restates "MySQL 8.0.35 with a
        # replica" as much as "upgraded to MySQL 8.0.36" does; a question about the version wants the upgrade
        chosen = max(found, key=lambda newer: _preference(memories, score, newer, older))
        replaced_by[older] = chosen
        restaters[older] = sorted(found, key=lambda row: -memories[row].created_ms)
        if links is not None:
            explicit = explicitly_supersedes(memories[chosen], memories[older])
            links[older] = (chosen, "explicit" if explicit else "heuristic")
    current = {row: _follow(row, replaced_by) for row in replaced_by}
    before = {row: [head, *restaters[row]] for row, head in current.items()}
    return _successors_first(pool, before), current


def _successors_first(pool: Sequence[int], before: Mapping[int, Sequence[int]]) -> list[int]:
    """The pool in its order, except that what must precede a row is placed just before it (and, in turn,
    what must precede those): the memory replacing it (the head of its chain), and every other memory
    restating it, so a superseded memory never ranks above any of its successors. (Before the rule stopped
    judging conversation turns, ranking.arrange, moving every restater first cost LoCoMo 0.03 of R@10:
    docs/benchmarks.md#stale-leaks.) Terminates: whatever precedes a row is strictly newer."""
    order: list[int] = []
    placed: set[int] = set()

    def place(row: int) -> None:
        placed.add(row)
        for newer in before.get(row, ()):
            if newer not in placed:
                place(newer)
        order.append(row)

    for row in pool:
        if row not in placed:
            place(row)
    return order


def _preference(memories: Mapping[int, Memory], score, newer: int, older: int) -> tuple[bool, float, int]:
    return explicitly_supersedes(memories[newer], memories[older]), score[newer], memories[newer].created_ms


class _Cosines:
    """Cosine of every pair of pool rows that have vectors, from one matrix product (float64, so a floor
    compares as it would against each pair's Python float)."""

    def __init__(self, pool: Sequence[int], vectors: Mapping[int, np.ndarray]):
        rows = [row for row in pool if row in vectors]
        self.position = {row: i for i, row in enumerate(rows)}
        if rows:
            matrix = np.stack([vectors[row] for row in rows])
            self.matrix = (matrix @ matrix.T).astype(np.float64)
        else:
            self.matrix = np.zeros((0, 0))

    def get(self, a: int, b: int) -> float | None:
        i, j = self.position.get(a), self.position.get(b)
        return None if i is None or j is None else float(self.matrix[i, j])


def _suspects(
    pool: Sequence[int],
    memories: Mapping[int, Memory],
    cosine: _Cosines,
    score: Mapping[int, float],
    words: Mapping[int, float],
    rule: Restatements,
) -> list[tuple[int, list[int]]]:
    """[(older row, the newer rows that may restate it, in pool order)]: the pairs that pass every
    numeric test of `_restates` (newer, a cosine above the lowest floor, the relevance and keyword share
    of at least one tier) of an older memory that reports no dated event, or that name the older
    explicitly, from whole-pool array comparisons (the same `_tiers`, over arrays). Only these reach
    `_restates`, whose word tests are the costly part (a 30-row pool is 870 ordered pairs,
    of which a few dozen pass here; docs/benchmarks.md#stale-leaks). A necessary condition only: every
    verdict is still `_restates`'."""
    n = len(pool)
    if n < 2:
        return []
    created = np.array([memories[row].created_ms for row in pool], dtype=np.int64)
    relevance = np.array([score[row] for row in pool], dtype=np.float64)
    share = np.array([words.get(row, 0.0) for row in pool], dtype=np.float64)
    cos = np.full((n, n), -np.inf)  # [older, newer]; -inf where either row has no vector
    at = [cosine.position.get(row) for row in pool]
    have = np.array([i for i, p in enumerate(at) if p is not None], dtype=np.intp)
    if have.size:
        positions = np.array([at[i] for i in have], dtype=np.intp)
        cos[np.ix_(have, have)] = cosine.matrix[np.ix_(positions, positions)]
    newer = created[None, :] > created[:, None]
    plain, named = _tiers(relevance[None, :], relevance[:, None], share[None, :], share[:, None], cos, rule)
    mask = newer & (cos >= _lowest_floor(rule)) & (plain | named)
    mask[[_reports_event(memories[row].text) for row in pool]] = False  # a dated event stays true
    for j, row in enumerate(pool):  # an explicit `supersedes` passes whatever the numbers say
        if isinstance(memories[row].attrs, dict) and memories[row].attrs.get("supersedes") is not None:
            for i, older in enumerate(pool):
                if newer[i, j] and explicitly_supersedes(memories[row], memories[older]):
                    mask[i, j] = True
    return [(pool[i], [pool[j] for j in np.flatnonzero(mask[i]).tolist()]) for i in range(n) if mask[i].any()]


def _change_floor(rule: Restatements) -> float:
    return rule.min_similarity if rule.change_similarity is None else rule.change_similarity


def _lowest_floor(rule: Restatements) -> float:
    """The least cosine at which any tier may restate."""
    named = rule.named_similarity
    return min(rule.min_similarity, _change_floor(rule), 1.0 if named is None else named)


def _tiers(relevance, older_relevance, share, older_share, cosine, rule: Restatements):
    """(plain, named): whether the newer memory's relevance and keyword share (and, for the named tier,
    its cosine) clear each tier's floors against the older's. Written with `&` so that the same test runs
    on one pair's floats in `_restates` and on the whole pool's broadcast arrays in `_suspects`."""
    plain = (relevance >= rule.min_relevance * older_relevance) & (share >= rule.min_keyword * older_share)
    if rule.named_similarity is None:
        return plain, plain & False
    named = (
        (cosine >= rule.named_similarity)
        & (relevance >= rule.named_relevance * older_relevance)
        & (share >= rule.named_keyword * older_share)
    )
    return plain, named


def _restates(newer: Memory, older: Memory, cosine: float | None, score, words, rule: Restatements) -> bool:
    if explicitly_supersedes(newer, older):
        return True
    change_floor = _change_floor(rule)
    if cosine is None or cosine < _lowest_floor(rule):
        return False
    plain, named = _tiers(
        score[newer.row_id], score[older.row_id], words.get(newer.row_id, 0.0), words.get(older.row_id, 0.0),
        cosine, rule,
    )  # fmt: skip
    if not (plain or named):
        return False
    if _reports_event(older.text):
        return False
    # the words are read last and only in the band where they decide: above min_similarity any newer
    # statement restates, above the change floor only an update (update_cues.reports_change), and below it
    # (or short of the plain relevance and keyword share) only a transition of a thing the older memory
    # names, in what it says of that thing (update_cues.names_what_changed)
    folded = _folded(newer.text)
    if plain and cosine >= rule.min_similarity:
        return True
    if plain and cosine >= change_floor and reports_change(folded, older.text):
        return True
    return named and names_what_changed(folded, older.text)


_CACHED = 512  # texts kept folded, as update_cues keeps its analyses


@lru_cache(maxsize=_CACHED)
def _folded(text: str) -> str:
    """fold(text), once per text: the rule reads each pool memory against many others, query after query."""
    return fold(text)


@lru_cache(maxsize=_CACHED)
def _reports_event(text: str) -> bool:
    """update_cues.reports_event of the text, once per text: it is asked of the older memory of every pair
    that passes the numbers, the same few dozen texts hundreds of times a query."""
    return reports_event(_folded(text))


def _follow(row: int, replaced_by: Mapping[int, int]) -> int:
    seen = {row}
    while row in replaced_by and replaced_by[row] not in seen:
        row = replaced_by[row]
        seen.add(row)
    return row
