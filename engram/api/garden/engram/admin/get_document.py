"""garden.engram.admin.getDocument: an ingested document and its chunks with their citations."""

from __future__ import annotations

from .....context import AppContext
from .....service.documents.service import chunk_json, document_json
from .....xrpc.server import XrpcRequest, XrpcServer
from ....admin_auth import admin_signed

NSID = "garden.engram.admin.getDocument"


def register(xrpc: XrpcServer, ctx: AppContext) -> None:
    async def handle(call: XrpcRequest) -> dict:
        uri = ctx.services.spaces.resolve_uri(call.params["space"])
        document_id = call.params["documentId"]
        row = await ctx.services.documents.get(uri, document_id)
        chunks = await ctx.services.documents.chunks(uri, document_id)
        return {"document": document_json(row), "chunks": [chunk_json(memory) for memory in chunks]}

    xrpc.add(NSID, handle, auth=admin_signed(ctx))
