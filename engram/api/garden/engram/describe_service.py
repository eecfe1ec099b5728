"""garden.engram.describeService: who this service is (no auth)."""

from __future__ import annotations

from ....context import AppContext
from ....xrpc.server import XrpcRequest, XrpcServer

NSID = "garden.engram.describeService"


def register(xrpc: XrpcServer, ctx: AppContext) -> None:
    async def handle(call: XrpcRequest) -> dict:
        out: dict = {"did": ctx.settings.service_did, "registration": "closed"}
        embedder = ctx.embedder
        if embedder is not None and ctx.settings.text_search:
            out["textSearch"] = {
                "model": embedder.name,
                "modelDigest": embedder.digest,
                "dims": embedder.dims,
            }
        return out

    xrpc.add(NSID, handle)
