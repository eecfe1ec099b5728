"""com.atproto.space.registerNotify: a syncer asks for notifyWrite pushes of a hosted space."""

from __future__ import annotations

from datetime import UTC, datetime

from .....context import AppContext
from .....spacehost import notify_registry
from .....xrpc.server import XrpcRequest, XrpcServer
from ....space_repo_auth import hosted_repo_reader

NSID = "com.atproto.space.registerNotify"


def register(xrpc: XrpcServer, ctx: AppContext) -> None:
    async def handle(call: XrpcRequest) -> dict:
        expires_at = await notify_registry.register(
            ctx.store, ctx.resolver, ctx.outbound, call.auth.space, call.input["service"]
        )
        stamp = (
            datetime.fromtimestamp(expires_at, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
        )
        return {"expiresAt": stamp}

    xrpc.add(NSID, handle, auth=hosted_repo_reader(ctx))
