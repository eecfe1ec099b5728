"""garden.engram.getMemory: one memory of the space by URI (404 MemoryNotFound)."""

from __future__ import annotations

from ....context import AppContext
from ....views import memory_view
from ....xrpc.server import XrpcRequest, XrpcServer
from ...auth_modes import space_reader

NSID = "garden.engram.getMemory"


def register(xrpc: XrpcServer, ctx: AppContext) -> None:
    async def handle(call: XrpcRequest) -> dict:
        memory = await ctx.services.memories.get(call.auth.space.uri, call.params["uri"])
        return {"memory": memory_view(memory)}

    xrpc.add(NSID, handle, auth=space_reader(ctx), space_scoped=True)
