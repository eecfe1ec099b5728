"""garden.engram.admin.ingestDocument (`engram admin ingest`, the console's upload): one file through the
ingestion pipeline (docs/documents.md)."""

from __future__ import annotations

from .....context import AppContext
from .....service.documents.pipeline import ChunkSettings
from .....xrpc.scalar_checks import decode_bytes
from .....xrpc.server import XrpcRequest, XrpcServer
from ....admin_auth import admin_signed

NSID = "garden.engram.admin.ingestDocument"


def register(xrpc: XrpcServer, ctx: AppContext) -> None:
    async def handle(call: XrpcRequest) -> dict:
        body = call.input
        uri = ctx.services.spaces.resolve_uri(body["space"])
        result = await ctx.services.documents.ingest(
            uri,
            decode_bytes(body["content"]),
            name=body["name"],
            document_id=body.get("documentId"),
            source_url=body.get("sourceUrl"),
            declared=body.get("contentType"),
            chunking=ChunkSettings(body.get("chunkTokens", 160), body.get("chunkOverlap", 20)),
        )
        return result.json()

    xrpc.add(NSID, handle, auth=admin_signed(ctx))
