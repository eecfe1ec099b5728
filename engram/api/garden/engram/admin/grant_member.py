"""garden.engram.admin.grantMember (`engram space grant`)."""

from __future__ import annotations

from .....context import AppContext
from .....views import member_view
from .....xrpc.server import XrpcRequest, XrpcServer
from ....admin_auth import admin_signed

NSID = "garden.engram.admin.grantMember"


def register(xrpc: XrpcServer, ctx: AppContext) -> None:
    async def handle(call: XrpcRequest) -> dict:
        uri = ctx.services.spaces.resolve_uri(call.input["space"])
        member = await ctx.services.members.grant(
            uri, call.input["did"], write=call.input.get("write", False)
        )
        return {"member": member_view(member)}

    xrpc.add(NSID, handle, auth=admin_signed(ctx))
