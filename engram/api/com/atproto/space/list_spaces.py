"""com.atproto.space.listSpaces: the hosted spaces the caller owns or is a member of."""

from __future__ import annotations

from .....context import AppContext
from .....errors import NotAllowed
from .....identifiers import SPACE_TYPE
from .....xrpc.server import XrpcRequest, XrpcServer
from ....space_owner_auth import space_caller

NSID = "com.atproto.space.listSpaces"


def register(xrpc: XrpcServer, ctx: AppContext) -> None:
    async def admit(iss: str) -> None:  # before any resolution: a stranger makes engram fetch nothing
        if not await ctx.services.members.known(iss):
            raise NotAllowed(f"{iss} owns no space here and is a member of none")

    async def handle(call: XrpcRequest) -> dict:
        p = call.params
        if p.get("type", SPACE_TYPE) != SPACE_TYPE:
            return {"spaces": []}  # engram hosts one space type
        rows, cursor = await ctx.services.members.spaces_of(
            call.auth.did, authority=p.get("did"), cursor=p.get("cursor"), limit=p.get("limit", 50)
        )
        out: dict = {"spaces": [{"uri": uri, "isOwner": owner} for uri, owner in rows]}
        if cursor is not None:
            out["cursor"] = cursor
        return out

    xrpc.add(NSID, handle, auth=space_caller(ctx, NSID, admit))
