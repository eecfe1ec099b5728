"""Domain operations shared by the XRPC handlers, the CLI, the remote admin methods and the shims.

Nothing here knows about aiohttp requests: callers pass plain values and get plain values back; failures
are `XrpcError`s carrying the lexicon's error names, which every caller can render in its own shape.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

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

    @classmethod
    def build(cls, ctx: AppContext) -> Services:
        spaces = SpaceService(ctx)
        return cls(spaces=spaces, memories=MemoryService(ctx, spaces), search=SearchService(ctx, spaces))
