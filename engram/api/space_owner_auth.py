"""`space_owner` and `space_caller`: the auth hooks of the management calls an authority's tools make at the
space host (com.atproto.simplespace.*, com.atproto.space.listSpaces; docs/space-host.md#managing-members).

The reference serves these on the authority's own PDS; an authority whose space engram hosts reaches engram
through its PDS with `atproto-proxy`, so the PDS mints a service-auth JWT: `iss` the authority, `lxm` the
method, `aud` the proxied service id (engram's DID or its `#atproto_space_host`, or, for an operator DID
whose document names engram, that DID's own service ids). engram checks it with the one service-auth
verifier (docs/protocol.md#service-auth-jwts).

Who may call is decided from the token's claimed `iss` BEFORE any DID is resolved, so a stranger can make
engram fetch nothing: for a named space, only its authority (else 400 NotSpaceOwner, as the reference
answers); for createSpace, only a DID whose key engram holds (it signs the space's credentials and
commits); for listSpaces, an authority engram holds a key for or a member of a hosted space.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from ..auth.jws import JwsError, parse_jws
from ..auth.service_jwt import ServiceAuth
from ..context import AppContext
from ..errors import InvalidInput, NotAuthenticated
from ..store import Space
from ..xrpc.server import AuthHook, reads_body_first
from .space_repo_auth import hosted_space

SERVICE_IDS = ("", "#atproto_space_host", "#atproto_pds")


@dataclass(frozen=True)
class SpaceCaller:
    did: str  # the verified issuer
    space: Space | None  # the space the call names, when it names one


def service_audiences(ctx: AppContext, owner: str | None) -> frozenset[str]:
    """engram's DID and space-host service ids, and the same of ``owner`` (an authority engram hosts)."""
    dids = [ctx.settings.service_did] + ([owner] if owner else [])
    return frozenset(did + service for did in dids for service in SERVICE_IDS)


def _authorization(request: web.Request) -> str:
    authorization = request.headers.getall("Authorization", [])
    if len(authorization) != 1:
        raise NotAuthenticated("exactly one Authorization: Bearer <service JWT> header is required")
    return authorization[0]


def claimed_issuer(authorization: str) -> str | None:
    """The `iss` a token claims, unverified: only to decide whether verifying it is worth a resolution."""
    _, _, token = authorization.strip().partition(" ")
    try:
        iss = parse_jws(token.strip()).payload.get("iss")
    except JwsError:
        return None  # the verifier names the fault (BadJwt)
    return iss.split("#", 1)[0] if isinstance(iss, str) else None


async def _verify(ctx: AppContext, authorization: str, nsid: str, iss: str | None, owner: str | None):
    auth: ServiceAuth = await ctx.service_verifier.verify(
        authorization, nsid, issuer=iss, audiences=service_audiences(ctx, owner)
    )
    return auth


def space_owner(ctx: AppContext, nsid: str) -> AuthHook:
    """putMember, removeMember, listMembers: the space is hosted here and live, and the caller is its
    authority."""

    @reads_body_first  # the procedures name their space in the body
    async def verify(request: web.Request, params: dict[str, Any], body: Any) -> SpaceCaller:
        authorization = _authorization(request)
        uri = params.get("space")
        if uri is None and isinstance(body, dict):
            uri = body.get("space")
        space = await hosted_space(ctx, uri)
        iss = claimed_issuer(authorization)
        if iss is not None and iss != space.authority:
            raise InvalidInput(f"only the authority of {space.uri} may manage it", "NotSpaceOwner")
        auth = await _verify(ctx, authorization, nsid, space.authority, space.authority)
        return SpaceCaller(auth.iss, space)

    return verify


def space_caller(ctx: AppContext, nsid: str, admit: Callable[[str], Awaitable[None]]) -> AuthHook:
    """createSpace, listSpaces: no space named; ``admit(iss)``, a local check, raises when the claimed
    issuer is not worth verifying at all."""

    async def verify(request: web.Request, params: dict[str, Any], body: Any) -> SpaceCaller:
        authorization = _authorization(request)
        iss = claimed_issuer(authorization)
        if iss is not None:
            await admit(iss)
        auth = await _verify(ctx, authorization, nsid, iss, iss)
        return SpaceCaller(auth.iss, None)

    return verify
