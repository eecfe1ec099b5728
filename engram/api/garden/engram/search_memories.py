"""garden.engram.searchMemories: vector (or hosted-model text) search over one space."""

from __future__ import annotations

from ....context import AppContext
from ....service.search import SearchQuery
from ....views import memory_view
from ....xrpc.errors import rate_limit_headers
from ....xrpc.server import XrpcRequest, XrpcServer
from ...auth_modes import space_reader

NSID = "garden.engram.searchMemories"


def register(xrpc: XrpcServer, ctx: AppContext) -> None:
    async def handle(call: XrpcRequest) -> dict:
        p = call.params
        query = SearchQuery(
            vector=p.get("vector"),
            model=p.get("model"),
            model_digest=p.get("modelDigest"),
            q=p.get("q"),
            limit=p["limit"],
            author=p.get("author"),
            tags=tuple(p.get("tags", ())),
            since=p.get("since"),
        )
        outcome = await ctx.services.search.search(call.auth.space, query)
        if outcome.quota is not None:
            q = outcome.quota
            call.response_headers.update(rate_limit_headers(q.limit, q.remaining, q.reset_s))
        out: dict = {"memories": [memory_view(m, sim) for m, sim in outcome.hits]}
        if outcome.approximate:
            out["approximate"] = True
        return out

    xrpc.add(NSID, handle, auth=space_reader(ctx), space_scoped=True)
