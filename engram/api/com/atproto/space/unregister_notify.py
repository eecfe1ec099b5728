"""com.atproto.space.unregisterNotify: stop notifyWrite pushes of a hosted space to a service."""

from __future__ import annotations

from .....context import AppContext
from .....spacehost import notify_registry
from .....xrpc.server import XrpcRequest, XrpcServer
from ....space_repo_auth import hosted_repo_reader

NSID = "com.atproto.space.unregisterNotify"


def register(xrpc: XrpcServer, ctx: AppContext) -> None:
    async def handle(call: XrpcRequest) -> None:
        await notify_registry.unregister(ctx.store, call.auth.space, call.input["service"])

    xrpc.add(NSID, handle, auth=hosted_repo_reader(ctx))
