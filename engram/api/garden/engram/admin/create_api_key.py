"""garden.engram.admin.createApiKey (`engram apikey create`): the token is in this answer only."""

from __future__ import annotations

from .....context import AppContext
from .....service import apikeys
from .....views import api_key_view
from .....xrpc.server import XrpcRequest, XrpcServer
from ....admin_auth import admin_signed

NSID = "garden.engram.admin.createApiKey"


def register(xrpc: XrpcServer, ctx: AppContext) -> None:
    async def handle(call: XrpcRequest) -> dict:
        body = call.input
        uri = ctx.services.spaces.resolve_uri(body["space"])
        extra = [ctx.services.spaces.resolve_uri(s) for s in body.get("extraSpaces", [])]
        key, token = await apikeys.create_api_key(
            ctx.store, uri, body["scopes"], body.get("label", ""), extra
        )
        return {"key": api_key_view(key), "token": token}

    xrpc.add(NSID, handle, auth=admin_signed(ctx))
