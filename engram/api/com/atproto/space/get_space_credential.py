"""com.atproto.space.getSpaceCredential: a member exchanges a delegation token for a space credential of
a space engram hosts (the proof is checked by the auth hook, engram/api/space_exchange_auth.py; the grant
and the minting are engram/spacehost/credential_exchange.py)."""

from __future__ import annotations

from .....context import AppContext
from .....spacehost import credential_exchange
from .....xrpc.server import XrpcRequest, XrpcServer
from ....space_exchange_auth import space_exchanger

NSID = "com.atproto.space.getSpaceCredential"


def register(xrpc: XrpcServer, ctx: AppContext) -> None:
    async def handle(call: XrpcRequest) -> dict:
        issued = await credential_exchange.issue(
            ctx.store, ctx.keyring, ctx.services.revocations, call.auth, ttl=ctx.settings.credential_ttl
        )
        return {"credential": issued.credential}

    xrpc.add(NSID, handle, auth=space_exchanger(ctx))
