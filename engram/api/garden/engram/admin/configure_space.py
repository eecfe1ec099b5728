"""garden.engram.admin.configureSpace: model, prefixes, or the next model (`engram space config`)."""

from __future__ import annotations

from .....context import AppContext
from .....views import space_view
from .....xrpc.server import XrpcRequest, XrpcServer
from ....admin_auth import admin_signed
from .create_space import model_spec

NSID = "garden.engram.admin.configureSpace"


def register(xrpc: XrpcServer, ctx: AppContext) -> None:
    async def handle(call: XrpcRequest) -> dict:
        body = call.input
        spaces = ctx.services.spaces
        space = await spaces.configure(
            spaces.resolve_uri(body["space"]),
            model_spec(body.get("model")),
            next=model_spec(body.get("next")),
            clear_next=bool(body.get("clearNext")),
            document_prefix=body.get("documentPrefix"),
            query_prefix=body.get("queryPrefix"),
        )
        return {"space": space_view(space)}

    xrpc.add(NSID, handle, auth=admin_signed(ctx))
