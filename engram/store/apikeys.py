"""Shim API keys (docs/protocol.md#shim-api-keys): random 256-bit tokens shown once, stored only as sha256
hex.

A key is bound to one or more hosted spaces (`api_key_spaces`); `api_keys.space_id` is its primary space,
where shim writes go. A space's short id, the name a shim body uses for it (a GPTBots `group_id`), is the
space's row id as a decimal string: never reused, so stable for the life of the database.

A key is bound to one or more hosted spaces (`api_key_spaces`); `api_keys.space_id` is its primary space,
where shim writes go. A space's short id, the name a shim body uses for it (a GPTBots `group_id`), is the
space's row id as a decimal string: never reused, so stable for the life of the database.

Lookup is `WHERE key_hash = sha256(token)`, with no constant-time comparison: any timing difference in
the index lookup can only reveal something about the *hash* of a guess, and knowing which hash prefixes
exist does not help construct a token that hashes to one (that would be a sha256 preimage).
"""

from __future__ import annotations

import hashlib
import secrets
import sqlite3
from collections.abc import Iterable
from typing import Any

from engram.errors import InvalidInput
from engram.store.models import ApiKey, Space
from engram.store.point_cache import cacheable
from engram.store.prepared_memories import now_iso
from engram.store.spaces import require_space

SCOPES = frozenset({"read", "write"})
MAX_SPACES_PER_KEY = 100
TOKEN_PREFIX = "engram_"
_COLUMNS = "k.id, s.uri, k.scopes, k.label, k.created_at, k.revoked_at"


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def short_space_id(space_row_id: int) -> str:
    return str(space_row_id)


def _bound_spaces(conn: sqlite3.Connection, key_id: int) -> dict[str, str]:
    """short id -> URI of the key's live spaces, in short-id order (deleted spaces drop out at once)."""
    rows = conn.execute(
        "SELECT s.id, s.uri FROM api_key_spaces b JOIN spaces s ON s.id = b.space_id"
        " WHERE b.key_id = ? AND s.deleted_at IS NULL ORDER BY s.id",
        (key_id,),
    )
    return {short_space_id(space_id): uri for space_id, uri in rows}


def _api_key(conn: sqlite3.Connection, row: tuple[Any, ...]) -> ApiKey:
    id_, space_uri, scopes, label, created_at, revoked_at = row
    return ApiKey(
        id_, space_uri, frozenset(scopes.split()), label, created_at, revoked_at, _bound_spaces(conn, id_)
    )


def _require_hosted(conn: sqlite3.Connection, space_uri: str) -> Space:
    space = require_space(conn, space_uri)
    if space.kind != "hosted":
        raise InvalidInput("API keys can only be bound to hosted spaces")
    return space


def create_api_key(
    conn: sqlite3.Connection,
    space_uri: str,
    scopes: Iterable[str],
    label: str = "",
    extra_spaces: Iterable[str] = (),
) -> tuple[ApiKey, str]:
    """Create a key whose primary space is `space_uri`, also bound to `extra_spaces`; returns
    (key, raw token). The token is not stored anywhere. The caller (the API-key service) checks `scopes`
    and `label`."""
    space = _require_hosted(conn, space_uri)
    wanted = frozenset(scopes)
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    key_id = conn.execute(
        "INSERT INTO api_keys (key_hash, space_id, scopes, label, created_at)"
        " VALUES (?, ?, ?, ?, ?) RETURNING id",
        (hash_token(token), space.id, " ".join(sorted(wanted)), label, now_iso()),
    ).fetchone()[0]
    conn.execute("INSERT INTO api_key_spaces (key_id, space_id) VALUES (?, ?)", (key_id, space.id))
    for uri in dict.fromkeys(extra_spaces):
        bind_space(conn, key_id, uri)
    return _require_live(conn, key_id), token


def bind_space(conn: sqlite3.Connection, key_id: int, space_uri: str) -> ApiKey:
    """Let a live key use one more hosted space (idempotent)."""
    key = _require_live(conn, key_id)
    space = _require_hosted(conn, space_uri)
    if short_space_id(space.id) not in key.spaces and len(key.spaces) >= MAX_SPACES_PER_KEY:
        raise InvalidInput(f"a key may be bound to at most {MAX_SPACES_PER_KEY} spaces")
    conn.execute(
        "INSERT INTO api_key_spaces (key_id, space_id) VALUES (?, ?) ON CONFLICT DO NOTHING",
        (key_id, space.id),
    )
    return _require_live(conn, key_id)


def unbind_space(conn: sqlite3.Connection, key_id: int, space_uri: str) -> ApiKey:
    """Take a space away from a key at once; the primary space cannot be unbound (revoke the key)."""
    key = _require_live(conn, key_id)
    space = require_space(conn, space_uri)
    if space.uri == key.space_uri:
        raise InvalidInput("the primary space of a key cannot be unbound; revoke the key instead")
    conn.execute("DELETE FROM api_key_spaces WHERE key_id = ? AND space_id = ?", (key_id, space.id))
    return _require_live(conn, key_id)


def _require_live(conn: sqlite3.Connection, key_id: int) -> ApiKey:
    key = get_api_key(conn, key_id)
    if key is None or key.revoked_at is not None:
        raise InvalidInput(f"no live API key with id {key_id}", "KeyNotFound")
    return key


def get_api_key(conn: sqlite3.Connection, key_id: int) -> ApiKey | None:
    row = conn.execute(
        f"SELECT {_COLUMNS} FROM api_keys k JOIN spaces s ON s.id = k.space_id WHERE k.id = ?", (key_id,)
    ).fetchone()
    return _api_key(conn, row) if row else None


def lookup_api_key(conn: sqlite3.Connection, token: str) -> ApiKey | None:
    """The live key for a raw token, or None (unknown, revoked, or its primary space deleted)."""
    if not isinstance(token, str) or not token.startswith(TOKEN_PREFIX) or len(token) > 200:
        return None
    row = conn.execute(
        f"SELECT {_COLUMNS} FROM api_keys k JOIN spaces s ON s.id = k.space_id"
        " WHERE k.key_hash = ? AND k.revoked_at IS NULL AND s.deleted_at IS NULL",
        (hash_token(token),),
    ).fetchone()
    return _api_key(conn, row) if row else None


def key_of_deleted_space(conn: sqlite3.Connection, token: str) -> bool:
    """Whether the token names a key that stopped working because its primary space was deleted (a shim
    may say so: GPTBots answers 20059 "agent deleted" rather than "authentication failed")."""
    if not isinstance(token, str) or not token.startswith(TOKEN_PREFIX) or len(token) > 200:
        return False
    row = conn.execute(
        "SELECT 1 FROM api_keys k JOIN spaces s ON s.id = k.space_id WHERE k.key_hash = ? AND s.deleted_at IS NOT NULL",
        (hash_token(token),),
    ).fetchone()
    return row is not None


@cacheable  # reads api_keys, api_key_spaces and spaces only (engram/store/point_cache.py)
def key_and_deleted(conn: sqlite3.Connection, token: str) -> tuple[ApiKey | None, bool]:
    """`lookup_api_key` and, when there is no live key, `key_of_deleted_space`: one read for the shims'
    and MCP's per-request check."""
    key = lookup_api_key(conn, token)
    return key, key is None and key_of_deleted_space(conn, token)


def list_api_keys(conn: sqlite3.Connection, space_uri: str | None = None) -> list[ApiKey]:
    """All keys, or those bound to `space_uri` (as primary or extra space)."""
    where, params = "", ()  # type: tuple[str, tuple[Any, ...]]
    if space_uri is not None:
        where = (
            " WHERE k.id IN (SELECT b.key_id FROM api_key_spaces b"
            " JOIN spaces x ON x.id = b.space_id WHERE x.uri = ?)"
        )
        params = (space_uri,)
    rows = conn.execute(
        f"SELECT {_COLUMNS} FROM api_keys k JOIN spaces s ON s.id = k.space_id{where} ORDER BY k.id", params
    ).fetchall()
    return [_api_key(conn, row) for row in rows]


def revoke_api_key(conn: sqlite3.Connection, key_id: int) -> bool:
    """Revoke a key; False if it does not exist or was already revoked."""
    cursor = conn.execute(
        "UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL", (now_iso(), key_id)
    )
    return cursor.rowcount == 1
