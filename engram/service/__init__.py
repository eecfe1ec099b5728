"""Domain operations shared by the XRPC handlers, the CLI, the remote admin methods and the shims.

Nothing here knows about aiohttp requests: callers pass plain values and get plain values back; failures
are `XrpcError`s carrying the lexicon's error names, which every caller can render in its own shape.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from .hybrid import HybridSearch
from .memories import MemoryService
from .search import SearchService
from .spaces import SpaceService

if TYPE_CHECKING:
    from ..context import AppContext


@dataclass
class Services:
    spaces: SpaceService
    memories: MemoryService
    search: SearchService
    hybrid: HybridSearch = None  # keyword and hybrid search for the REST shims (engram/service/hybrid.py)

    @classmethod
    def build(cls, ctx: AppContext) -> Services:
        spaces = SpaceService(ctx)
        search = SearchService(ctx, spaces)
        services = cls(spaces=spaces, memories=MemoryService(ctx, spaces), search=search)
        services.hybrid = HybridSearch(ctx, search)
        return services
