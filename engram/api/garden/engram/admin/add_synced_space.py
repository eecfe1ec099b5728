"""garden.engram.admin.addSyncedSpace: start syncing an AT Protocol space (`engram space add`)."""

from __future__ import annotations

from .....context import AppContext
from .....errors import Unavailable
from .....xrpc.server import XrpcRequest, XrpcServer
from ....admin_auth import admin_signed

NSID = "garden.engram.admin.addSyncedSpace"


def register(xrpc: XrpcServer, ctx: AppContext) -> None:
    async def handle(call: XrpcRequest) -> dict:
        if ctx.syncer is None:
            raise Unavailable("the syncer is not running in this process")
        body = call.input
        synced = await ctx.syncer.add_space(
            body["space"], body["account"], body["appPassword"], body.get("pds")
        )
        return {"space": synced.uri}

    xrpc.add(NSID, handle, auth=admin_signed(ctx))
