"""Who is calling: a bearer credential, either an engram API key or an OAuth access token issued for one.

Both end as the shim framework's `KeyGrant` (engram/compat/keys.py), looked up on every request, so a
revoked key stops working at once, OAuth tokens issued for it included.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from ...errors import NotAllowed, NotAuthenticated
from ..keys import KeyGrant, bearer_token, grant_for_token

if TYPE_CHECKING:
    from aiohttp import web

    from ...context import AppContext

# OAuth scopes of the plugin's security scheme -> engram API key scopes.
SCOPES = {"read:documents": "read", "write:documents": "write"}
# An OAuth access token -> the grant of the key it was issued for (None: not such a token).
TokenResolver = Callable[[str, str], Awaitable[KeyGrant | None]]


def principal_id(grant: KeyGrant) -> str:
    """What `user_id` tenants are namespaced by: the API key behind the credential (docs/memorybank.md)."""
    return str(grant.key_id)


async def authenticate(
    ctx: AppContext, request: web.Request, scope: str, oauth: TokenResolver | None = None
) -> KeyGrant:
    token = bearer_token(request)
    if token is None:
        raise NotAuthenticated("Invalid or missing token", "MissingToken")
    grant = await oauth(token, scope) if oauth is not None else None
    if grant is None:
        grant = await grant_for_token(ctx, token, scope)
    if scope not in grant.scopes:
        oauth_scope = next(name for name, key_scope in SCOPES.items() if key_scope == scope)
        raise NotAllowed(f"this credential lacks the {oauth_scope} scope", "InsufficientScope")
    return grant
