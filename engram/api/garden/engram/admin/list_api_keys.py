"""garden.engram.admin.listApiKeys (`engram apikey list`)."""

from __future__ import annotations

from .....context import AppContext
from .....service import apikeys
from .....views import api_key_view
from .....xrpc.server import XrpcRequest, XrpcServer
from ....admin_auth import admin_signed

NSID = "garden.engram.admin.listApiKeys"


def register(xrpc: XrpcServer, ctx: AppContext) -> None:
    async def handle(call: XrpcRequest) -> dict:
        space = call.params.get("space")
        uri = None
        if space is not None:
            uri = ctx.services.spaces.resolve_uri(space)
            await ctx.services.spaces.require(uri)
        return {"keys": [api_key_view(k) for k in await apikeys.list_api_keys(ctx.store, uri)]}

    xrpc.add(NSID, handle, auth=admin_signed(ctx))
