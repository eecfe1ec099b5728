"""garden.engram.admin.deleteDocument: an ingested document and its chunks, in one transaction."""

from __future__ import annotations

from .....context import AppContext
from .....xrpc.server import XrpcRequest, XrpcServer
from ....admin_auth import admin_signed

NSID = "garden.engram.admin.deleteDocument"


def register(xrpc: XrpcServer, ctx: AppContext) -> None:
    async def handle(call: XrpcRequest) -> dict:
        uri = ctx.services.spaces.resolve_uri(call.input["space"])
        return {"deletedChunks": await ctx.services.documents.delete(uri, call.input["documentId"])}

    xrpc.add(NSID, handle, auth=admin_signed(ctx))
