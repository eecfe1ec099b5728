"""garden.engram.admin.importMemories: a batch of JSONL-import memories (the loop of `engram import`)."""

from __future__ import annotations

from .....context import AppContext
from .....service.imports import import_values
from .....xrpc.server import XrpcRequest, XrpcServer
from ....admin_auth import admin_signed

NSID = "garden.engram.admin.importMemories"


def register(xrpc: XrpcServer, ctx: AppContext) -> None:
    async def handle(call: XrpcRequest) -> dict:
        uri = ctx.services.spaces.resolve_uri(call.input["space"])
        # Numbered from 0: the report's `index` is the memory's position in the request.
        report = await import_values(
            ctx.store, ctx.services.spaces, ctx.services.memories, uri, enumerate(call.input["memories"])
        )
        return {
            "created": report.created,
            "updated": report.updated,
            "unchanged": report.unchanged,
            "notIndexed": report.not_indexed,
            "skipped": [{"index": index, "reason": reason} for index, reason in report.skipped],
        }

    xrpc.add(NSID, handle, auth=admin_signed(ctx))
