"""com.atproto.simplespace.listMembers: the authority pages through its members, in DID order."""

from __future__ import annotations

from .....context import AppContext
from .....xrpc.server import XrpcRequest, XrpcServer
from ....space_owner_auth import space_owner

NSID = "com.atproto.simplespace.listMembers"


def register(xrpc: XrpcServer, ctx: AppContext) -> None:
    async def handle(call: XrpcRequest) -> dict:
        p = call.params
        rows, cursor = await ctx.services.members.page(
            call.auth.space.uri, cursor=p.get("cursor"), limit=p.get("limit", 100)
        )
        out: dict = {"members": [{"did": m.did, "read": m.read, "write": m.write} for m in rows]}
        if cursor is not None:
            out["cursor"] = cursor
        return out

    xrpc.add(NSID, handle, auth=space_owner(ctx, NSID))
