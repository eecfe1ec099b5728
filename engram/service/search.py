"""searchMemories and getMemoryGraph over a space's index: model checks, filters, limits, hydration."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from ..errors import InvalidInput, Unavailable
from ..search.filters import Filters
from ..search.limits import Decision, SearchLimiter
from ..search.vectors import decode_query_vector, similarities_permille, similarity_permille
from ..store import Memory, Space, memory_reads
from ..store.hit_cache import HitCache
from ..store.prepared_memories import parse_datetime_ms
from .text_query import TextQueries

# No search holds a caller longer (docs/internals.md#search); the AppView feed timeout is the same.
HARD_LIMIT_S = 10.0
T = TypeVar("T")


def too_slow() -> Unavailable:
    """The one answer to a search past its time limit (docs/internals.md#search): retry shortly."""
    return Unavailable("the search did not finish in time; retry shortly", "IndexLoading", retry_after=1)


async def within(limit_s: float, work: Awaitable[T]) -> T:
    """`work` within `limit_s`, else `too_slow()`. A load or a delta in flight (detached inside the index
    manager) finishes in the background and leaves the index warm; a search already running in a worker
    finishes there and then frees its lock. asyncio.timeout, not wait_for: no extra task per search."""
    try:
        async with asyncio.timeout(limit_s):
            return await work
    except TimeoutError:
        raise too_slow() from None


if TYPE_CHECKING:
    from ..search.manager import IndexManager
    from ..store.database import Store
    from ..store.direct_reads import DirectReader
    from .spaces import SpaceService


@dataclass(frozen=True)
class SearchQuery:
    vector: str | None = None
    model: str | None = None
    model_digest: str | None = None
    q: str | None = None
    limit: int = 10
    author: str | None = None
    tags: tuple[str, ...] = ()
    since: str | None = None


@dataclass
class SearchOutcome:
    hits: list[tuple[Memory, int]]  # (memory, similarity 0..1000), best first
    approximate: bool = False
    quota: Decision | None = None  # the space's bucket after this search (the front door renders it)


@dataclass
class Graph:
    nodes: list[Memory]
    edges: list[tuple[int, int, int]]  # (a, b, similarity 0..1000), a < b, indexes into nodes


def require_model(space: Space):
    if space.config is None:
        raise InvalidInput("the space's authority has not declared an embedding model", "NoModel")
    return space.config.active


class SearchService:
    def __init__(
        self,
        store: Store,
        direct_reads: DirectReader,
        index: IndexManager,
        spaces: SpaceService,
        *,
        limiter: SearchLimiter,
        text: TextQueries,
        hit_cache: HitCache,  # ENGRAM_HIT_CACHE_BYTES (0: off): config's, no default of its own
    ):
        self.store = store
        self.direct_reads = direct_reads
        self.index = index
        self.spaces = spaces
        self.limiter = limiter  # per-space search token buckets and concurrency caps
        self.text = text
        self.hit_cache = hit_cache  # recent hits, kept hydrated (engram/store/hit_cache.py)
        self.hard_limit_s = HARD_LIMIT_S

    async def query_vector(self, space: Space, query: SearchQuery) -> np.ndarray:
        """The unit float32 query: the caller's decoded vector, or `q` embedded by the hosted model."""
        active = require_model(space)
        if query.vector is None:
            if not query.q:
                raise InvalidInput("send vector, model and modelDigest (or q, where text search is on)")
            return await self.text.embed(space, query.q)
        if query.model is None or query.model_digest is None:
            raise InvalidInput("vector needs model and modelDigest")
        if (query.model, query.model_digest) != (active.model, active.digest):
            raise InvalidInput(
                f"the space's model is {active.model} ({active.digest}); re-read the space's config",
                "ModelMismatch",
            )
        vector = decode_query_vector(query.vector)
        if vector.shape[0] != active.dims:
            raise InvalidInput(
                f"vector has {vector.shape[0]} dimensions; the space's model has {active.dims}",
                "ModelMismatch",
            )
        return vector

    async def index_search(
        self,
        space: Space,
        vector: np.ndarray,
        k: int,
        filters: Filters | None,
        *,
        then: Callable[[Any], Any] | None = None,
        limit_s: float | None = None,
    ) -> Any:
        """The one search of a space's index under its active model, within the hard limit (or `limit_s`):
        searchMemories, the hybrid/keyword rankings' vector side and the Memory Bank shim all come here.
        `then(result)` runs in the FAISS worker right after the search (hydration: one thread hop)."""
        active = require_model(space)
        search = self.index.search(
            space.uri, active.key, active.dims, vector, k,
            None if filters is None or filters.is_empty() else filters,
            generation=space.generation,  # read with the space a moment ago by the caller's auth step
            then=then,
        )  # fmt: skip
        return await within(self.hard_limit_s if limit_s is None else limit_s, search)

    async def search(self, space: Space, query: SearchQuery) -> SearchOutcome:
        vector = await self.query_vector(space, query)
        filters = Filters(
            author=query.author,
            tags=tuple(dict.fromkeys(query.tags)),
            since_ms=parse_datetime_ms(query.since, "since") if query.since else None,
        )
        reader, hit_cache = self.direct_reads, self.hit_cache

        def read_hits(row_ids: list[int]) -> list:
            return reader.statement(memory_reads.get_hits, space.id, row_ids)

        def hydrate(result):  # runs in the FAISS worker right after the search: one thread hop, not two
            # ... and pairs the hits with their similarities there too, off the event loop's thread.
            row_ids = result.row_ids.tolist()
            permille = dict(zip(row_ids, similarities_permille(result.scores), strict=True))
            memories = hit_cache.hydrate(space.id, row_ids, read_hits)
            return [(m, permille[m.row_id]) for m in memories], bool(result.approximate)

        decision = await self.limiter.enter(space.uri)
        try:
            hits, approximate = await self.index_search(space, vector, query.limit, filters, then=hydrate)
        finally:
            self.limiter.leave(space.uri)
        return SearchOutcome(hits, approximate, decision)

    async def graph(self, space: Space, *, limit: int, neighbors: int, min_similarity: float) -> Graph:
        """The newest `limit` memories and, for each, its `neighbors` most similar others at or above
        `min_similarity` (a pair appears once). Draws on the space's search limits like a search does."""
        active = require_model(space)
        async with self.limiter.acquire(space.uri):
            found = await self.index.graph(space.uri, active.key, active.dims, limit, neighbors)
        row_ids = [int(r) for r in found.row_ids]
        memories = await self.store.read(memory_reads.get_memories, space.uri, row_ids)
        position = {m.row_id: i for i, m in enumerate(memories)}
        edges: dict[tuple[int, int], int] = {}
        for i, row_id in enumerate(row_ids):
            for other, cosine in zip(found.neighbor_ids[i].tolist(), found.scores[i].tolist(), strict=True):
                a, b = position.get(row_id), position.get(other)
                if other < 0 or a is None or b is None or cosine < min_similarity:
                    continue
                edges[(min(a, b), max(a, b))] = similarity_permille(cosine)
        return Graph(memories, [(a, b, sim) for (a, b), sim in sorted(edges.items())])

    async def warm(self, space: Space) -> None:
        if space.config is not None:
            active = space.config.active
            await self.index.warm(space.uri, active.key, active.dims)
