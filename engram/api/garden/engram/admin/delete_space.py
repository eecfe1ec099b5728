"""garden.engram.admin.deleteSpace (`engram space delete`)."""

from __future__ import annotations

from .....context import AppContext
from .....xrpc.server import XrpcRequest, XrpcServer
from ....admin_auth import admin_signed

NSID = "garden.engram.admin.deleteSpace"


def register(xrpc: XrpcServer, ctx: AppContext) -> None:
    async def handle(call: XrpcRequest) -> dict:
        uri = ctx.services.spaces.resolve_uri(call.input["space"])
        await ctx.services.spaces.require(uri)
        await ctx.services.spaces.delete(uri)
        return {"uri": uri}

    xrpc.add(NSID, handle, auth=admin_signed(ctx))
