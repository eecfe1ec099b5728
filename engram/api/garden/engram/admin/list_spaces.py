"""garden.engram.admin.listSpaces (`engram space list`)."""

from __future__ import annotations

from .....context import AppContext
from .....views import space_view
from .....xrpc.server import XrpcRequest, XrpcServer
from ....admin_auth import admin_signed

NSID = "garden.engram.admin.listSpaces"


def register(xrpc: XrpcServer, ctx: AppContext) -> None:
    async def handle(call: XrpcRequest) -> dict:
        spaces = ctx.services.spaces
        return {"spaces": [space_view(s, await spaces.status(s.uri)) for s in await spaces.list()]}

    xrpc.add(NSID, handle, auth=admin_signed(ctx))
