"""com.atproto.space.getLatestCommit: the signed head of a hosted space's repo."""

from __future__ import annotations

from .....context import AppContext
from .....spacehost import repo_reads
from .....xrpc.server import XrpcRequest, XrpcServer
from ....space_repo_auth import hosted_repo_reader

NSID = "com.atproto.space.getLatestCommit"


def register(xrpc: XrpcServer, ctx: AppContext) -> None:
    async def handle(call: XrpcRequest) -> dict:
        return await ctx.store.read(repo_reads.latest_commit, call.auth.space, call.params["repo"])

    xrpc.add(NSID, handle, auth=hosted_repo_reader(ctx))
