"""`admin_signed`: the auth hook of garden.engram.admin.* (engram.auth.admin_signature;
docs/protocol.md#admin-signatures).

The signature covers @method, @target-uri (rebuilt by the verifier from ENGRAM_PUBLIC_URL + the request's
path and query, never from proxy-facing headers) and Content-Digest over the exact body bytes, which the
pipeline keeps under RAW_BODY: it streams the body itself, so `request.read()` would give b"" here.
Only DIDs in ENGRAM_ADMIN_DIDS pass; the verifier's nonce cache refuses replays."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from aiohttp import web

from ..context import AppContext
from ..errors import NotAllowed
from ..xrpc.server import RAW_BODY, AuthHook, reads_body_first


@dataclass(frozen=True)
class AdminCaller:
    did: str


def admin_signed(ctx: AppContext) -> AuthHook:
    @reads_body_first  # the signature covers the body's digest
    async def verify(request: web.Request, params: dict[str, Any], body: Any) -> AdminCaller:
        if not ctx.settings.admin_dids:
            # Say so plainly instead of a signature error the operator cannot fix from the client side.
            raise NotAllowed("remote admin is off: no DID is in ENGRAM_ADMIN_DIDS", "Forbidden")
        raw = request.get(RAW_BODY, b"")
        did = await ctx.admin_verifier.verify(request.method, request.path_qs, request.headers, raw)
        return AdminCaller(did)

    return verify
