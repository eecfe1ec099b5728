"""com.atproto.simplespace.updateSpace: engram's one configuration is the only one it accepts
(engram/spacehost/simplespace.py)."""

from __future__ import annotations

from .....context import AppContext
from .....spacehost import simplespace
from .....xrpc.server import XrpcRequest, XrpcServer
from ....space_owner_auth import space_owner

NSID = "com.atproto.simplespace.updateSpace"


def register(xrpc: XrpcServer, ctx: AppContext) -> None:
    async def handle(call: XrpcRequest) -> None:
        simplespace.check_update(call.input)

    xrpc.add(NSID, handle, auth=space_owner(ctx, NSID))
