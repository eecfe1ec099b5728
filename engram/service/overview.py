"""What the web console shows about a space beyond the XRPC reads: index state and a memory's neighbours.

Both are compositions of the existing services and store reads (no new queries): the index kind follows
the same rule the index uses (`ENGRAM_EXACT_MAX`), and a memory's neighbours are a search with its own
stored vector.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..search.vectors import encode_query_vector
from ..store import Memory, Space, SpaceStatus, memory_reads
from .search import SearchQuery

if TYPE_CHECKING:
    from ..search.manager import IndexManager
    from ..store.database import Store
    from .search import SearchService
    from .spaces import SpaceService

EXACT = "exact"
HNSW = "HNSW"


@dataclass(frozen=True)
class SpaceOverview:
    space: Space
    status: SpaceStatus
    indexed: int  # memories searchable with the active model (what getSpaceStatus calls `memories`)
    skipped: int
    index_kind: str | None  # EXACT or HNSW; None when the space has no model
    loaded: bool  # the index is in memory now (a first search would not wait for a load)


async def space_overview(spaces: SpaceService, index: IndexManager, space: Space) -> SpaceOverview:
    status = await spaces.status(space.uri)
    skipped = sum(count for _, count in status.skipped)
    indexed = max(status.memories - skipped, 0)
    kind, loaded = None, False
    if space.config is not None:
        key = space.config.active.key
        loaded = index.is_loaded(space.uri, key)
        built = index.loaded_index(space.uri, key)
        if built is not None:
            kind = HNSW if built.coarse is not None else EXACT
        else:  # what a load would build (engram/search/index.py: SpaceIndex.build)
            kind = HNSW if indexed > index.tuning.exact_max else EXACT
    return SpaceOverview(space, status, indexed, skipped, kind, loaded)


async def nearest_neighbours(
    store: Store, search: SearchService, space: Space, memory: Memory, k: int
) -> list[tuple[Memory, int]]:
    """The `k` memories most similar to `memory` (itself left out), by its stored vector of the space's
    active model; empty when it has none (skipped, or written with another model)."""
    if space.config is None:
        return []
    active = space.config.active
    rows = await store.read(memory_reads.export_batch, space.uri, memory.row_id - 1, 1)
    if not rows or rows[0].uri != memory.uri or rows[0].model_key != active.key or not rows[0].vector:
        return []
    vector = np.frombuffer(rows[0].vector, dtype="<f2")
    query = SearchQuery(
        vector=encode_query_vector(vector), model=active.model, model_digest=active.digest, limit=k + 1
    )
    outcome = await search.search(space, query)
    return [(m, sim) for m, sim in outcome.hits if m.uri != memory.uri][:k]
