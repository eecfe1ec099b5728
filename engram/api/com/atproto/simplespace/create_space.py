"""com.atproto.simplespace.createSpace: an authority whose key engram holds creates a hosted space
(engram/spacehost/simplespace.py maps the reference's policies onto engram's members)."""

from __future__ import annotations

from .....context import AppContext
from .....errors import InvalidInput
from .....spacehost import simplespace
from .....xrpc.server import XrpcRequest, XrpcServer
from ....space_owner_auth import space_caller

NSID = "com.atproto.simplespace.createSpace"


def register(xrpc: XrpcServer, ctx: AppContext) -> None:
    async def admit(iss: str) -> None:  # before any resolution: only a DID engram signs for
        if ctx.keyring.private_key(iss) is None:
            raise InvalidInput(f"engram holds no key for {iss}", "UnsupportedAuthority")

    async def handle(call: XrpcRequest) -> dict:
        body = call.input
        space = await simplespace.create_space(
            ctx.keyring, ctx.services.spaces, call.auth.did, body.get("spaceType", body.get("type")), skey=body.get("skey"),
            read_policy=body.get("readPolicy", body.get("policy")), write_policy=body.get("writePolicy"),
            app_access=body.get("appAccess"),
        )  # fmt: skip
        return {"uri": space.uri}

    xrpc.add(NSID, handle, auth=space_caller(ctx, NSID, admit))
