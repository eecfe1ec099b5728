"""com.atproto.space.listRepoOps: a hosted space repo's oplog, oldest first, with the head commit on the
page that reaches it."""

from __future__ import annotations

from .....context import AppContext
from .....spacehost import repo_reads
from .....xrpc.server import XrpcRequest, XrpcServer
from ....space_repo_auth import hosted_repo_reader

NSID = "com.atproto.space.listRepoOps"


def register(xrpc: XrpcServer, ctx: AppContext) -> None:
    async def handle(call: XrpcRequest) -> dict:
        p = call.params
        return await ctx.store.read(
            repo_reads.list_repo_ops, call.auth.space, p["repo"], since=p.get("since"),
            limit=p.get("limit", 100), cursor=p.get("cursor"), exclude_values=p.get("excludeValues", False),
        )  # fmt: skip

    xrpc.add(NSID, handle, auth=hosted_repo_reader(ctx))
