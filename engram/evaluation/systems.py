"""Each ranking system under evaluation, run against one space through the service layer's real paths.

- `vector`: SearchService.search with `q` (what garden.engram.searchMemories answers);
- `keyword`: HybridSearch.run at weight 0 (BM25 over the in-memory keyword index);
- `convex@a`, `rrf`: the fusions of HybridSearch.candidates (both sides collected once per query, exactly
  the candidates HybridSearch.run fuses for 0 < weight < 1);
- `engram`: EngramRanking's arrangement of the same candidates under a policy (fusion, restatements).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..search.analyzer import fold
from ..search.dates import asks_when
from ..search.keyword_index import Annotation
from ..service import cross_lingual
from ..service.explain import finish
from ..service.hybrid import Scope, TextSearch
from ..service.ranking import (
    POOL,
    RankingPolicy,
    arrange,
    confidence,
    coverage,
    cross_lingual_bonus,
    for_pool,
    fuse_candidates,
    lifted_top,
    policy_for,
)
from ..service.search import SearchQuery, require_model
from ..store import Space, memory_reads
from ..store import documents as store_documents

DEPTH = 10  # rankings are scored to rank 10
ALPHAS = (0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)


@dataclass(frozen=True)
class Outcome:
    ranking: list[str]  # memory keys, best first
    top_similarity: float  # best cosine among the candidates (no-answer calibration)
    confidence: float | None = None
    coverage: float = 0.0  # share of the query's idf held by the best hit (ranking.coverage)
    current: list[str] | None = None  # `ranking` without the superseded hits (what `current` returns)


@dataclass
class Candidates:
    """One query's candidates, with every candidate's memory and unit vector read once."""

    similarity: dict[int, float]
    keyword: dict[int, float]
    memories: dict
    vectors: dict[int, np.ndarray]
    term_idf: dict[str, float]  # idf of each query term in the space (ranking.coverage)
    adjacent: dict = field(default_factory=dict)  # conversation neighbours (HybridSearch.candidates)
    others: set = field(default_factory=set)  # said by others than the query names (HybridSearch.candidates)
    # the keyword index's facts for the candidates (which memories name them in attrs.supersedes), and
    # those naming memories: what explain.finish needs to mark, place and drop superseded hits
    annotation: Annotation | None = None
    successors: dict = field(default_factory=dict)
    text: str = ""  # the query (its language: service/cross_lingual.py; whether it asks when)
    dated: set = field(default_factory=set)  # turns that say when, for a question asking when (Found.dated)


class SpaceRunner:
    def __init__(self, ctx, space: Space, key_of_row: dict[int, str]):
        self.ctx, self.space, self.key_of_row = ctx, space, key_of_row

    async def vector(self, text: str) -> Outcome:
        outcome = await self.ctx.services.search.search(self.space, SearchQuery(q=text, limit=DEPTH))
        keys = [self.key_of_row[m.row_id] for m, _ in outcome.hits]
        return Outcome(keys, outcome.hits[0][1] / 1000 if outcome.hits else 0.0)

    async def keyword(self, text: str) -> Outcome:
        hits = await self.ctx.services.hybrid.run([Scope(self.space)], TextSearch(text, DEPTH, weight=0.0))
        return Outcome([self.key_of_row[h.memory.row_id] for h in hits], 0.0)

    async def candidates(self, text: str) -> Candidates:
        event = policy_for(require_model(self.space).model).event_query  # as EngramRanking.run embeds it
        found = await self.ctx.services.hybrid.candidates(
            [Scope(self.space)], TextSearch(text, DEPTH, weight=0.5, event=event)
        )
        similarity, keyword = found.similarity, found.keyword
        rows = sorted(found.owner)
        model_key = require_model(self.space).key

        def read(conn):
            memories = {m.row_id: m for m in memory_reads.get_memories(conn, self.space.uri, rows)}
            ids, matrix = store_documents.row_vectors(conn, self.space.uri, rows, model_key)
            vectors = {}
            for i, row in enumerate(ids.tolist()):
                vectors[row] = matrix[i] / max(float(np.linalg.norm(matrix[i])), 1e-12)
            return memories, vectors

        memories, vectors = await self.ctx.store.read(read)
        term_idf = await self.ctx.services.hybrid.keywords.idf(self.space, text)
        names = [name for m in memories.values() for name in (m.uri, m.rkey)]
        annotation = await self.ctx.services.hybrid.keywords.annotate(self.space, text, [], names, None)
        naming = sorted({r for named in annotation.named_by.values() for r in named})

        def read_naming(conn):
            return {m.row_id: m for m in memory_reads.get_memories(conn, self.space.uri, naming)}

        successors = await self.ctx.store.read(read_naming) if naming else {}
        return Candidates(
            similarity, keyword, memories, vectors, term_idf,
            adjacent=found.adjacent, others=found.others, annotation=annotation, successors=successors,
            text=text, dated=found.dated,
        )  # fmt: skip

    def fused(self, found: Candidates, policy: RankingPolicy) -> Outcome:
        policy = for_pool(policy, found.similarity, found.keyword, found.adjacent)  # as EngramRanking.rank
        fused = fuse_candidates(
            found.similarity, found.keyword, policy, found.adjacent, found.others,
            when=asks_when(fold(found.text)), dated=found.dated,
        )  # fmt: skip
        top = max(found.similarity.values(), default=0.0)
        if policy.restatements is None:
            return Outcome([self.key_of_row[r] for r, _ in fused[:DEPTH]], top)
        # EngramRanking.run's steps over the collected candidates: the pool arranged, then explain.finish
        # marks, places and (with `current`) drops superseded hits, as every door gets them
        pool = max(DEPTH, POOL)
        bonus = cross_lingual_bonus(policy)
        foreign = cross_lingual.foreign(found.memories, found.text) if bonus > 0 else frozenset()
        fused = cross_lingual.level(fused[:pool], foreign, bonus)
        ranking = arrange(
            fused,
            found.memories,
            found.vectors,
            found.similarity,
            found.keyword,
            pool,
            policy,
            found.adjacent,
        )
        best = ranking.hits[0].memory if ranking.hits else None
        covered = coverage(best, found.term_idf) if best is not None else 0.0
        assert found.annotation is not None
        owner = dict.fromkeys(found.memories.keys() | found.successors.keys(), self.space.uri)
        lists = [
            finish(
                ranking.hits, {self.space.uri: found.annotation}, owner, found.successors, ranking.links,
                policy, limit=DEPTH, current=current, min_confidence=None, spaces=[self.space.uri],
                foreign=foreign,
            )[0]
            for current in (False, True)
        ]  # fmt: skip
        keys, current = ([self.key_of_row[h.memory.row_id] for h in hits] for hits in lists)
        lifted = lifted_top(top, best is not None and best.row_id in foreign, policy)
        return Outcome(keys, top, confidence(lifted, covered, policy), covered, current)


def keys_by_row(conn, space_uri: str, key_of_text: dict[str, str]) -> dict[int, str]:
    """Every memory row of the space mapped to its corpus key (by its unique text)."""
    found, after = {}, 0
    while batch := memory_reads.export_batch(conn, space_uri, after, 1000):
        for memory in batch:
            found[memory.row_id] = key_of_text[memory.text]
        after = batch[-1].row_id
    return found
