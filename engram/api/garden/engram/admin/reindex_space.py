"""garden.engram.admin.reindexSpace (`engram reindex`)."""

from __future__ import annotations

from .....context import AppContext
from .....service.reindex import reindex_space
from .....views import space_view
from .....xrpc.server import XrpcRequest, XrpcServer
from ....admin_auth import admin_signed

NSID = "garden.engram.admin.reindexSpace"


def register(xrpc: XrpcServer, ctx: AppContext) -> None:
    async def handle(call: XrpcRequest) -> dict:
        uri = ctx.services.spaces.resolve_uri(call.input["space"])
        await reindex_space(ctx.services.spaces, ctx.index, uri)
        status = await ctx.services.spaces.status(uri)
        return {"space": space_view(status.space, status)}

    xrpc.add(NSID, handle, auth=admin_signed(ctx), space_scoped=True)
