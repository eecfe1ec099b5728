"""com.atproto.simplespace.putMember: the authority sets a member's read and write access."""

from __future__ import annotations

from .....context import AppContext
from .....xrpc.server import XrpcRequest, XrpcServer
from ....space_owner_auth import space_owner

NSID = "com.atproto.simplespace.putMember"


def register(xrpc: XrpcServer, ctx: AppContext) -> None:
    async def handle(call: XrpcRequest) -> None:
        body = call.input
        await ctx.services.members.put(
            call.auth.space.uri, body["did"], read=body["read"], write=body["write"]
        )

    xrpc.add(NSID, handle, auth=space_owner(ctx, NSID))
