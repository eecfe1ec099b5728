"""Engram-chosen rankings: fused vector + keyword relevance, newer restatements first, and a confidence.

The one pipeline wherever engram decides the order (GPTBots at every embedding_rate, an agent's MCP
recall in every mode, the console's search): `EngramRanking.run` ranks a text query over some scopes by
`mode`:
- "vector": cosine only; "keyword": the keyword share only; "hybrid": the policy's fusion of both (tuned
  with `engram eval` on the tuning halves of the labelled set, per model: `policy_for`;
  docs/benchmarks.md has the held-out numbers), then, in hybrid mode, each conversation turn in the
  context of the turns around it (fusion.in_context).
Then restatements are moved before what they replace (supersession.py), and `confidence` says how likely
the best hit answers the query at all (the top cosine against a threshold chosen on the tuning half), so
a caller can show "nothing relevant" instead of the nearest unrelated memory.
`garden.engram.searchMemories` never comes here: it is pure vector search by its lexicon.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import numpy as np

from ..errors import InvalidInput
from ..search.analyzer import fold, terms
from ..search.dates import asks_when
from ..store import Memory, memory_reads
from ..store import documents as store_documents
from ..store import spaces as store_spaces
from . import cross_lingual
from .explain import QueryFacts, Replacement, Why, finish
from .fusion import anchored, by_speaker, fuse, in_context, rrf_fuse, speaker_matches
from .hybrid import filters_of
from .search import require_model
from .supersession import Restatements, newer_first

if TYPE_CHECKING:
    from ..search.keyword_index import Annotation
    from ..store.database import Store
    from .hybrid import HybridSearch, Scope, TextSearch

MODES = ("vector", "keyword", "hybrid")
POOL = 30  # candidates looked at for restatements beyond the requested limit


@dataclass(frozen=True)
class RankingPolicy:
    """Defaults chosen by `engram eval --split tuning --tune` (docs/benchmarks.md)."""

    fusion: str = "convex"  # "convex" or "rrf" (fusion.py)
    weight: float = 0.3  # convex: share of the cosine
    restatements: Restatements | None = field(default_factory=Restatements)
    # convex: the share of the cosine instead of `weight` when a query's leading candidates are mostly
    # conversation turns (`for_pool`), whose words say more than a model's cosines do; None: `weight`
    chat_weight: float | None = None
    # a "When ...?" question's vector side embedded as the event it asks about (dates.the_event; MiniLM
    # gains by it on LoCoMo, the multilingual model loses), else as asked
    event_query: bool = True
    answer_similarity: float = 0.6  # top cosine at which confidence reaches 0.5 ...
    answer_coverage: float = 0.56  # ... or the share of the query's idf the best hit holds
    # conversation context (fusion.in_context): the share of the score of the turn before a turn gets ...
    reply: float = 0.8
    lead: float = 0.6  # ... and of the turn after it
    reach: int = 2  # ... carried this many turns on (HybridSearch.candidates collects two turns around)
    other_speaker: float = 0.7  # score factor of a turn said by someone else than the query names ...
    speaker_match: float = 0.3  # ... when the named speaker's best keyword share is this x the others' best
    # a question asking when ("When did ...?", dates.asks_when): the lead share instead of `lead` (an event
    # is often announced a turn before it is named: "Guess what I did yesterday?" - "I ran a marathon") ...
    when_lead: float = 0.7
    # ... and its date anchor (fusion.anchored): a turn that says when, up to `anchor_reach` turns from one
    # of the `anchor_top` leading memories, raised to `anchor` x that memory's score (these four chosen on
    # LoCoMo's tuning half: docs/benchmarks.md#locomo, step 9)
    anchor: float = 0.8
    anchor_reach: int = 2
    anchor_top: int = 10
    # cosine added to a candidate in another language than the query's (cross_lingual.level): 0 for models
    # that do not match across languages
    cross_lingual: float = 0.0


DEFAULT_POLICY = RankingPolicy()
# Cosines mean different things under different models: e5's sit high and close together (two unrelated
# passages often score 0.75), so its thresholds are its own, tuned the same way (docs/benchmarks.md).
MODEL_POLICIES: dict[str, RankingPolicy] = {
    "multilingual-e5-small-q4": RankingPolicy(
        weight=0.9,
        # chat turns are matched by their words far more than notes are, and e5's cosines sit close
        # together: on LoCoMo's tuning half R@10 / MRR@10 were 0.631 / 0.492 at 0.9, 0.746 / 0.588 at 0.3,
        # 0.764 / 0.597 at 0.1 (docs/benchmarks.md#locomo); MiniLM's 0.3 is best for both there
        chat_weight=0.1,
        # LoCoMo's tuning half, the question as asked: vector R@10 0.521 against 0.517, hybrid the same
        event_query=False,
        # the English update tiers (change_similarity, named_similarity) were tuned on MiniLM's cosines
        # only, so e5 keeps its single floor
        restatements=Restatements(0.92, 0.5, 0.5, change_similarity=None, named_similarity=None),
        answer_similarity=0.88,
        answer_coverage=0.58,
        cross_lingual=0.03,  # e5's same-language lead (cross_lingual.py), tuned on eval/multilingual.json
    ),
}


def policy_for(model: str | None) -> RankingPolicy:
    """The tuned policy of a model's cosines (the MiniLM-tuned default for any other model)."""
    return MODEL_POLICIES.get(model or "", DEFAULT_POLICY)


@dataclass(frozen=True)
class RankedMemory:
    memory: Memory
    score: float
    similarity: float | None
    keyword: float | None
    superseded_by: str | None = None  # at:// URI of the newest memory in the pool that restates this one
    supersedes: tuple[Replacement, ...] = ()  # what this one replaces (explain.py), with the basis
    replaced_by: Replacement | None = None  # what replaces this one directly, with the basis
    why: Why | None = None  # what matched and how sure (explain.py); set by EngramRanking.run


@dataclass(frozen=True)
class Ranking:
    hits: list[RankedMemory]
    confidence: float  # in [0, 1]; below 0.5 the best hit probably does not answer the query (confidence())
    top_similarity: float = 0.0  # the best cosine among the candidates
    facts: QueryFacts = field(default_factory=QueryFacts)  # scope searched, why empty (explain.py)
    links: dict[int, tuple[int, str]] = field(default_factory=dict)  # restatement verdicts (explain.py)
    # the context and speaker steps, for the explanations (explain.py): {raised row: (neighbour, share)}
    # (fusion.in_context) and the turns said by someone the query does not name (fusion.by_speaker)
    context: dict[int, tuple[int, float]] = field(default_factory=dict)
    others: frozenset[int] = frozenset()
    # the pool's rows in another language than the query, when the policy lifts them (cross_lingual.py)
    foreign: frozenset[int] = frozenset()


class EngramRanking:
    def __init__(self, store: Store, hybrid: HybridSearch, policy: RankingPolicy | None = None):
        self.store = store
        self.hybrid = hybrid
        self.policy = policy  # None: the policy of the first scope's model (policy_for)

    async def run(
        self, scopes: Sequence[Scope], query: TextSearch, mode: str, weight: float | None = None
    ) -> Ranking:
        """`mode` has no default on purpose: each caller chooses (MCP recall defaults to hybrid, GPTBots maps
        its embedding_rate, the console asks for hybrid). `weight` (hybrid mode only) overrides the tuned
        fusion with a convex mix the caller chose, as GPTBots' embedding_rate does; restatements and
        confidence apply in every mode."""
        if mode not in MODES:
            raise InvalidInput(f"mode must be one of {', '.join(MODES)}", "InvalidMode")
        scopes = [s for s in scopes if s.row_ids is None or s.row_ids]
        if not scopes or not query.text.strip():
            empty = "no_memories" if not scopes else "no_match"
            return Ranking([], 0.0, 0.0, QueryFacts(tuple(s.space.uri for s in scopes), empty=empty))
        return await self.hybrid.bounded(query, self._run(scopes, query, mode, weight))

    async def _run(
        self, scopes: Sequence[Scope], query: TextSearch, mode: str, weight: float | None
    ) -> Ranking:
        side_weight = {"vector": 1.0, "keyword": 0.0}.get(mode, 0.5)
        # Vector mode still collects the keyword side: ranked by cosine alone, but the restatement rule
        # needs each candidate's keyword share (supersession.py); keyword mode needs no cosines.
        collect = 0.0 if mode == "keyword" else 0.5
        first = scopes[0].space.config
        policy = self.policy or policy_for(first.active.model if first is not None else None)
        found = await self.hybrid.candidates(scopes, replace(query, weight=collect, event=policy.event_query))
        similarity, keyword, owner = found.similarity, found.keyword, found.owner
        if mode != "hybrid":
            # one side alone means what it says: no conversation context (a keyword-only hit holds a
            # query word, a vector-only score is the cosine)
            policy = replace(
                policy, fusion="convex", weight=side_weight, chat_weight=None, reply=0.0, lead=0.0,
                when_lead=0.0, other_speaker=1.0, anchor=0.0,
            )  # fmt: skip
        elif weight is not None:  # the caller's mix, for every candidate
            policy = replace(policy, fusion="convex", weight=weight, chat_weight=None)
        # The whole pool (POOL at least), so `current` and a confidence floor still leave `limit` hits; the
        # first `limit` of it are exactly what a ranking cut at `limit` holds (arrange).
        ranking = await self.rank(
            similarity, keyword, owner, max(query.limit, POOL), policy, found.adjacent, found.others,
            found.vectors, found.space_ids, query.text, found.dated,
        )  # fmt: skip
        annotations, successors = await self._annotate(scopes, query, ranking, owner)
        hits, facts = finish(
            ranking.hits, annotations, owner, successors, ranking.links, policy, limit=query.limit,
            current=query.current, min_confidence=query.min_confidence, spaces=[s.space.uri for s in scopes],
            context=ranking.context, others=ranking.others, foreign=ranking.foreign,
        )  # fmt: skip
        if not ranking.hits:
            return replace(ranking, hits=hits, facts=facts)
        best = ranking.hits[0].memory
        covered = coverage(best, annotations[owner[best.row_id]].idf)
        top = lifted_top(ranking.top_similarity, best.row_id in ranking.foreign, policy)
        return replace(ranking, hits=hits, facts=facts, confidence=confidence(top, covered, policy))

    async def _annotate(
        self, scopes: Sequence[Scope], query: TextSearch, ranking: Ranking, owner: Mapping[int, str]
    ) -> tuple[dict[str, Annotation], dict[int, Memory]]:
        """Per space with hits (every space when none came back: why empty), the keyword index's facts
        (KeywordIndex.annotate), and the pool's memories with each memory that names one of them in
        attrs.supersedes and each conversation neighbour an explained hit borrowed its score from."""
        rows_of: dict[str, list[int]] = {}
        names_of: dict[str, list[str]] = {}
        # Matched terms only for the hits that can be returned: the first `limit`, unless `current` or a
        # confidence floor may drop some (explain.finish explains only what it returns).
        explained = len(ranking.hits) if query.current or query.min_confidence is not None else query.limit
        for i, hit in enumerate(ranking.hits):
            uri = owner[hit.memory.row_id]
            rows = rows_of.setdefault(uri, [])
            if i < explained:
                rows.append(hit.memory.row_id)
            names_of.setdefault(uri, []).extend((hit.memory.uri, hit.memory.rkey))
        filters = filters_of(query)
        wanted = [s.space for s in scopes if s.space.uri in rows_of or not ranking.hits]
        found = await asyncio.gather(*(
            self.hybrid.keywords.annotate(space, query.text, rows_of.get(space.uri, []),
                                          names_of.get(space.uri, []), filters)
            for space in wanted
        ))  # fmt: skip
        annotations = {space.uri: a for space, a in zip(wanted, found, strict=True)}
        pool = {h.memory.row_id: h.memory for h in ranking.hits}
        missing: dict[str, list[int]] = {}
        for uri, annotation in annotations.items():
            for rows in annotation.named_by.values():
                missing.setdefault(uri, []).extend(r for r in rows if r not in pool)
        for hit in ranking.hits[:explained]:  # the neighbour an explained hit borrowed its score from
            neighbour = ranking.context.get(hit.memory.row_id, (None, 0.0))[0]
            if neighbour is not None and neighbour not in pool:
                missing.setdefault(owner[neighbour], []).append(neighbour)
        if any(missing.values()):

            def read(conn):
                return {
                    m.row_id: m
                    for uri, rows in missing.items()
                    for m in memory_reads.get_memories(conn, uri, rows)
                }

            pool.update(await self.store.read(read))
        return annotations, pool

    async def rank(
        self,
        similarity: Mapping[int, float],
        keyword: Mapping[int, float],
        owner: Mapping[int, str],
        limit: int,
        policy: RankingPolicy,
        adjacent: Mapping[int, tuple[int | None, int | None]] | None = None,
        others: Collection[int] = (),
        known: Mapping[int, np.ndarray] | None = None,
        space_ids: Mapping[str, int] | None = None,
        text: str | None = None,
        dated: Collection[int] = (),
    ) -> Ranking:
        """Rank already collected candidates (HybridSearch.candidates) under `policy` (the confidence here
        knows only the cosine; `run` adds the keyword coverage). `known`: unit vectors the candidates
        brought from the index (Found.vectors); only the others are read from the store. `space_ids`
        (Found.space_ids) lets the memories come from the hit cache (_read). `text`: the query, whose
        language the cross-lingual step compares with the candidates' (cross_lingual.py) and whose asking
        when sets the when-question's steps (fuse_candidates); `dated`: Found.dated."""
        policy = for_pool(policy, similarity, keyword, adjacent)
        trace: dict[int, tuple[int, float]] = {}
        when = text is not None and asks_when(fold(text))
        fused = fuse_candidates(similarity, keyword, policy, adjacent, others, trace, when=when, dated=dated)
        head = fused[: max(limit, POOL) if policy.restatements else limit]
        memories, vectors = await self._read(
            head, owner, with_vectors=policy.restatements is not None, known=known or {}, space_ids=space_ids
        )
        bonus = cross_lingual_bonus(policy)
        foreign = cross_lingual.foreign(memories, text) if bonus > 0 else frozenset()
        fused = cross_lingual.level(fused, foreign, bonus)
        ranking = arrange(fused, memories, vectors, similarity, keyword, limit, policy, adjacent)
        lowered = lowered_speakers(keyword, others, policy)
        return replace(ranking, context=trace, others=lowered, foreign=foreign)

    async def _read(
        self,
        head: Sequence[tuple[int, float]],
        owner: Mapping[int, str],
        *,
        with_vectors: bool,
        known: Mapping[int, np.ndarray],
        space_ids: Mapping[str, int] | None = None,
    ) -> tuple[dict[int, Memory], dict[int, np.ndarray]]:
        """The memories of the `head` rows and, `with_vectors`, their unit vectors: `known` ones and the
        memories the hit cache holds (docs/internals.md#hit-cache; every head row came from a search of
        its space a moment ago, the cache's contract) cost no thread hop; the rest are read from the store,
        and cached. `space_ids`: {space URI: space id} (Found.space_ids); without it nothing is cached."""
        by_space: dict[str, list[int]] = {}
        for row, _ in head:
            by_space.setdefault(owner[row], []).append(row)
        vectors = {row: known[row] for row, _ in head if row in known} if with_vectors else {}
        cache, memories = self.hybrid.search.hit_cache, {}
        for uri, rows in by_space.items():
            if space_ids is not None and uri in space_ids:
                memories.update(cache.cached(space_ids[uri], rows))
        unread = {uri: [r for r in rows if r not in memories] for uri, rows in by_space.items()}
        unread = {uri: rows for uri, rows in unread.items() if rows}
        unscored = {uri: [r for r in rows if r not in vectors] for uri, rows in by_space.items()}
        unscored = {uri: rows for uri, rows in unscored.items() if rows and with_vectors}
        if not unread and not unscored:
            return memories, vectors

        def read(conn):  # the spaces' models are read here too: one thread hop, not one per space
            found, scored = {}, {}
            for uri, rows in unread.items():
                found[uri] = memory_reads.get_memories(conn, uri, rows)
            for uri, rows in unscored.items():
                space = store_spaces.get_space(conn, uri)
                if space is not None and space.config is not None:
                    ids, matrix = store_documents.row_vectors(conn, uri, rows, require_model(space).key)
                    norms = np.linalg.norm(matrix, axis=1, keepdims=True) if ids.shape[0] else None
                    for i, row in enumerate(ids.tolist()):
                        scored[row] = matrix[i] / max(float(norms[i, 0]), 1e-12)
            return found, scored

        found, scored = await self.store.read(read)
        for uri, read_memories in found.items():
            memories.update((m.row_id, m) for m in read_memories)
            if space_ids is not None and uri in space_ids:
                cache.add(space_ids[uri], read_memories)
        vectors.update(scored)
        return memories, vectors


def cross_lingual_bonus(policy: RankingPolicy) -> float:
    """The policy's cross-lingual cosine bonus in fused-score units (a convex fusion weighs the cosine)."""
    return policy.cross_lingual * (policy.weight if policy.fusion == "convex" else 1.0)


def lifted_top(top_similarity: float, foreign: bool, policy: RankingPolicy) -> float:
    """The cosine the confidence judges: the best hit's language lift added when it is in another language
    than the query (cross_lingual.foreign), since the threshold was chosen on same-language cosines."""
    return top_similarity + policy.cross_lingual if foreign else top_similarity


def coverage(memory: Memory, term_idf: Mapping[str, float]) -> float:
    """The share of the query's idf mass whose terms the memory holds (text, tags or source): a memory
    that merely shares a common word with the query covers little of it."""
    total = sum(term_idf.values())
    if total <= 0:
        return 0.0
    held = set(terms(" ".join([memory.text, *memory.tags, memory.source or ""])))
    return sum(weight for term, weight in term_idf.items() if term in held) / total


def confidence(
    top_similarity: float, covered: float, policy: RankingPolicy, steepness: float = 20.0
) -> float:
    """max of two logistics, of the best cosine around `answer_similarity` and of the best hit's coverage
    around `answer_coverage` (both chosen on the tuning half: docs/benchmarks.md), so confidence >= 0.5
    exactly when either clears its threshold."""
    by_similarity = _logistic(steepness * (top_similarity - policy.answer_similarity))
    by_coverage = _logistic(steepness * (covered - policy.answer_coverage))
    return max(by_similarity, by_coverage)


def _logistic(x: float) -> float:
    # math, not numpy: a per-hit confidence (explain.py) must cost nanoseconds, not a ufunc call
    return 1.0 / (1.0 + math.exp(-x)) if x > -700 else 0.0


def lowered_speakers(
    keyword: Mapping[int, float], others: Collection[int], policy: RankingPolicy
) -> frozenset[int]:
    """The turns the speaker step weighs down (fusion.by_speaker): those said by someone the query does not
    name, unless the named speaker's own turns barely match its words (fusion.speaker_matches)."""
    if not others or policy.other_speaker >= 1.0:
        return frozenset()
    return frozenset(others) if speaker_matches(keyword, others, policy.speaker_match) else frozenset()


def fuse_candidates(
    similarity: Mapping[int, float],
    keyword: Mapping[int, float],
    policy: RankingPolicy,
    adjacent: Mapping[int, tuple[int | None, int | None]] | None = None,
    others: Collection[int] = (),
    trace: dict[int, tuple[int, float]] | None = None,
    *,
    when: bool = False,
    dated: Collection[int] = (),
) -> list[tuple[int, float]]:
    """The policy's fusion of the two sides, then each conversation turn in the context of its neighbours
    (fusion.in_context, which fills `trace` when given) and, when the query names a speaker, the turns
    said by others weighed down (fusion.by_speaker; `lowered_speakers`); `adjacent` and `others` from
    HybridSearch.candidates. A question asking `when` (dates.asks_when) takes `when_lead` as the lead
    share, and its `dated` turns (Found.dated) near the leading memories are raised (fusion.anchored)
    before the speaker step, so an explanation's share is of the neighbour's score before it, as the
    context step's is."""
    if policy.fusion == "rrf":
        fused = rrf_fuse(similarity, keyword)
    else:
        fused = fuse(similarity, keyword, policy.weight)
    lead = policy.when_lead if when else policy.lead
    in_turns = in_context(fused, adjacent or {}, policy.reply, lead, policy.reach, trace)
    if when:
        in_turns = anchored(
            in_turns, adjacent or {}, dated, policy.anchor, policy.anchor_reach, policy.anchor_top, trace
        )
    return by_speaker(in_turns, lowered_speakers(keyword, others, policy), policy.other_speaker)


def for_pool(
    policy: RankingPolicy,
    similarity: Mapping[int, float],
    keyword: Mapping[int, float],
    adjacent: Mapping[int, tuple[int | None, int | None]] | None,
) -> RankingPolicy:
    """The policy a query's candidates are ranked under: the policy's `chat_weight` as its weight when at
    least half of the POOL leading candidates (fused at `weight`) are conversation turns
    (`conversation_turns`), else the policy as it is. One weight for the whole pool: only the leading
    candidates' neighbours are known (HybridSearch.candidates), so a turn further down could not be told
    from a note."""
    if policy.chat_weight is None or policy.fusion != "convex" or not adjacent:
        return policy
    leading = fuse(similarity, keyword, policy.weight)[:POOL]
    turns = conversation_turns(adjacent)
    if 2 * sum(row in turns for row, _ in leading) < len(leading):
        return policy
    return replace(policy, weight=policy.chat_weight, chat_weight=None)


def conversation_turns(adjacent: Mapping[int, tuple[int | None, int | None]] | None) -> frozenset[int]:
    """The rows HybridSearch.candidates found to be turns of a conversation: those with a neighbour, and
    the neighbours."""
    if not adjacent:
        return frozenset()
    return frozenset(adjacent.keys()).union(
        row for pair in adjacent.values() for row in pair if row is not None
    )


def arrange(
    fused: Sequence[tuple[int, float]],
    memories: Mapping[int, Memory],
    vectors: Mapping[int, np.ndarray],
    similarity: Mapping[int, float],
    keyword: Mapping[int, float],
    limit: int,
    policy: RankingPolicy,
    adjacent: Mapping[int, tuple[int | None, int | None]] | None = None,
) -> Ranking:
    """The final ranking from fused candidates and the memories (and unit vectors) of at least the first
    max(limit, POOL) of them: restatements first, superseded ones marked, cut to `limit`. The vectors of
    conversation turns (rows with a neighbour in `adjacent`, HybridSearch.candidates) are withheld from
    the restatement rule, so its heuristic never fires on chat, where every later turn on a topic looks
    like a restatement (LoCoMo: docs/benchmarks.md); an explicit `supersedes` still replaces a turn."""
    head = fused[: max(limit, POOL) if policy.restatements else limit]
    links: dict[int, tuple[int, str]] = {}
    if policy.restatements is not None:
        if adjacent:
            turns = conversation_turns(adjacent)
            vectors = {row: vector for row, vector in vectors.items() if row not in turns}
        order, replaced_by = newer_first(head, memories, vectors, policy.restatements, keyword, links)
    else:
        order, replaced_by = [r for r, _ in head if r in memories], {}
    score = dict(head)  # every row of `order` is in the head: no dict of the whole candidate list
    hits = [
        RankedMemory(
            memories[row],
            score[row],
            similarity.get(row),
            keyword.get(row),
            memories[replaced_by[row]].uri if row in replaced_by else None,
        )
        for row in order[:limit]
    ]
    top = max(similarity.values(), default=0.0)
    return Ranking(hits, confidence(top, 0.0, policy), top, links=links)
