"""Auth modes handlers declare at registration (the pipeline's auth step).

`space_reader`: docs/protocol.md#reader-auth in order — `space` present (400), the space indexed and live
(400 UnknownSpace), then the credential and the atproto-space signature (401s from the verifier). Unknown
spaces are refused before any signature work (docs/protocol.md#reader-auth gives the order).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from aiohttp import web

from ..auth.reader import ReaderAuth
from ..context import AppContext
from ..errors import InvalidInput, NotAllowed, NotAuthenticated, Replayed
from ..store import Space
from ..xrpc.server import AuthHook, reads_body_first


@dataclass(frozen=True)
class SpaceReader:
    space: Space
    auth: ReaderAuth


def space_reader(ctx: AppContext) -> AuthHook:
    @reads_body_first  # a reader's procedure (warmSpace) names its space in the body
    async def verify(request: web.Request, params: dict[str, Any], body: Any) -> SpaceReader:
        uri = params.get("space")
        if uri is None and isinstance(body, dict):
            uri = body.get("space")
        if not isinstance(uri, str) or not uri:
            raise InvalidInput('Missing required parameter "space"')
        space = await ctx.services.spaces.require(uri, refusal=f"this service does not index the space {uri}")
        auth = await ctx.reader_verifier.verify(request.headers, uri)
        await ctx.services.revocations.refuse_revoked(
            uri, auth.jti
        )  # docs/space-host.md#revoking-credentials
        return SpaceReader(space, auth)

    return verify


def service_auth(ctx: AppContext, nsid: str) -> AuthHook:
    """Service-auth JWT (docs/protocol.md#service-auth-jwts) with `lxm` bound to the method being called."""

    async def verify(request: web.Request, params: dict[str, Any], body: Any):
        authorization = request.headers.getall("Authorization", [])
        if len(authorization) != 1:
            raise NotAuthenticated("exactly one Authorization: Bearer <service JWT> header is required")
        return await ctx.service_verifier.verify(authorization[0], nsid)

    return verify


def syncer_notification(ctx: AppContext, nsid: str) -> AuthHook:
    """Service auth for what a space host pushes to engram as a syncer (notifyWrite, notifySpaceDeleted).

    The space named in the body is looked up and the token's issuer compared with its authority BEFORE
    any DID is resolved, so an unauthenticated caller can make engram fetch nothing (a did:web issuer
    would point the fetch at any host). The audience must be engram's ``#atproto_space_syncer`` service,
    and a replayed token is refused as Forbidden: the sender is known and may not deliver the same
    notification twice (docs/protocol.md#service-auth-jwts)."""

    @reads_body_first  # the space whose authority may sign is named in the body
    async def verify(request: web.Request, params: dict[str, Any], body: Any):
        authorization = request.headers.getall("Authorization", [])
        if len(authorization) != 1:
            raise NotAuthenticated("exactly one Authorization: Bearer <service JWT> header is required")
        uri = body.get("space") if isinstance(body, dict) else None
        if not isinstance(uri, str) or not uri:
            raise InvalidInput('Missing required property "space"')
        space = await ctx.services.spaces.require(uri, refusal=f"this service does not index the space {uri}")
        try:
            auth = await ctx.service_verifier.verify(authorization[0], nsid, issuer=space.authority)
        except Replayed:
            raise NotAllowed("this notification was already delivered (jti replayed)") from None
        if auth.aud != f"{ctx.settings.service_did}#atproto_space_syncer":
            raise NotAllowed("notifications must be addressed to this service's #atproto_space_syncer")
        return auth

    return verify
