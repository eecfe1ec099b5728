"""Shim API keys (DESIGN §4.4): random 256-bit tokens shown once, stored only as sha256 hex.

Lookup is `WHERE key_hash = sha256(token)`, with no constant-time comparison: any timing difference in
the index lookup can only reveal something about the *hash* of a guess, and knowing which hash prefixes
exist does not help construct a token that hashes to one (that would be a sha256 preimage).
"""

from __future__ import annotations

import hashlib
import secrets
import sqlite3
from collections.abc import Iterable

from engram.store.models import ApiKey
from engram.store.spaces import require_space
from engram.store.writes import now_iso
from engram.xrpc.errors import InvalidRequestError

SCOPES = frozenset({"read", "write"})
TOKEN_PREFIX = "engram_"
_COLUMNS = "k.id, s.uri, k.scopes, k.label, k.created_at, k.revoked_at"


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def _api_key(row: tuple) -> ApiKey:
    id_, space_uri, scopes, label, created_at, revoked_at = row
    return ApiKey(id_, space_uri, frozenset(scopes.split()), label, created_at, revoked_at)


def create_api_key(
    conn: sqlite3.Connection, space_uri: str, scopes: Iterable[str], label: str = ""
) -> tuple[ApiKey, str]:
    """Create a key for a hosted space; returns (key, raw token). The token is not stored anywhere."""
    space = require_space(conn, space_uri)
    if space.kind != "hosted":
        raise InvalidRequestError("API keys can only be bound to hosted spaces")
    wanted = frozenset(scopes)
    if not wanted or not wanted <= SCOPES:
        raise InvalidRequestError(f"scopes must be a non-empty subset of {sorted(SCOPES)}")
    if not isinstance(label, str) or len(label) > 200:
        raise InvalidRequestError("label must be a string of at most 200 characters")
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    key_id = conn.execute(
        "INSERT INTO api_keys (key_hash, space_id, scopes, label, created_at)"
        " VALUES (?, ?, ?, ?, ?) RETURNING id",
        (hash_token(token), space.id, " ".join(sorted(wanted)), label, now_iso()),
    ).fetchone()[0]
    return get_api_key(conn, key_id), token


def get_api_key(conn: sqlite3.Connection, key_id: int) -> ApiKey | None:
    row = conn.execute(
        f"SELECT {_COLUMNS} FROM api_keys k JOIN spaces s ON s.id = k.space_id WHERE k.id = ?", (key_id,)
    ).fetchone()
    return _api_key(row) if row else None


def lookup_api_key(conn: sqlite3.Connection, token: str) -> ApiKey | None:
    """The live key for a raw token, or None (unknown, revoked, or its space deleted)."""
    if not isinstance(token, str) or not token.startswith(TOKEN_PREFIX) or len(token) > 200:
        return None
    row = conn.execute(
        f"SELECT {_COLUMNS} FROM api_keys k JOIN spaces s ON s.id = k.space_id"
        " WHERE k.key_hash = ? AND k.revoked_at IS NULL AND s.deleted_at IS NULL",
        (hash_token(token),),
    ).fetchone()
    return _api_key(row) if row else None


def list_api_keys(conn: sqlite3.Connection, space_uri: str | None = None) -> list[ApiKey]:
    where, params = "", ()
    if space_uri is not None:
        where, params = " WHERE s.uri = ?", (space_uri,)
    rows = conn.execute(
        f"SELECT {_COLUMNS} FROM api_keys k JOIN spaces s ON s.id = k.space_id{where} ORDER BY k.id", params
    )
    return [_api_key(row) for row in rows]


def revoke_api_key(conn: sqlite3.Connection, key_id: int) -> bool:
    """Revoke a key; False if it does not exist or was already revoked."""
    cursor = conn.execute(
        "UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL", (now_iso(), key_id)
    )
    return cursor.rowcount == 1
