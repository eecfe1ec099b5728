"""garden.engram.admin.listSpaces (`engram space list`)."""

from __future__ import annotations

from .....context import AppContext
from .....views import space_view
from .....xrpc.server import XrpcRequest, XrpcServer
from ....admin_auth import admin_signed

NSID = "garden.engram.admin.listSpaces"


def register(xrpc: XrpcServer, ctx: AppContext) -> None:
    async def handle(call: XrpcRequest) -> dict:
        limit = call.params["limit"]
        page = await ctx.services.spaces.page(call.params.get("cursor") or "", limit)
        out: dict = {"spaces": [space_view(status.space, status) for status in page]}
        if len(page) == limit:
            out["cursor"] = page[-1].space.uri
        return out

    xrpc.add(NSID, handle, auth=admin_signed(ctx))
