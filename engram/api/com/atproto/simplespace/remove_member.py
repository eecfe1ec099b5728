"""com.atproto.simplespace.removeMember: the authority removes a member (engram/service/members.py)."""

from __future__ import annotations

from .....context import AppContext
from .....xrpc.server import XrpcRequest, XrpcServer
from ....space_owner_auth import space_owner

NSID = "com.atproto.simplespace.removeMember"


def register(xrpc: XrpcServer, ctx: AppContext) -> None:
    async def handle(call: XrpcRequest) -> None:
        await ctx.services.members.revoke(call.auth.space.uri, call.input["did"])

    xrpc.add(NSID, handle, auth=space_owner(ctx, NSID))
