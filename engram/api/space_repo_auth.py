"""`hosted_repo_reader`: the auth hook of the com.atproto.space repo and space-host reads engram serves for
its hosted spaces (docs/space-host.md).

In order: the space is hosted here under an authority whose key engram holds (400 SpaceNotFound) and live
(400 SpaceDeleted); then the space credential and its atproto-space signature, whose audience must be the
repo owner's DID for repo reads and the authority's DID for space-host reads: both are the authority,
since engram keeps one repo per hosted space, the authority's."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from aiohttp import web

from ..auth.reader import ReaderAuth
from ..context import AppContext
from ..errors import InvalidInput
from ..spacehost import revocations
from ..store import Space
from ..xrpc.server import AuthHook, reads_body_first


@dataclass(frozen=True)
class HostedRepoReader:
    space: Space
    auth: ReaderAuth


async def hosted_space(ctx: AppContext, uri: Any) -> Space:
    if not isinstance(uri, str) or not uri:
        raise InvalidInput('Missing required parameter "space"')
    space = await ctx.services.spaces.find(uri)
    if space is None or space.kind != "hosted" or ctx.keyring.private_key(space.authority) is None:
        raise InvalidInput(f"this host does not hold the space {uri}", "SpaceNotFound")
    if space.deleted:
        raise InvalidInput(f"the space {uri} was deleted", "SpaceDeleted")
    return space


def hosted_repo_reader(ctx: AppContext) -> AuthHook:
    @reads_body_first  # registerNotify / unregisterNotify name their space in the body
    async def verify(request: web.Request, params: dict[str, Any], body: Any) -> HostedRepoReader:
        uri = params.get("space")
        if uri is None and isinstance(body, dict):
            uri = body.get("space")
        space = await hosted_space(ctx, uri)
        auth = await ctx.reader_verifier.verify(request.headers, space.uri, audience=space.authority)
        await revocations.refuse_revoked(ctx, space.uri, auth.jti)  # docs/space-host.md#revoking-credentials
        return HostedRepoReader(space, auth)

    return verify
