"""Engram-chosen rankings: fused vector + keyword relevance, newer restatements first, and a confidence.

The one pipeline wherever engram decides the order (GPTBots at every embedding_rate, an agent's MCP
recall in every mode, the console's search): `EngramRanking.run` ranks a text query over some scopes by
`mode`:
- "vector": cosine only; "keyword": the keyword share only; "hybrid": the policy's fusion of both (tuned
  with `engram eval` on the tuning halves of the labelled set, per model: `policy_for`;
  docs/benchmarks.md has the held-out numbers).
Then restatements are moved before what they replace (supersession.py), and `confidence` says how likely
the best hit answers the query at all (the top cosine against a threshold chosen on the tuning half), so
a caller can show "nothing relevant" instead of the nearest unrelated memory.
`garden.engram.searchMemories` never comes here: it is pure vector search by its lexicon.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import numpy as np

from ..errors import InvalidInput
from ..search.analyzer import terms
from ..store import Memory, memory_reads
from ..store import documents as store_documents
from ..store import spaces as store_spaces
from .fusion import fuse, rrf_fuse
from .search import require_model
from .supersession import Restatements, newer_first

if TYPE_CHECKING:
    from .hybrid import HybridSearch, Scope, TextSearch

MODES = ("vector", "keyword", "hybrid")
POOL = 30  # candidates looked at for restatements beyond the requested limit


@dataclass(frozen=True)
class RankingPolicy:
    """Defaults chosen by `engram eval --split tuning --tune` (docs/benchmarks.md)."""

    fusion: str = "convex"  # "convex" or "rrf" (fusion.py)
    weight: float = 0.3  # convex: share of the cosine
    restatements: Restatements | None = field(default_factory=Restatements)
    answer_similarity: float = 0.6  # top cosine at which confidence reaches 0.5 ...
    answer_coverage: float = 0.56  # ... or the share of the query's idf the best hit holds


DEFAULT_POLICY = RankingPolicy()
# Cosines mean different things under different models: e5's sit high and close together (two unrelated
# passages often score 0.75), so its thresholds are its own, tuned the same way (docs/benchmarks.md).
MODEL_POLICIES: dict[str, RankingPolicy] = {
    "multilingual-e5-small-q4": RankingPolicy(
        weight=0.9, restatements=Restatements(0.92, 0.5, 0.5), answer_similarity=0.88, answer_coverage=0.58
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
    superseded_by: str | None = None  # at:// URI of the newer memory that restates this one


@dataclass(frozen=True)
class Ranking:
    hits: list[RankedMemory]
    confidence: float  # in [0, 1]; below 0.5 the best hit probably does not answer the query (confidence())
    top_similarity: float = 0.0  # the best cosine among the candidates


class EngramRanking:
    def __init__(self, ctx, hybrid: HybridSearch, policy: RankingPolicy | None = None):
        self.ctx = ctx
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
            return Ranking([], 0.0, 0.0)
        return await self.hybrid.bounded(query, self._run(scopes, query, mode, weight))

    async def _run(
        self, scopes: Sequence[Scope], query: TextSearch, mode: str, weight: float | None
    ) -> Ranking:
        side_weight = {"vector": 1.0, "keyword": 0.0}.get(mode, 0.5)
        # Vector mode still collects the keyword side: ranked by cosine alone, but the restatement rule
        # needs each candidate's keyword share (supersession.py); keyword mode needs no cosines.
        collect = 0.0 if mode == "keyword" else 0.5
        similarity, keyword, owner = await self.hybrid.candidates(scopes, replace(query, weight=collect))
        first = scopes[0].space.config
        policy = self.policy or policy_for(first.active.model if first is not None else None)
        if mode != "hybrid":
            policy = replace(policy, fusion="convex", weight=side_weight)
        elif weight is not None:
            policy = replace(policy, fusion="convex", weight=weight)
        ranking = await self.rank(similarity, keyword, owner, query.limit, policy)
        if not ranking.hits:
            return ranking
        best = ranking.hits[0].memory
        space = next(s.space for s in scopes if s.space.uri == owner[best.row_id])
        term_idf = await self.hybrid.keywords.idf(space, query.text)
        return replace(
            ranking, confidence=confidence(ranking.top_similarity, coverage(best, term_idf), policy)
        )

    async def rank(
        self,
        similarity: Mapping[int, float],
        keyword: Mapping[int, float],
        owner: Mapping[int, str],
        limit: int,
        policy: RankingPolicy,
    ) -> Ranking:
        """Rank already collected candidates (HybridSearch.candidates) under `policy` (the confidence here
        knows only the cosine; `run` adds the keyword coverage)."""
        fused = fuse_candidates(similarity, keyword, policy)
        head = fused[: max(limit, POOL) if policy.restatements else limit]
        memories, vectors = await self._read(head, owner, with_vectors=policy.restatements is not None)
        return arrange(fused, memories, vectors, similarity, keyword, limit, policy)

    async def _read(
        self, head: Sequence[tuple[int, float]], owner: Mapping[int, str], *, with_vectors: bool
    ) -> tuple[dict[int, Memory], dict[int, np.ndarray]]:
        by_space: dict[str, list[int]] = {}
        for row, _ in head:
            by_space.setdefault(owner[row], []).append(row)

        def read(conn):  # the spaces' models are read here too: one thread hop, not one per space
            memories, vectors = {}, {}
            for uri, rows in by_space.items():
                memories.update((m.row_id, m) for m in memory_reads.get_memories(conn, uri, rows))
                space = store_spaces.get_space(conn, uri) if with_vectors else None
                if space is not None and space.config is not None:
                    ids, matrix = store_documents.row_vectors(conn, uri, rows, require_model(space).key)
                    norms = np.linalg.norm(matrix, axis=1, keepdims=True) if ids.shape[0] else None
                    for i, row in enumerate(ids.tolist()):
                        vectors[row] = matrix[i] / max(float(norms[i, 0]), 1e-12)
            return memories, vectors

        return await self.ctx.store.read(read)


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
    by_similarity = 1.0 / (1.0 + np.exp(-steepness * (top_similarity - policy.answer_similarity)))
    by_coverage = 1.0 / (1.0 + np.exp(-steepness * (covered - policy.answer_coverage)))
    return float(max(by_similarity, by_coverage))


def fuse_candidates(
    similarity: Mapping[int, float], keyword: Mapping[int, float], policy: RankingPolicy
) -> list[tuple[int, float]]:
    if policy.fusion == "rrf":
        return rrf_fuse(similarity, keyword)
    return fuse(similarity, keyword, policy.weight)


def arrange(
    fused: Sequence[tuple[int, float]],
    memories: Mapping[int, Memory],
    vectors: Mapping[int, np.ndarray],
    similarity: Mapping[int, float],
    keyword: Mapping[int, float],
    limit: int,
    policy: RankingPolicy,
) -> Ranking:
    """The final ranking from fused candidates and the memories (and unit vectors) of at least the first
    max(limit, POOL) of them: restatements first, superseded ones marked, cut to `limit`."""
    head = fused[: max(limit, POOL) if policy.restatements else limit]
    if policy.restatements is not None:
        order, replaced_by = newer_first(head, memories, vectors, policy.restatements, keyword)
    else:
        order, replaced_by = [r for r, _ in head if r in memories], {}
    score = dict(fused)
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
    return Ranking(hits, confidence(top, 0.0, policy), top)
