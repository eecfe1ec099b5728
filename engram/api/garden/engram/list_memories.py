"""garden.engram.listMemories: newest first, paged by an opaque cursor, with author/tags/since filters."""

from __future__ import annotations

from ....context import AppContext
from ....views import memory_view
from ....xrpc.server import XrpcRequest, XrpcServer
from ...auth_modes import space_reader

NSID = "garden.engram.listMemories"


def register(xrpc: XrpcServer, ctx: AppContext) -> None:
    async def handle(call: XrpcRequest) -> dict:
        p = call.params
        memories, cursor = await ctx.services.memories.list(
            call.auth.space.uri,
            limit=p["limit"],
            cursor=p.get("cursor"),
            author=p.get("author"),
            tags=tuple(p.get("tags", ())),
            since=p.get("since"),
        )
        out: dict = {"memories": [memory_view(m) for m in memories]}
        if cursor is not None:
            out["cursor"] = cursor
        return out

    xrpc.add(NSID, handle, auth=space_reader(ctx), space_scoped=True)
