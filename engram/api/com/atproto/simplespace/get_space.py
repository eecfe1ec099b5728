"""com.atproto.simplespace.getSpace: a hosted space and its configuration, for a member holding a space
credential (addressed to the authority, as every space-host read; engram/api/space_repo_auth.py)."""

from __future__ import annotations

from .....context import AppContext
from .....spacehost import simplespace
from .....xrpc.server import XrpcRequest, XrpcServer
from ....space_repo_auth import hosted_repo_reader

NSID = "com.atproto.simplespace.getSpace"


def register(xrpc: XrpcServer, ctx: AppContext) -> None:
    async def handle(call: XrpcRequest) -> dict:
        return simplespace.describe(call.auth.space)

    xrpc.add(NSID, handle, auth=hosted_repo_reader(ctx))
