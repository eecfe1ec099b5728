"""garden.engram.admin.revokeApiKey (`engram apikey revoke`)."""

from __future__ import annotations

from .....context import AppContext
from .....service import apikeys
from .....views import api_key_view
from .....xrpc.server import XrpcRequest, XrpcServer
from ....admin_auth import admin_signed

NSID = "garden.engram.admin.revokeApiKey"


def register(xrpc: XrpcServer, ctx: AppContext) -> None:
    async def handle(call: XrpcRequest) -> dict:
        return {"key": api_key_view(await apikeys.revoke_api_key(ctx.store, call.input["id"]))}

    xrpc.add(NSID, handle, auth=admin_signed(ctx))
