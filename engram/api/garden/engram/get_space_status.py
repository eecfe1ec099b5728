"""garden.engram.getSpaceStatus: model, counts, and memories skipped per author."""

from __future__ import annotations

from ....context import AppContext
from ....sync.status import sync_view
from ....views import config_view, model_view
from ....xrpc.server import XrpcRequest, XrpcServer
from ...auth_modes import space_reader

NSID = "garden.engram.getSpaceStatus"


def register(xrpc: XrpcServer, ctx: AppContext) -> None:
    async def handle(call: XrpcRequest) -> dict:
        status = await ctx.services.spaces.status(call.auth.space.uri)
        skipped_total = sum(count for _, count in status.skipped)
        out: dict = {
            "memories": max(status.memories - skipped_total, 0),
            "skipped": [{"author": author, "count": count} for author, count in status.skipped],
        }
        config = config_view(status.space)
        if config is not None:
            out["config"] = config
            out["active"] = model_view(status.space.config.active)
            if status.space.config.next is not None:
                out["building"] = model_view(status.space.config.next)
                out["buildingMemories"] = status.building_memories
        if status.space.kind == "synced":
            sync = await ctx.store.read(sync_view, status.space.uri)
            if sync is not None:
                lag = ctx.syncer.lag_seconds(status.space.uri) if ctx.syncer is not None else 0.0
                out["sync"] = {**sync, "lagSeconds": int(lag)}
        return out

    xrpc.add(NSID, handle, auth=space_reader(ctx), space_scoped=True)
