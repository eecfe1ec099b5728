"""com.atproto.space.notifyCredentialRevoked: a synced space's authority revoked credentials of the space
(engram/spacehost/revocations.py honours it)."""

from __future__ import annotations

from .....context import AppContext
from .....errors import NotAllowed
from .....xrpc.server import XrpcRequest, XrpcServer
from ....auth_modes import syncer_notification

NSID = "com.atproto.space.notifyCredentialRevoked"


def register(xrpc: XrpcServer, ctx: AppContext) -> None:
    async def handle(call: XrpcRequest) -> None:
        uri = call.input["space"]
        refusal = f"this service does not sync the space {uri}"
        space = await ctx.services.spaces.require(uri, kind="synced", refusal=refusal)
        if call.auth.iss != space.authority:  # checked by the auth step already; kept as the invariant
            raise NotAllowed("only the space's authority may revoke its credentials")
        await ctx.services.revocations.honour(uri, call.input["credentials"])

    xrpc.add(NSID, handle, auth=syncer_notification(ctx, NSID))
