"""com.atproto.space.notifySpaceDeleted: the space's authority says the space is gone; drop everything."""

from __future__ import annotations

from .....context import AppContext
from .....errors import NotAllowed
from .....xrpc.server import XrpcRequest, XrpcServer
from ....auth_modes import syncer_notification

NSID = "com.atproto.space.notifySpaceDeleted"


def register(xrpc: XrpcServer, ctx: AppContext) -> None:
    async def handle(call: XrpcRequest) -> None:
        uri = call.input["space"]
        space = await ctx.services.spaces.require(uri, refusal=f"this service does not index the space {uri}")
        if call.auth.iss != space.authority:  # checked by the auth step already; kept as the invariant
            raise NotAllowed("only the space's authority may notify its deletion")
        if ctx.syncer is not None and space.kind == "synced":
            await ctx.syncer.drop_space(uri)  # also stops its sync and forgets its secrets
        else:
            await ctx.services.spaces.delete(uri)

    xrpc.add(NSID, handle, auth=syncer_notification(ctx, NSID), space_scoped=True)  # the holder syncs it
