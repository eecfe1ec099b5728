"""Who is calling: a bearer credential (an engram API key, or an OAuth access token issued for one).

`principal_for_key` is the ONE place the shim turns an API key token into a principal, so the shared shim
framework's key lookup (multi-space keys) can replace it without touching anything else.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ...errors import NotAllowed, NotAuthenticated
from ...store import apikeys as store_apikeys

if TYPE_CHECKING:
    from ...context import AppContext

# OAuth scopes of the plugin's security scheme -> engram API key scopes.
SCOPES = {"read:documents": "read", "write:documents": "write"}


@dataclass(frozen=True)
class Principal:
    key_id: int
    space_uri: str
    scopes: frozenset[str]  # engram key scopes ("read", "write") this credential carries

    @property
    def id(self) -> str:
        """The stable id tenants (`user_id`s) are namespaced by: the API key behind the credential."""
        return str(self.key_id)

    def require(self, scope: str) -> None:
        if scope not in self.scopes:
            oauth = next(name for name, key_scope in SCOPES.items() if key_scope == scope)
            raise NotAllowed(f"this credential lacks the {oauth} scope", "InsufficientScope")


async def principal_for_key(ctx: AppContext, token: str) -> Principal | None:
    key = await ctx.store.read(store_apikeys.lookup_api_key, token)
    return None if key is None else Principal(key.id, key.space_uri, key.scopes)


def bearer_token(authorization: str | None) -> str:
    if not authorization:
        raise NotAuthenticated("Invalid or missing token", "AuthRequired")
    scheme, _, token = authorization.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise NotAuthenticated("Invalid or missing token", "InvalidToken")
    return token.strip()
