"""com.atproto.space.notifyWrite: a space's authority says a member's repo changed. Answered at once; the
sync runs in the background (engram/sync)."""

from __future__ import annotations

from .....context import AppContext
from .....xrpc.errors import ForbiddenError, InvalidRequestError
from .....xrpc.server import XrpcRequest, XrpcServer
from ....auth_modes import syncer_notification

NSID = "com.atproto.space.notifyWrite"


def register(xrpc: XrpcServer, ctx: AppContext) -> None:
    async def handle(call: XrpcRequest) -> None:
        body = call.input
        uri = body["space"]
        space = await ctx.services.spaces.get(uri)
        if space is None or space.deleted or space.kind != "synced" or ctx.syncer is None:
            raise InvalidRequestError(f"this service does not sync the space {uri}", "UnknownSpace")
        if call.auth.iss != space.authority:
            raise ForbiddenError("only the space's authority may notify writes to it")
        await ctx.syncer.notify_write(uri, body["repo"], body["spaceRev"], body.get("prevSpaceRev"))

    xrpc.add(NSID, handle, auth=syncer_notification(ctx, NSID))
