"""com.atproto.space.listRepos: the writers of a hosted space (its authority's repo), for syncers."""

from __future__ import annotations

from .....context import AppContext
from .....spacehost import repo_reads
from .....xrpc.server import XrpcRequest, XrpcServer
from ....space_repo_auth import hosted_repo_reader

NSID = "com.atproto.space.listRepos"


def register(xrpc: XrpcServer, ctx: AppContext) -> None:
    async def handle(call: XrpcRequest) -> dict:
        p = call.params
        return await ctx.store.read(
            repo_reads.list_repos, call.auth.space, cursor=p.get("cursor"), limit=p.get("limit", 100)
        )

    xrpc.add(NSID, handle, auth=hosted_repo_reader(ctx))
