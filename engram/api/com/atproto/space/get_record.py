"""com.atproto.space.getRecord: one record of a hosted space's repo (e.g. garden.engram.config/self)."""

from __future__ import annotations

from .....context import AppContext
from .....spacehost import repo_reads
from .....xrpc.server import XrpcRequest, XrpcServer
from ....space_repo_auth import hosted_repo_reader

NSID = "com.atproto.space.getRecord"


def register(xrpc: XrpcServer, ctx: AppContext) -> None:
    async def handle(call: XrpcRequest) -> dict:
        p = call.params
        return await ctx.store.read(
            repo_reads.get_record, call.auth.space, p["repo"], p["collection"], p["rkey"]
        )

    xrpc.add(NSID, handle, auth=hosted_repo_reader(ctx))
