"""Who is calling: a bearer credential, either an engram API key or an OAuth access token issued for one.

Both end as the shim framework's `KeyGrant` (engram/auth/api_key_grants.py), looked up on every request, so a
revoked key stops working at once, OAuth tokens issued for it included.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from ...auth.api_key_grants import KeyGrant, bearer_token, live_key
from ...errors import NotAllowed
from ...oauth.server import ACCESS_PREFIX
from ...oauth.store import get_token
from ...store.apikeys import TOKEN_PREFIX, get_api_key, lookup_api_key

if TYPE_CHECKING:
    from aiohttp import web

    from ...context import AppContext
    from ...space_scopes import SpaceOf

# OAuth scopes of the plugin's security scheme -> engram API key scopes.
SCOPES = {"read:documents": "read", "write:documents": "write"}
# An OAuth access token -> the grant of the key it was issued for (None: not such a token).
TokenResolver = Callable[[str], Awaitable[KeyGrant | None]]


def principal_id(grant: KeyGrant) -> str:
    """What `user_id` tenants are namespaced by: the API key behind the credential (docs/memorybank.md)."""
    return str(grant.key_id)


def bearer_credentials(request: web.Request) -> str:
    """The credentials of an `Authorization: Bearer <credentials>` header, read as upstream's FastAPI
    `HTTPBearer` reads it: no header, no scheme or no credentials is 403 "Not authenticated"; a scheme
    other than Bearer is 403 "Invalid authentication credentials" (docs/memorybank.md "Errors")."""
    header = request.headers.get("Authorization", "")
    scheme, _, credentials = header.partition(" ")
    if not (header and scheme and credentials):
        raise NotAllowed("Not authenticated", "NotAuthenticated")
    if scheme.lower() != "bearer":
        raise NotAllowed("Invalid authentication credentials", "InvalidScheme")
    return credentials.strip()


async def authenticate(
    ctx: AppContext, request: web.Request, scopes: tuple[str, ...], oauth: TokenResolver | None = None
) -> KeyGrant:
    """The grant behind the bearer credential, which must hold one of `scopes` (engram key scopes)."""
    token = bearer_credentials(request)
    grant = await oauth(token) if oauth is not None else None
    if grant is None:
        grant = KeyGrant.of(await live_key(ctx.store, token))
    if not grant.scopes & set(scopes):
        names = " or ".join(name for name, key_scope in SCOPES.items() if key_scope in scopes)
        raise NotAllowed(f"this credential lacks the {names} scope", "InsufficientScope")
    return grant


def bearer_space(conn: sqlite3.Connection, token: str) -> str | None:
    """The primary space of the API key behind `token` (an API key or an OAuth access token)."""
    if token.startswith(TOKEN_PREFIX):
        key = lookup_api_key(conn, token)
    elif token.startswith(ACCESS_PREFIX):
        row = get_token(conn, token, "access")
        key = get_api_key(conn, row.key_id) if row is not None else None
    else:
        return None
    return key.space_uri if key is not None else None


def search_space_of(ctx: AppContext) -> SpaceOf:
    """Which space a search is for, found before the request is authenticated, so a cluster node can send
    it to the space's holder (docs/scale-out.md#forwarding).

    A Memory Bank request names no space: its bearer credential does. Every search it makes runs on the
    primary space of an engram API key, whether the bearer is the key itself or an OAuth access token
    issued for it. The lookup is only a routing hint, one point read: the node that serves the request
    authenticates it again in full (revocation, expiry, scopes), and a credential that resolves to nothing
    is served where it arrived, so the usual 401 answers it."""

    async def space_of(request: web.Request) -> str | None:
        token = bearer_token(request)
        if not token or request.method != "POST":
            return None
        return await ctx.store.point_read(bearer_space, token)

    return space_of
