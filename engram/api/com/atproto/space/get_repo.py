"""com.atproto.space.getRepo: a hosted space's repo as a CAR (signed commit, index, record blocks)."""

from __future__ import annotations

from .....context import AppContext
from .....spacehost import repo_reads
from .....xrpc.server import RawOutput, XrpcRequest, XrpcServer
from ....space_repo_auth import hosted_repo_reader

NSID = "com.atproto.space.getRepo"


def register(xrpc: XrpcServer, ctx: AppContext) -> None:
    async def handle(call: XrpcRequest) -> RawOutput:
        p = call.params
        car = await ctx.store.read(
            repo_reads.repo_car, call.auth.space, p["repo"], exclude_values=p.get("excludeValues", False)
        )
        return RawOutput(car, content_type="application/vnd.ipld.car")

    xrpc.add(NSID, handle, auth=hosted_repo_reader(ctx))
