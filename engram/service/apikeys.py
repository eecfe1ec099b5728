"""API keys for the REST shims: created for hosted spaces with scopes, shown once, stored hashed.

A key has a primary space (shim writes go there) and may be bound to more hosted spaces (read through
the shims that search several, e.g. GPTBots knowledge bases named by their short ids)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from ..errors import InvalidInput
from ..store import ApiKey
from ..store import apikeys as store_apikeys

if TYPE_CHECKING:
    from ..context import AppContext


async def create_api_key(
    ctx: AppContext, space_uri: str, scopes: Iterable[str], label: str = "", extra_spaces: Iterable[str] = ()
) -> tuple[ApiKey, str]:
    """(key, raw token): the token is returned here once and only its sha256 is stored."""
    return await ctx.store.write(
        store_apikeys.create_api_key, space_uri, list(scopes), label, list(extra_spaces)
    )


async def list_api_keys(ctx: AppContext, space_uri: str | None = None) -> list[ApiKey]:
    return await ctx.store.read(store_apikeys.list_api_keys, space_uri)


async def bind_space(ctx: AppContext, key_id: int, space_uri: str) -> ApiKey:
    return await ctx.store.write(store_apikeys.bind_space, key_id, space_uri)


async def unbind_space(ctx: AppContext, key_id: int, space_uri: str) -> ApiKey:
    return await ctx.store.write(store_apikeys.unbind_space, key_id, space_uri)


async def revoke_api_key(ctx: AppContext, key_id: int) -> ApiKey:
    """Revoke a key and return it; `KeyNotFound` if there is no such live key."""

    def revoke(conn):
        if not store_apikeys.revoke_api_key(conn, key_id):
            raise InvalidInput(f"no live API key with id {key_id}", "KeyNotFound")
        return store_apikeys.get_api_key(conn, key_id)

    return await ctx.store.write(revoke)
