"""Keyword (BM25) and hybrid search over one or more spaces, for the REST shims (docs/compat.md).

A search names its scopes (a whole space, or only some of its rows such as a shim's documents), the user's
text, a weight (1 = semantic only, 0 = keyword only, between = hybrid) and the same pre-filters as
searchMemories (author, all-of tags, since). Per scope it collects CANDIDATES keyword candidates (BM25
over the space's in-memory keyword index, engram/search/keyword_index.py, while the query is embedded),
then up to CANDIDATES vector candidates from the space's index, whose `then` (the same worker call, under
the index's read share) scores the vector candidates' keyword shares and the keyword-only candidates'
cosines from the index itself (SpaceIndex.cosines, as the search scores its hits) and gathers every
candidate's unit vector for the ranking's restatement check: two thread hops for both sides, no store read
(docs/benchmarks.md, "Hybrid against vector at 100k"). An exact subset of rows (a shim's documents) is
scanned from the store, both sides concurrently, and its keyword-only candidates get the cosine of their
stored vectors. Every candidate
thus has both scores, and `fusion.fuse` ranks the union across all scopes. The candidates' conversation
neighbours (the memories written just before and after them, engram/search/keyword_index.py
`CONVERSATION_GAP_MS`) are collected with both scores too, for the engram ranking's context step
(fusion.in_context), and, for a question asking when, which of them say when (fusion.anchored).
"""

from __future__ import annotations

import asyncio
import heapq
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

import numpy as np

from ..search.dates import the_event
from ..search.filters import AttrPredicate, Filters
from ..search.index import SearchResult
from ..search.keyword_index import KeywordResult
from ..store import Memory, Space, memory_reads
from ..store import documents as store_documents
from .filter_spec import search_filters
from .fusion import fuse
from .search import SearchQuery, require_model, within

if TYPE_CHECKING:
    from ..search.manager import IndexManager
    from ..store.database import Store
    from .search import SearchService

T = TypeVar("T")
# one scope's candidates: cosines, keyword shares, conversation neighbours, rows said by others, unit vectors,
# the turns that say when (for a question asking when)
Part = tuple[
    dict[int, float],
    dict[int, float],
    dict[int, tuple[int | None, int | None]],
    set[int],
    dict[int, np.ndarray],
    set[int],
]
CANDIDATES = 100  # per scope and per side; the union holds at most 2 x CANDIDATES per scope
CONTEXT = 30  # per side, the leading candidates whose conversation neighbours are collected


@dataclass(frozen=True)
class Scope:
    space: Space
    row_ids: tuple[int, ...] | None = None  # only these rows of the space; None = the whole space


@dataclass(frozen=True)
class TextSearch:
    text: str
    limit: int = 10
    weight: float = 1.0  # share of the semantic score: 1 = vector only, 0 = keyword only
    author: str | None = None
    tags: tuple[str, ...] = ()
    since: str | None = None
    until: str | None = None
    tags_any: tuple[str, ...] = ()  # at least one of them
    tags_none: tuple[str, ...] = ()  # none of them
    attrs: tuple[AttrPredicate, ...] = ()  # typed predicates on attrs (filter_spec.parse_where)
    current: bool = False  # drop superseded memories (engram/service/explain.py)
    min_confidence: float | None = None  # drop hits less likely to answer (explain.py; "below_threshold")
    # a "When ...?" question embedded as the event it asks about (dates.the_event), or as it is: the
    # ranking policy of the space's model says which (RankingPolicy.event_query)
    event: bool = True


@dataclass(frozen=True)
class Found:
    """Every candidate of a text search over some scopes, with what ranking it needs."""

    similarity: dict[int, float]  # cosine per row
    keyword: dict[int, float]  # BM25 share per row (rows that matched a query word)
    owner: dict[int, str]  # space URI per row
    # {candidate: (the memory before it, the one after it) in its conversation} (KeywordResult.adjacent)
    adjacent: dict[int, tuple[int | None, int | None]] = field(default_factory=dict)
    # rows said by someone other than the speaker the query names (KeywordResult.by_others)
    others: set[int] = field(default_factory=set)
    # unit vectors per row, from the loaded index that scored them (a whole-space scope with both sides):
    # the ranking's restatement check reads only the rows missing here from the store (ranking._read)
    vectors: dict[int, np.ndarray] = field(default_factory=dict)
    # {space URI: space id} of the scopes, for the hit cache (ranking._read)
    space_ids: dict[str, int] = field(default_factory=dict)
    # when the query asks when: the conversation turns in `adjacent` whose text names a date
    # (KeywordResult.dated), for the ranking's date anchor (fusion.anchored)
    dated: set[int] = field(default_factory=set)


@dataclass(frozen=True)
class RankedHit:
    memory: Memory
    score: float  # fused relevance in [0, 1] (fusion.fuse)
    similarity: float | None  # cosine clipped to [0, 1], when the memory has a vector of the space's model
    keyword: (
        float | None
    )  # BM25 as a share of the query's attainable score, in [0, 1], when a query word matched


class HybridSearch:
    def __init__(self, store: Store, index: IndexManager, search: SearchService):
        self.store = store
        self.index = index
        self.search = search
        self.keywords = index.keywords  # engram/search/keyword_indexes.py

    async def run(self, scopes: Sequence[Scope], query: TextSearch) -> list[RankedHit]:
        scopes = [s for s in scopes if s.row_ids is None or s.row_ids]
        if not scopes or not query.text.strip():
            return []
        return await self.bounded(query, self._run(scopes, query))

    async def bounded(self, query: TextSearch, work: Awaitable[T]) -> T:
        """`work` after the query's own checks, within the search's hard limit (503 IndexLoading past it):
        the one envelope of a text search here and in the engram-chosen ranking (ranking.py)."""
        try:
            filters_of(query)  # a bad `since` or `until` is the caller's error, before any work
            return await within(self.search.hard_limit_s, work)
        finally:
            if asyncio.iscoroutine(work):
                work.close()  # never awaited when a check failed first: no "never awaited" warning

    async def _run(self, scopes: list[Scope], query: TextSearch) -> list[RankedHit]:
        found = await self.candidates(scopes, query)
        similarity, keyword = found.similarity, found.keyword
        ranked = fuse(similarity, keyword, query.weight)[: query.limit]
        memories = await self._hydrate(ranked, found.owner)
        return [
            RankedHit(memories[row_id], score, similarity.get(row_id), keyword.get(row_id))
            for row_id, score in ranked
            if row_id in memories
        ]

    async def candidates(self, scopes: Sequence[Scope], query: TextSearch) -> Found:
        """Every candidate of the scopes and their conversation neighbours, with the cosine and BM25 share
        of each; both sides are collected when 0 < weight < 1, neighbours whenever the keyword side is.
        Engram-chosen rankings (engram/service/ranking.py) fuse these."""
        # The query is embedded while the keyword sides run (each scope starts its keyword search at once)
        embedding = asyncio.ensure_future(self._query_vectors(scopes, query)) if query.weight > 0 else None
        try:
            parts = await asyncio.gather(*(self._scope(scope, query, embedding) for scope in scopes))
        finally:
            if embedding is not None and not embedding.done():
                embedding.cancel()
            elif embedding is not None and not embedding.cancelled():
                embedding.exception()  # retrieved: a failed embedding is reported through the scopes
        found = Found({}, {}, {})
        for scope, (sims, kws, adjacent, others, vectors, dated) in zip(scopes, parts, strict=True):
            found.vectors.update(vectors)
            found.dated.update(dated)
            found.space_ids[scope.space.uri] = scope.space.id
            found.similarity.update(sims)
            found.keyword.update(kws)
            found.adjacent.update(adjacent)
            found.others.update(others)
            neighbours = _neighbours(adjacent)
            found.owner.update(dict.fromkeys(sims.keys() | kws.keys() | neighbours, scope.space.uri))
        return found

    async def _query_vectors(self, scopes: Sequence[Scope], query: TextSearch) -> dict[str, np.ndarray]:
        """The embedded query per (model, query prefix): spaces sharing a model embed the text once."""
        vectors: dict[str, np.ndarray] = {}
        for scope in scopes:
            key = self._vector_key(scope.space)
            if key not in vectors:
                text = the_event(query.text) if query.event else query.text
                vectors[key] = await self.search.query_vector(scope.space, SearchQuery(q=text))
        return vectors

    @staticmethod
    def _vector_key(space: Space) -> str:
        active = require_model(space)
        return f"{active.key}\n{space.config.query_prefix}"

    async def _scope(
        self, scope: Scope, query: TextSearch, embedding: asyncio.Future[dict[str, np.ndarray]] | None
    ) -> Part:
        """One scope's candidates. The space's rate is checked first; one of its search slots is held for
        the searches only, never while the query waits its turn for the embedder (that wait has its own
        fair queue, engram/service/text_query.py): a slot held through it turned an agent's parallel
        recalls away as "too many concurrent searches" whenever embedding ran slow."""
        space, want_vector, want_keyword = scope.space, query.weight > 0, query.weight < 1
        limiter = self.search.limiter
        spent = limiter.spend(space.uri)
        if not want_keyword:
            vector = await self._vector_of(space, embedding)
            async with limiter.acquire(space.uri, spent):
                return await self._vector_candidates(scope, query, vector), {}, {}, set(), {}, set()
        if not want_vector:
            async with limiter.acquire(space.uri, spent):
                keyword = await self._keyword_candidates(scope, query)
            kws, adjacent, _ = _keyword_side({}, keyword)
            turns = adjacent.keys() | _neighbours(adjacent)
            return {}, kws, adjacent, keyword.by_others(kws.keys() | turns), {}, keyword.dated(turns)
        keyword_search = asyncio.ensure_future(self._keyword_candidates(scope, query))  # while it embeds
        try:
            vector = await self._vector_of(space, embedding)
            async with limiter.acquire(space.uri, spent):
                if scope.row_ids is None:
                    # The keyword side first, then the vector search, whose `then` (in the FAISS worker,
                    # under the index's read share) scores the keyword-only candidates and the neighbours
                    # against the index itself: no store read, no further hop (docs/benchmarks.md).
                    keyword = await keyword_search
                    sims, kws, adjacent, missing, vectors = await self._vector_side(
                        scope, query, vector, keyword
                    )
                else:
                    sims, keyword = await asyncio.gather(
                        self._vector_candidates(scope, query, vector), keyword_search
                    )
                    kws, adjacent, missing = _keyword_side(sims, keyword)
                    vectors = {}
                if missing:  # not in the loaded index (an exact subset, or an empty result): stored vectors
                    sims.update(
                        await self._exact_similarities(
                            space, missing, query, vector, filtered=True, keep=None
                        )
                    )
        finally:
            if not keyword_search.done():
                keyword_search.cancel()  # the embedding failed: the (detached) keyword search is moot
        neighbours = _neighbours(adjacent)
        others = keyword.by_others(sims.keys() | kws.keys() | neighbours)
        return sims, kws, adjacent, others, vectors, keyword.dated(adjacent.keys() | neighbours)

    async def _vector_of(
        self, space: Space, embedding: asyncio.Future[dict[str, np.ndarray]] | None
    ) -> np.ndarray:
        """The space's embedded query, from the embedding that scopes share (shielded: one scope giving up
        does not cancel the others' embedding)."""
        assert embedding is not None  # embedded whenever the weight wants the vector side
        return (await asyncio.shield(embedding))[self._vector_key(space)]

    async def _vector_side(
        self, scope: Scope, query: TextSearch, vector: np.ndarray, keyword: KeywordResult
    ) -> tuple[
        dict[int, float],
        dict[int, float],
        dict[int, tuple[int | None, int | None]],
        list[int],
        dict[int, np.ndarray],
    ]:
        """The vector candidates and, in the same worker call, the keyword side's remaining work: keyword
        shares of the vector candidates, conversation neighbours, and the cosines of the rows only the
        keyword side found, from the index that answered (`SpaceIndex.cosines`: scored as the search
        scores its hits), with every candidate's unit vector for the restatement check. Returns also the
        rows still without a cosine (not in that index)."""
        q = np.ascontiguousarray(vector, dtype=np.float32)

        def then(result: SearchResult):
            sims = dict(zip(result.row_ids.tolist(), result.scores.tolist(), strict=True))
            kws, adjacent, missing = _keyword_side(sims, keyword)
            vectors: dict[int, np.ndarray] = {}
            if result.index is not None:
                # every candidate's unit vector and the missing rows' cosines from one gather of the index
                wanted = np.concatenate(
                    [result.row_ids.astype(np.int64), np.asarray(missing, dtype=np.int64)]
                )
                scored = np.arange(wanted.shape[0]) >= result.row_ids.shape[0]  # the missing rows
                ids, matrix, found, scores = result.index.unit_vectors_and_cosines(wanted, q, scored)
                vectors = dict(zip(ids.tolist(), matrix, strict=True))
                if missing:
                    best = np.argsort(-scores, kind="stable")
                    sims.update(zip(found[best].tolist(), scores[best].tolist(), strict=True))
                    missing = [r for r in missing if r not in sims]
            return sims, kws, adjacent, missing, vectors

        k = max(CANDIDATES, query.limit)
        return await self.search.index_search(scope.space, vector, k, filters_of(query), then=then)  # type: ignore[no-any-return]

    async def _vector_candidates(
        self, scope: Scope, query: TextSearch, vector: np.ndarray
    ) -> dict[int, float]:
        if scope.row_ids is not None:
            return await self._exact_similarities(scope.space, scope.row_ids, query, vector)
        k = max(CANDIDATES, query.limit)
        result = await self.search.index_search(scope.space, vector, k, filters_of(query))
        return dict(zip(result.row_ids.tolist(), result.scores.tolist(), strict=True))

    async def _exact_similarities(
        self,
        space: Space,
        row_ids: Sequence[int],
        query: TextSearch,
        vector: np.ndarray,
        *,
        filtered: bool = False,
        keep: int | None = CANDIDATES,
    ) -> dict[int, float]:
        """Cosine of the query with the stored vectors of those rows (that pass the filters, unless they
        are `filtered` already), the best `keep` of them (None: all), computed in the reader thread that
        reads them (a 100 x d product: no second thread hop for it). The filters are the keyword index's
        columns, as every search's are."""
        filters = filters_of(query)
        if row_ids and not filtered and not filters.is_empty():
            row_ids = await self.keywords.allowed_rows(space, list(row_ids), filters)
        if not row_ids:
            return {}

        def read(conn):
            ids, matrix = store_documents.row_vectors(
                conn, space.uri, list(row_ids), require_model(space).key
            )
            return ids, (_cosines(matrix, vector) if ids.shape[0] else np.zeros(0, np.float32))

        ids, scores = await self.store.read(read)
        best = np.argsort(-scores, kind="stable")
        if keep is not None:
            best = best[: max(keep, query.limit)]
        return {int(ids[i]): float(scores[i]) for i in best}

    async def _keyword_candidates(self, scope: Scope, query: TextSearch) -> KeywordResult:
        limit = max(CANDIDATES, query.limit)
        return await self.keywords.search(scope.space, query.text, limit, filters_of(query), scope.row_ids)

    async def _hydrate(self, ranked: list[tuple[int, float]], owner: dict[int, str]) -> dict[int, Memory]:
        by_space: dict[str, list[int]] = {}
        for row_id, _ in ranked:
            by_space.setdefault(owner[row_id], []).append(row_id)

        def read(conn):
            found = {}
            for uri, row_ids in by_space.items():
                found.update((m.row_id, m) for m in memory_reads.get_memories(conn, uri, row_ids))
            return found

        return await self.store.read(read)


def _keyword_side(
    sims: dict[int, float], keyword: KeywordResult
) -> tuple[dict[int, float], dict[int, tuple[int | None, int | None]], list[int]]:
    """From the keyword result and the vector candidates `sims`: every candidate's keyword share, the
    conversation neighbours of the leading candidates of each side and theirs, and the rows (keyword-only
    candidates, neighbours) still without a cosine; these passed the filters in the keyword index."""
    kws = keyword.best()
    # neighbours of the leading candidates of each side only: a turn borrows at most 0.8x its
    # neighbour's score (fusion.in_context), so only strong candidates lend enough to matter
    adjacent = keyword.adjacent(_leading(sims) | _leading(kws))
    # and their neighbours' neighbours: the context reaches two turns (ranking.RankingPolicy.reach)
    adjacent |= keyword.adjacent(_neighbours(adjacent) - adjacent.keys())
    neighbours = _neighbours(adjacent)
    kws.update(keyword.of(sims.keys() | neighbours))
    return kws, adjacent, [r for r in kws.keys() | neighbours if r not in sims]


def _neighbours(adjacent: dict[int, tuple[int | None, int | None]]) -> set[int]:
    return {row for pair in adjacent.values() for row in pair if row is not None}


def _leading(scores: dict[int, float]) -> set[int]:
    return set(heapq.nlargest(CONTEXT, scores, key=scores.__getitem__))


def filters_of(query: TextSearch) -> Filters:
    return search_filters(
        author=query.author, tags=query.tags, since=query.since, until=query.until,
        tags_any=query.tags_any, tags_none=query.tags_none, attrs=query.attrs,
    )  # fmt: skip


def _cosines(matrix: np.ndarray, vector: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(matrix, axis=1)
    norms[norms == 0] = 1.0
    return (matrix @ vector) / norms
