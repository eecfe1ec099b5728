"""API keys for the REST shims: created for hosted spaces with scopes, shown once, stored hashed.

A key has a primary space (shim writes go there) and may be bound to more hosted spaces (read through
the shims that search several, e.g. GPTBots knowledge bases named by their short ids)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from ..errors import InvalidInput
from ..identifiers import is_display_text
from ..store import ApiKey
from ..store import apikeys as store_apikeys
from ..store import spaces as store_spaces

if TYPE_CHECKING:
    from ..store.database import Store

MAX_LABEL_CHARS = 200


async def create_api_key(
    store: Store, space_uri: str, scopes: Iterable[str], label: str = "", extra_spaces: Iterable[str] = ()
) -> tuple[ApiKey, str]:
    """(key, raw token): the token is returned here once and only its sha256 is stored."""
    scopes = [scopes] if isinstance(scopes, str) else list(scopes)
    if not scopes or not set(scopes) <= store_apikeys.SCOPES:
        raise InvalidInput(f"scopes must be a non-empty subset of {sorted(store_apikeys.SCOPES)}")
    if not isinstance(label, str) or len(label) > MAX_LABEL_CHARS:
        raise InvalidInput(f"label must be a string of at most {MAX_LABEL_CHARS} characters")
    if not is_display_text(label):
        raise InvalidInput("label may not hold control or text-direction characters")
    return await store.write(store_apikeys.create_api_key, space_uri, scopes, label, list(extra_spaces))


async def list_api_keys(store: Store, space_uri: str | None = None) -> list[ApiKey]:
    return await store.read(store_apikeys.list_api_keys, space_uri)


async def bind_space(store: Store, key_id: int, space_uri: str) -> ApiKey:
    return await store.write(store_apikeys.bind_space, key_id, space_uri)


async def unbind_space(store: Store, key_id: int, space_uri: str) -> ApiKey:
    return await store.write(store_apikeys.unbind_space, key_id, space_uri)


async def revoke_api_key(store: Store, key_id: int) -> ApiKey:
    """Revoke a key and return it; `KeyNotFound` if there is no such live key."""

    def revoke(conn):
        if not store_apikeys.revoke_api_key(conn, key_id):
            raise InvalidInput(f"no live API key with id {key_id}", "KeyNotFound")
        return store_apikeys.get_api_key(conn, key_id)

    return await store.write(revoke)


async def find_live_api_key(store: Store, token: str) -> ApiKey | None:
    """The live key a raw token names (the console's reader sign-in), or None."""
    return await store.read(store_apikeys.lookup_api_key, token)


async def get_live_api_key(store: Store, key_id: int) -> ApiKey | None:
    """The key with this id while it is live (not revoked, its space not deleted), else None."""

    def read(conn):
        key = store_apikeys.get_api_key(conn, key_id)
        if key is None or key.revoked_at is not None:
            return None
        space = store_spaces.get_space(conn, key.space_uri)
        return key if space is not None and not space.deleted else None

    return await store.read(read)
