"""com.atproto.space.notifyCredentialRevoked: a synced space's authority revoked credentials of the space
(engram/spacehost/revocations.py honours it)."""

from __future__ import annotations

from .....context import AppContext
from .....xrpc.errors import ForbiddenError, InvalidRequestError
from .....xrpc.server import XrpcRequest, XrpcServer
from ....auth_modes import syncer_notification

NSID = "com.atproto.space.notifyCredentialRevoked"


def register(xrpc: XrpcServer, ctx: AppContext) -> None:
    async def handle(call: XrpcRequest) -> None:
        uri = call.input["space"]
        space = await ctx.services.spaces.get(uri)
        if space is None or space.deleted or space.kind != "synced":
            raise InvalidRequestError(f"this service does not sync the space {uri}", "UnknownSpace")
        if call.auth.iss != space.authority:  # checked by the auth step already; kept as the invariant
            raise ForbiddenError("only the space's authority may revoke its credentials")
        await ctx.services.revocations.honour(uri, call.input["credentials"])

    xrpc.add(NSID, handle, auth=syncer_notification(ctx, NSID))
