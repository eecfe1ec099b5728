"""garden.engram.getMemoryGraph: the newest memories and kNN links between similar ones."""

from __future__ import annotations

import math

from ....context import AppContext
from ....errors import InvalidInput
from ....views import memory_view
from ....xrpc.server import XrpcRequest, XrpcServer
from ...auth_modes import space_reader

NSID = "garden.engram.getMemoryGraph"


def parse_min_similarity(raw: str) -> float:
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not 0.0 < value <= 1.0:
        raise InvalidInput(f'Invalid parameter "minSimilarity": {raw!r} is not a number in (0, 1]')
    return value


def register(xrpc: XrpcServer, ctx: AppContext) -> None:
    async def handle(call: XrpcRequest) -> dict:
        p = call.params
        graph = await ctx.services.search.graph(
            call.auth.space,
            limit=p["limit"],
            neighbors=p["neighbors"],
            min_similarity=parse_min_similarity(p["minSimilarity"]),
        )
        return {
            "nodes": [memory_view(m) for m in graph.nodes],
            "edges": [{"a": a, "b": b, "similarity": s} for a, b, s in graph.edges],
        }

    xrpc.add(NSID, handle, auth=space_reader(ctx), space_scoped=True)
