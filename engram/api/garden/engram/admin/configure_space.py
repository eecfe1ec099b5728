"""garden.engram.admin.configureSpace: model, prefixes, or the next model (`engram space config`)."""

from __future__ import annotations

from .....context import AppContext
from .....views import space_view
from .....xrpc.errors import InvalidRequestError
from .....xrpc.server import XrpcRequest, XrpcServer
from ....admin_auth import admin_signed
from .create_space import model_spec

NSID = "garden.engram.admin.configureSpace"


def register(xrpc: XrpcServer, ctx: AppContext) -> None:
    async def handle(call: XrpcRequest) -> dict:
        body = call.input
        spaces = ctx.services.spaces
        uri = spaces.resolve_uri(body["space"])
        current = (await spaces.require(uri)).config
        active = model_spec(body.get("model")) or (current.active if current else None)
        if active is None:
            raise InvalidRequestError("the space has no model yet: send model", "NoModel")
        nxt = (
            None
            if body.get("clearNext")
            else model_spec(body.get("next")) or (current.next if current else None)
        )
        space = await spaces.configure(
            uri,
            active,
            document_prefix=body.get("documentPrefix", current.document_prefix if current else ""),
            query_prefix=body.get("queryPrefix", current.query_prefix if current else ""),
            next=nxt,
        )
        return {"space": space_view(space)}

    xrpc.add(NSID, handle, auth=admin_signed(ctx))
