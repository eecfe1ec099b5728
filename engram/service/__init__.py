"""Domain operations shared by the XRPC handlers, the CLI, the remote admin methods and the shims.

Nothing here knows about aiohttp requests: callers pass plain values and get plain values back; failures
are domain errors (`engram/errors.py`) carrying the lexicon's error names, which every caller renders in its
own shape.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..search.limits import SearchLimiter
from ..store.hit_cache import HitCache
from .documents.service import DocumentService
from .hybrid import HybridSearch
from .memories import MemoryService
from .ranking import EngramRanking
from .search import SearchService
from .spaces import SpaceService
from .text_query import TextQueries

if TYPE_CHECKING:
    from ..context import AppContext


@dataclass
class Services:
    spaces: SpaceService
    memories: MemoryService
    search: SearchService
    hybrid: HybridSearch = None  # keyword and hybrid search for the REST shims (engram/service/hybrid.py)
    ranking: EngramRanking = None  # engram-chosen rankings: tuned fusion, newer facts first (ranking.py)
    documents: DocumentService = None  # files in, chunk memories out (engram/service/documents/)

    @classmethod
    def build(cls, ctx: AppContext) -> Services:
        """The services over the context's parts, each given exactly the collaborators it uses."""
        s = ctx.settings
        spaces = SpaceService(
            ctx.store,
            ctx.direct_reads,
            ctx.index,
            service_did=s.service_did,
            embedder=ctx.embedder,
            notifier=ctx.notifier,
        )
        memories = MemoryService(ctx.store, spaces, embedder=ctx.embedder, pool=ctx.pool)
        search = SearchService(
            ctx.store,
            ctx.direct_reads,
            ctx.index,
            spaces,
            limiter=SearchLimiter(
                s.search_rate,
                s.search_burst,
                s.search_concurrency,
                wait_s=s.search_wait_ms / 1000,
                queue=4 * s.search_concurrency,  # a burst of agents' recalls, not a flood, may wait
            ),
            text=TextQueries(s, ctx.embedder, ctx.pool),
            hit_cache=HitCache(s.hit_cache_bytes),
        )
        services = cls(spaces=spaces, memories=memories, search=search)
        services.hybrid = HybridSearch(ctx, search)
        services.ranking = EngramRanking(ctx, services.hybrid)
        services.documents = DocumentService(ctx.store, spaces, embedder=ctx.embedder, pool=ctx.pool)
        return services
