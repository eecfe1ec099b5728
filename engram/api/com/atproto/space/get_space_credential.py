"""com.atproto.space.getSpaceCredential: a member exchanges a delegation token for a space credential of
a space engram hosts (engram/service/space_credentials.py has the checks)."""

from __future__ import annotations

from .....context import AppContext
from .....service import space_credentials
from .....xrpc.server import XrpcRequest, XrpcServer

NSID = "com.atproto.space.getSpaceCredential"


def register(xrpc: XrpcServer, ctx: AppContext) -> None:
    async def handle(call: XrpcRequest) -> dict:
        issued = await space_credentials.exchange(
            ctx, call.input["space"], call.request.headers, call.input.get("clientAttestation")
        )
        return {"credential": issued.credential}

    # No auth hook: the delegation token and the exchange signature are this method's input, checked
    # after the space (SpaceNotFound/SpaceDeleted come first, docs/space-host.md#the-credential-exchange).
    xrpc.add(NSID, handle)
