"""garden.engram.admin.revokeMember (`engram space revoke`)."""

from __future__ import annotations

from .....context import AppContext
from .....xrpc.server import XrpcRequest, XrpcServer
from ....admin_auth import admin_signed

NSID = "garden.engram.admin.revokeMember"


def register(xrpc: XrpcServer, ctx: AppContext) -> None:
    async def handle(call: XrpcRequest) -> dict:
        uri = ctx.services.spaces.resolve_uri(call.input["space"])
        return {"revoked": await ctx.services.members.revoke(uri, call.input["did"])}

    xrpc.add(NSID, handle, auth=admin_signed(ctx))
