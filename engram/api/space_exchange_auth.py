"""`space_exchanger`: the auth hook of com.atproto.space.getSpaceCredential for the spaces engram hosts
(docs/space-host.md#the-credential-exchange; steps 1-5 of engram/spacehost/credential_exchange.py).

The delegation token and the exchange signature are the caller's proof, checked here like any other auth
mode's, after the space: SpaceNotFound/SpaceDeleted come first, before any signature work or resolution.
The member's grant (step 6) is the space host's decision, made in the handler."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from ..auth.space_signature import verify_exchange_signature
from ..context import AppContext
from ..errors import NotAuthenticated
from ..spacehost.credential_exchange import VerifiedExchange
from ..xrpc.server import AuthHook, reads_body_first
from .space_repo_auth import hosted_space


def space_exchanger(ctx: AppContext) -> AuthHook:
    @reads_body_first  # the space is named in the body
    async def verify(request: web.Request, params: dict[str, Any], body: Any) -> VerifiedExchange:
        space = await hosted_space(ctx, body.get("space") if isinstance(body, dict) else None)
        authorization = request.headers.getall("Authorization", [])
        if len(authorization) != 1:
            raise NotAuthenticated("exactly one Authorization: Bearer <delegation token> field is required")
        holder = verify_exchange_signature(request.headers)
        delegation = await ctx.space_host.delegations.verify(authorization[0], space.uri, space.authority)
        attestation = body.get("clientAttestation") if isinstance(body, dict) else None
        client_id = None
        if isinstance(attestation, str):  # its shape is the lexicon's to check; a non-string fails there
            client_id = await ctx.space_host.attestations.verify(attestation, space.authority)
        return VerifiedExchange(space, delegation.iss, holder.did_key, client_id)

    return verify
