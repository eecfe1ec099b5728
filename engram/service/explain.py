"""Supersession as data and explanations, on top of an engram-chosen ranking (engram/service/ranking.py;
docs/internals.md#supersession and #explanations).

Per hit:
- `supersedes` / `superseded_by`: which memory it replaces and which replaces it, each with its basis,
  "explicit" (the newer memory names the older in `attrs.supersedes`: `remember(supersedes=)`, an import
  line's attrs) or "heuristic" (the restatement rule of supersession.py judged so for this query). An
  explicit successor is found from the older memory's side through the filter columns' postings
  (KeywordIndex.annotate), so a superseded memory is known as such even when its successor did not rank.
- `why`: the cosine, the keyword share and each matched query term's part of it, the rule that moved
  it (restates / superseded), the conversation steps of hybrid ranking (docs/compat.md, "Keyword and hybrid
  search"): `context` when its score is a share of a neighbouring turn's (fusion.in_context: which
  neighbour, before or after it, and the share) and `speaker` when its score was lowered because the query
  names a speaker and someone else said it (fusion.by_speaker: who said it, the factor), and a confidence: the ranking's calibrated logistic (ranking.confidence,
  thresholds tuned on the tuning half of the labelled set) of this hit's own cosine and of the share of
  the query's idf its matched terms hold.
Per query: the spaces searched, the filters in force, and why a list is empty: "no_memories" (the scope
holds none), "filtered_out" (none passes the filters), "below_threshold" (every hit's confidence was under
`min_confidence`), "all_superseded" (`current` dropped every hit), or "no_match" (nothing relevant).
`current` drops every superseded hit, explicit or heuristic, before the cut to `limit`.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..search.keyword_index import Annotation
    from ..store import Memory
    from .ranking import RankedMemory, RankingPolicy

EMPTY_REASONS = ("no_memories", "filtered_out", "below_threshold", "all_superseded", "no_match")


@dataclass(frozen=True)
class Replacement:
    uri: str  # the other memory's at:// URI (or, for an explicit name, the record key the writer gave)
    basis: str  # "explicit" or "heuristic"


@dataclass(frozen=True)
class Context:
    uri: str  # the neighbouring turn whose score this hit's score is a share of
    position: str  # "before" (the turn it answers) or "after" (the turn that answers it)
    share: float  # this hit's score = share x the neighbour's score (before the speaker step)


@dataclass(frozen=True)
class Speaker:
    said_by: str | None  # attrs.speaker of the hit: someone the query does not name
    factor: float  # its score was multiplied by this


@dataclass(frozen=True)
class Why:
    similarity: float | None  # cosine in [0, 1] (None: a keyword-only hit without a vector)
    keyword: float | None  # the keyword share in [0, 1] (None: no query word)
    terms: dict[str, float]  # each matched query term -> its part of the keyword share
    rule: str | None  # "restates" (moved before what it replaces), "superseded" (kept after its successor)
    confidence: float  # in [0, 1]; >= 0.5: this hit probably answers the query
    context: Context | None = None  # its score came from a conversation neighbour
    speaker: Speaker | None = None  # its score was lowered: another speaker said it


@dataclass(frozen=True)
class QueryFacts:
    spaces: tuple[str, ...] = ()  # the spaces searched
    live: int = 0  # memories in them
    allowed: int = 0  # of those, how many pass the filters
    dropped_superseded: int = 0  # `current` dropped these
    dropped_below_threshold: int = 0
    empty: str | None = None  # why no hit came back (EMPTY_REASONS), None when some did
    superseded_rows: frozenset[int] = field(default_factory=frozenset)


def explicit_names(memory: Memory) -> list[str]:
    """What a memory names in `attrs.supersedes` (one string, or a list of them)."""
    named = memory.attrs.get("supersedes") if isinstance(memory.attrs, dict) else None
    items = named if isinstance(named, list) else [named]
    return [n for n in items if isinstance(n, str)]


def finish(
    hits: Sequence[RankedMemory],
    annotations: Mapping[str, Annotation],
    owner: Mapping[int, str],
    successors: Mapping[int, Memory],
    links: Mapping[int, tuple[int, str]],
    policy: RankingPolicy,
    *,
    limit: int,
    current: bool,
    min_confidence: float | None,
    spaces: Sequence[str],
    context: Mapping[int, tuple[int, float]] | None = None,
    others: Collection[int] = (),
    foreign: Collection[int] = (),
) -> tuple[list[RankedMemory], QueryFacts]:
    """The pool's hits with supersession and explanations filled in, `current` and `min_confidence`
    applied, cut to `limit`; and the per-query facts. `successors`: every memory that names a pool memory
    explicitly; `links`: the restatement rule's direct verdicts ({older: (newer, basis)}). Every explicit
    successor outside the pool that passes the filters is placed just before what it replaces (the newest
    first), so the current statement is never missing beside a stale one it replaced, nor below it.
    `context` and `others`: the ranking's context and speaker steps (Ranking.context, Ranking.others);
    `successors` holds the neighbours named in `context` too. `foreign`: rows in another language than the
    query, whose confidence sees the policy's cross-lingual lift (ranking.lifted_top)."""
    from .ranking import (
        RankedMemory,
        confidence,  # the one calibrated logistic (ranking.py imports this module)
        lifted_top,
    )

    by_row = {h.memory.row_id: h for h in hits}
    successor: dict[int, Replacement] = {}
    pull: dict[
        int, list[int]
    ] = {}  # older pool row -> its explicit successors outside the pool, placed before it
    supersedes: dict[int, list[Replacement]] = {row: [] for row in by_row}
    for older, (newer, basis) in links.items():
        if older in by_row and newer in by_row:
            successor[older] = Replacement(by_row[newer].memory.uri, basis)
            supersedes[newer].append(Replacement(by_row[older].memory.uri, basis))
    for row, hit in by_row.items():
        annotation = annotations.get(owner[row])
        if annotation is None:
            continue
        for name in (hit.memory.uri, hit.memory.rkey):
            for other in annotation.named_by.get(name, ()):
                if other != row and other in successors:
                    if row not in successor:
                        successor[row] = Replacement(successors[other].uri, "explicit")
                    if other not in by_row and other in annotation.passing:
                        pull.setdefault(row, []).append(other)
        pool_names = {r.uri for r in supersedes[row]}
        supersedes[row] += [
            Replacement(n, "explicit") for n in explicit_names(hit.memory) if n not in pool_names
        ]
        supersedes[row] = [_resolved(r, by_row) for r in supersedes[row]]
    placed = set(by_row)
    arranged: list[RankedMemory] = []
    for hit in hits:
        for pulled in sorted(pull.get(hit.memory.row_id, ()), key=lambda r: -successors[r].created_ms):
            if pulled in placed:
                continue
            placed.add(pulled)
            supersedes[pulled] = [Replacement(hit.memory.uri, "explicit")]
            owner = {**owner, pulled: owner[hit.memory.row_id]}
            arranged.append(RankedMemory(successors[pulled], hit.score, None, None))
        arranged.append(hit)
    out: list[RankedMemory] = []
    dropped_superseded = dropped_low = 0
    for hit in arranged:
        row = hit.memory.row_id
        if current and row in successor:
            dropped_superseded += 1
            continue
        if len(out) == limit:
            break  # explanations only for what is returned: the rest of the pool costs nothing more
        annotation = annotations.get(owner[row])
        terms = annotation.terms.get(row, {}) if annotation is not None else {}
        idf = annotation.idf if annotation is not None else {}
        total = sum(idf.values())
        covered = sum(idf.get(t, 0.0) for t in terms) / total if total > 0 else 0.0
        rule = "superseded" if row in successor else ("restates" if supersedes[row] else None)
        why = Why(
            hit.similarity,
            hit.keyword,
            terms,
            rule,
            confidence(lifted_top(hit.similarity or 0.0, row in foreign, policy), covered, policy),
            _context(hit.memory, context or {}, successors),
            _speaker(hit.memory, others, policy.other_speaker),
        )
        if min_confidence is not None and why.confidence < min_confidence:
            dropped_low += 1
            continue
        out.append(replace(hit, supersedes=tuple(supersedes[row]), replaced_by=successor.get(row), why=why))
    live = sum(a.live for a in annotations.values())
    allowed = sum(a.allowed for a in annotations.values())
    empty = None
    if not out:
        if live == 0:
            empty = "no_memories"
        elif allowed == 0:
            empty = "filtered_out"
        elif dropped_low:
            empty = "below_threshold"
        elif dropped_superseded:
            empty = "all_superseded"
        else:
            empty = "no_match"
    facts = QueryFacts(
        tuple(spaces), live, allowed, dropped_superseded, dropped_low, empty, frozenset(successor)
    )
    return out, facts


def _resolved(replacement: Replacement, by_row: Mapping[int, RankedMemory]) -> Replacement:
    """A record key the writer named becomes the URI of the pool memory it names, when it is there."""
    if replacement.uri.startswith("at://"):
        return replacement
    for hit in by_row.values():
        if hit.memory.rkey == replacement.uri:
            return Replacement(hit.memory.uri, replacement.basis)
    return replacement


def _context(
    memory: Memory, context: Mapping[int, tuple[int, float]], memories: Mapping[int, Memory]
) -> Context | None:
    step = context.get(memory.row_id)
    if step is None or step[0] not in memories:
        return None
    neighbour = memories[step[0]]
    position = "before" if neighbour.created_ms <= memory.created_ms else "after"
    return Context(neighbour.uri, position, step[1])


def _speaker(memory: Memory, others: Collection[int], factor: float) -> Speaker | None:
    if memory.row_id not in others or factor >= 1.0:
        return None
    said_by = memory.attrs.get("speaker") if isinstance(memory.attrs, dict) else None
    return Speaker(said_by if isinstance(said_by, str) else None, factor)
