"""garden.engram.admin.listMembers (`engram space members`)."""

from __future__ import annotations

from .....context import AppContext
from .....views import member_view
from .....xrpc.server import XrpcRequest, XrpcServer
from ....admin_auth import admin_signed

NSID = "garden.engram.admin.listMembers"


def register(xrpc: XrpcServer, ctx: AppContext) -> None:
    async def handle(call: XrpcRequest) -> dict:
        uri = ctx.services.spaces.resolve_uri(call.params["space"])
        return {"members": [member_view(m) for m in await ctx.services.members.list_members(uri)]}

    xrpc.add(NSID, handle, auth=admin_signed(ctx))
