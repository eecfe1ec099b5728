"""Who is calling: a bearer credential, either an engram API key or an OAuth access token issued for one.

Both end as the shim framework's `KeyGrant` (engram/compat/keys.py), looked up on every request, so a
revoked key stops working at once, OAuth tokens issued for it included.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from ...errors import NotAllowed
from ..keys import KeyGrant, live_key

if TYPE_CHECKING:
    from aiohttp import web

    from ...context import AppContext

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
        grant = KeyGrant.of(await live_key(ctx, token))
    if not grant.scopes & set(scopes):
        names = " or ".join(name for name, key_scope in SCOPES.items() if key_scope in scopes)
        raise NotAllowed(f"this credential lacks the {names} scope", "InsufficientScope")
    return grant
