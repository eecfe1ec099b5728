"""garden.engram.warmSpace: start loading the space's index and return at once."""

from __future__ import annotations

from ....context import AppContext
from ....xrpc.server import XrpcRequest, XrpcServer
from ...auth_modes import space_reader

NSID = "garden.engram.warmSpace"


def register(xrpc: XrpcServer, ctx: AppContext) -> None:
    async def handle(call: XrpcRequest) -> dict:
        await ctx.services.search.warm(call.auth.space)
        return {}

    xrpc.add(NSID, handle, auth=space_reader(ctx), space_scoped=True)
