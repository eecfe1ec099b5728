"""garden.engram.admin.listDocuments: a space's ingested documents, a page at a time."""

from __future__ import annotations

from .....context import AppContext
from .....service.documents.service import document_json
from .....xrpc.server import XrpcRequest, XrpcServer
from ....admin_auth import admin_signed

NSID = "garden.engram.admin.listDocuments"


def register(xrpc: XrpcServer, ctx: AppContext) -> None:
    async def handle(call: XrpcRequest) -> dict:
        uri = ctx.services.spaces.resolve_uri(call.params["space"])
        limit = call.params["limit"]
        rows = await ctx.services.documents.list(uri, limit=limit, after=call.params.get("cursor"))
        out: dict = {"documents": [document_json(row) for row in rows]}
        if len(rows) == limit:
            out["cursor"] = rows[-1].document_id
        return out

    xrpc.add(NSID, handle, auth=admin_signed(ctx))
