"""com.atproto.simplespace.deleteSpace: the authority deletes a hosted space, as garden.engram.admin.deleteSpace
does (its syncers are told with notifySpaceDeleted; docs/space-host.md#write-notifications)."""

from __future__ import annotations

from .....context import AppContext
from .....xrpc.server import XrpcRequest, XrpcServer
from ....space_owner_auth import space_owner

NSID = "com.atproto.simplespace.deleteSpace"


def register(xrpc: XrpcServer, ctx: AppContext) -> None:
    async def handle(call: XrpcRequest) -> None:
        await ctx.services.spaces.delete(call.auth.space.uri)

    xrpc.add(NSID, handle, auth=space_owner(ctx, NSID))
