"""API-key grants: `Authorization: Bearer <engram key>` -> `KeyGrant`, for the REST shims, MCP and the
console (docs/compat.md).

The key is looked up in the store on every request (a point read by a unique index: ~20 µs on SQLite,
done on the loop like the XRPC auth step's space lookup; a round trip on PostgreSQL, done on a reader
thread: `Store.point_read`), so revoking a key, unbinding a space
or deleting a space takes effect on the very next request; there is no cache to go stale.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..errors import NotAllowed, NotAuthenticated, NotFound
from ..store import apikeys as store_apikeys

if TYPE_CHECKING:
    from aiohttp import web

    from ..store import ApiKey
    from ..store.database import Store


@dataclass(frozen=True)
class KeyGrant:
    key_id: int
    primary_space: str  # URI of the space shim writes go to
    spaces: dict[str, str]  # short id (what the CLI shows; a GPTBots group_id) -> space URI, primary included
    scopes: frozenset[str]  # subset of {"read", "write"}

    @classmethod
    def of(cls, key: ApiKey) -> KeyGrant:
        return cls(key.id, key.space_uri, dict(key.spaces), key.scopes)

    def short_id(self, space_uri: str) -> str | None:
        for short, uri in self.spaces.items():
            if uri == space_uri:
                return short
        return None


def bearer_token(request: web.Request) -> str | None:
    header = request.headers.get("Authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    return token.strip()


async def authenticate_key(store: Store, request: web.Request, scope: str) -> KeyGrant:
    """The grant of the request's bearer key, which must hold `scope` ("read" or "write").

    Raises `NotAuthenticated` (name `MissingApiKey` / `InvalidApiKey`), `NotFound` (`SpaceDeleted`: the
    key's primary space was deleted, which revoked it) or `NotAllowed` (`InsufficientScope`); each shim
    renders them in its own shape."""
    token = bearer_token(request)
    if token is None:
        raise NotAuthenticated("an API key is required: Authorization: Bearer <key>", "MissingApiKey")
    return await grant_for_token(store, token, scope)


async def live_key(store: Store, token: str) -> ApiKey:
    """The live key of `token`; `NotFound` (`SpaceDeleted`) when its primary space was deleted, which revoked
    it, `NotAuthenticated` (`InvalidApiKey`) when it is unknown or revoked."""
    key, space_deleted = await store.point_read(store_apikeys.key_and_deleted, token)
    if key is None:
        if space_deleted:
            raise NotFound("the API key's space has been deleted", "SpaceDeleted")
        raise NotAuthenticated("the API key is unknown or revoked", "InvalidApiKey")
    return key


async def grant_for_token(store: Store, token: str, scope: str) -> KeyGrant:
    """The same check for a token that arrived some other way (an OAuth access token's key, ...)."""
    key = await live_key(store, token)
    if scope not in key.scopes:
        raise NotAllowed(f"this API key does not have the {scope} scope", "InsufficientScope")
    return KeyGrant.of(key)
