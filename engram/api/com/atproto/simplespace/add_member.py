"""com.atproto.simplespace.addMember, the August alpha's call: the member may read and write, as putMember
with both flags (engram/service/members.py)."""

from __future__ import annotations

from .....context import AppContext
from .....xrpc.server import XrpcRequest, XrpcServer
from ....space_owner_auth import space_owner

NSID = "com.atproto.simplespace.addMember"


def register(xrpc: XrpcServer, ctx: AppContext) -> None:
    async def handle(call: XrpcRequest) -> None:
        await ctx.services.members.grant(call.auth.space.uri, call.input["did"], write=True)

    xrpc.add(NSID, handle, auth=space_owner(ctx, NSID))
