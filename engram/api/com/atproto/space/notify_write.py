"""com.atproto.space.notifyWrite, both hops of the protocol:

- to a space engram syncs: the space's authority says a member's repo changed; answered at once, the sync
  runs in the background (engram/sync);
- to a space engram hosts: a member's repo host says the member wrote to its repo in the space; engram, as
  space host, tracks the repo for listRepos and tells its registered syncers
  (engram/spacehost/member_writes.py, docs/space-host.md#members-repos)."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from .....context import AppContext
from .....errors import InvalidInput, NotAllowed, UnknownSpace
from .....spacehost import member_writes
from .....xrpc.server import AuthHook, XrpcRequest, XrpcServer, reads_body_first
from ....auth_modes import syncer_notification
from ....space_owner_auth import claimed_issuer, service_audiences

NSID = "com.atproto.space.notifyWrite"


def _auth(ctx: AppContext) -> AuthHook:
    as_syncer = syncer_notification(ctx, NSID)

    @reads_body_first
    async def verify(request: web.Request, params: dict[str, Any], body: Any):
        uri = body.get("space") if isinstance(body, dict) else None
        space = await ctx.services.spaces.find(uri) if isinstance(uri, str) and uri else None
        if space is None or space.kind != "hosted" or ctx.keyring.private_key(space.authority) is None:
            return await as_syncer(request, params, body)
        if space.deleted:
            raise InvalidInput(f"the space {uri} was deleted", "SpaceDeleted")
        authorization = request.headers.getall("Authorization", [])
        writer = body.get("repo")
        # Decided before any resolution: only a member with write access, for its own repo.
        iss = claimed_issuer(authorization[0]) if len(authorization) == 1 else None
        if iss is not None and (iss != writer or not await member_writes.tracks(ctx.store, space.uri, iss)):
            raise NotAllowed("only a member with write access may notify writes to its own repo")
        return await ctx.service_verifier.verify(
            authorization[0] if len(authorization) == 1 else None, NSID, issuer=writer,
            audiences=service_audiences(ctx, space.authority),
        )  # fmt: skip

    return verify


def register(xrpc: XrpcServer, ctx: AppContext) -> None:
    async def handle(call: XrpcRequest) -> None:
        body = call.input
        uri = body["space"]
        space = await ctx.services.spaces.find(uri)
        if space is not None and space.kind == "hosted":
            await member_writes.member_wrote(
                ctx.store, ctx.notifier, ctx.syncer, space, call.auth.iss, body["repoRev"], body.get("hash")
            )
            return
        refusal = f"this service does not sync the space {uri}"
        if ctx.syncer is None:
            raise UnknownSpace(refusal)
        space = await ctx.services.spaces.require(uri, kind="synced", refusal=refusal)
        if call.auth.iss != space.authority:
            raise NotAllowed("only the space's authority may notify writes to it")
        if "spaceRev" not in body:
            raise InvalidInput('Missing required property "spaceRev"')
        await ctx.syncer.notify_write(uri, body["repo"], body["spaceRev"], body.get("prevSpaceRev"))

    xrpc.add(NSID, handle, auth=_auth(ctx), space_scoped=True)  # the holder syncs a synced space
