"""garden.engram.admin.createSpace: a hosted space (`engram space create`)."""

from __future__ import annotations

from .....context import AppContext
from .....store import ModelSpec
from .....views import space_view
from .....xrpc.server import XrpcRequest, XrpcServer
from ....admin_auth import admin_signed

NSID = "garden.engram.admin.createSpace"


def model_spec(value: dict | None) -> ModelSpec | None:
    return None if value is None else ModelSpec(value["model"], value["modelDigest"], value["dims"])


def register(xrpc: XrpcServer, ctx: AppContext) -> None:
    async def handle(call: XrpcRequest) -> dict:
        body = call.input
        space = await ctx.services.spaces.create_hosted(
            body["name"],
            authority=body.get("authority"),
            model=model_spec(body.get("model")),
            document_prefix=body.get("documentPrefix", ""),
            query_prefix=body.get("queryPrefix", ""),
        )
        return {"space": space_view(space)}

    xrpc.add(NSID, handle, auth=admin_signed(ctx))
