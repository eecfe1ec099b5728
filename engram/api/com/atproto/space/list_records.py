"""com.atproto.space.listRecords: one collection (or, without `collection`, every collection) of a hosted
space's repo, in (collection, rkey) order, descending with `reverse`."""

from __future__ import annotations

from .....context import AppContext
from .....spacehost import repo_reads
from .....xrpc.server import XrpcRequest, XrpcServer
from ....space_repo_auth import hosted_repo_reader

NSID = "com.atproto.space.listRecords"


def register(xrpc: XrpcServer, ctx: AppContext) -> None:
    async def handle(call: XrpcRequest) -> dict:
        p = call.params
        return await ctx.store.read(
            repo_reads.list_records, call.auth.space, p["repo"], p.get("collection"),
            limit=p.get("limit", 50), cursor=p.get("cursor"), exclude_values=p.get("excludeValues", False),
            reverse=p.get("reverse", False),
        )  # fmt: skip

    xrpc.add(NSID, handle, auth=hosted_repo_reader(ctx))
