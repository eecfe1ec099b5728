"""SQLite repositories for OAuth codes and tokens (migration 0004). Plain functions over a connection;
only sha256 hashes of codes and tokens are stored, so a copy of the database grants nothing."""

from __future__ import annotations

import hashlib
import sqlite3
from dataclasses import dataclass


def digest(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class CodeRow:
    client_id: str
    key_id: int
    scopes: frozenset[str]
    redirect_uri: str
    code_challenge: str | None
    family: str
    expires_at: int
    used_at: int | None


@dataclass(frozen=True)
class TokenRow:
    kind: str
    client_id: str
    key_id: int
    scopes: frozenset[str]
    family: str
    expires_at: int
    revoked_at: int | None


def put_code(conn: sqlite3.Connection, code: str, row: CodeRow) -> None:
    conn.execute(
        "INSERT INTO oauth_codes (code_hash, client_id, key_id, scopes, redirect_uri, code_challenge, family,"
        " expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (digest(code), row.client_id, row.key_id, " ".join(sorted(row.scopes)), row.redirect_uri,
         row.code_challenge, row.family, row.expires_at),
    )  # fmt: skip


def get_code(conn: sqlite3.Connection, code: str) -> CodeRow | None:
    found = conn.execute(
        "SELECT client_id, key_id, scopes, redirect_uri, code_challenge, family, expires_at, used_at"
        " FROM oauth_codes WHERE code_hash = ?",
        (digest(code),),
    ).fetchone()
    if found is None:
        return None
    client_id, key_id, scopes, redirect_uri, challenge, family, expires_at, used_at = found
    return CodeRow(
        client_id, key_id, frozenset(scopes.split()), redirect_uri, challenge, family, expires_at, used_at
    )


def spend_code(conn: sqlite3.Connection, code: str, now: int) -> bool:
    """Mark the code used; True only for the one call that found it unused (a conditional UPDATE, so it
    holds on PostgreSQL's row locks as on SQLite's write lock)."""
    return (
        conn.execute(
            "UPDATE oauth_codes SET used_at = ? WHERE code_hash = ? AND used_at IS NULL", (now, digest(code))
        ).rowcount
        == 1
    )


def put_token(conn: sqlite3.Connection, token: str, row: TokenRow) -> None:
    conn.execute(
        "INSERT INTO oauth_tokens (token_hash, kind, client_id, key_id, scopes, family, expires_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?)",
        (digest(token), row.kind, row.client_id, row.key_id, " ".join(sorted(row.scopes)), row.family,
         row.expires_at),
    )  # fmt: skip


def get_token(conn: sqlite3.Connection, token: str, kind: str) -> TokenRow | None:
    found = conn.execute(
        "SELECT kind, client_id, key_id, scopes, family, expires_at, revoked_at FROM oauth_tokens"
        " WHERE token_hash = ? AND kind = ?",
        (digest(token), kind),
    ).fetchone()
    if found is None:
        return None
    kind, client_id, key_id, scopes, family, expires_at, revoked_at = found
    return TokenRow(kind, client_id, key_id, frozenset(scopes.split()), family, expires_at, revoked_at)


def revoke_token(conn: sqlite3.Connection, token: str, now: int) -> int:
    """1 if this call revoked the token, 0 if it was revoked already (a refresh that lost the race)."""
    return conn.execute("UPDATE oauth_tokens SET revoked_at = ? WHERE token_hash = ? AND revoked_at IS NULL",
                        (now, digest(token))).rowcount  # fmt: skip


def revoke_family(conn: sqlite3.Connection, family: str, now: int) -> int:
    cursor = conn.execute(
        "UPDATE oauth_tokens SET revoked_at = ? WHERE family = ? AND revoked_at IS NULL", (now, family)
    )
    return cursor.rowcount


def prune_expired(conn: sqlite3.Connection, now: int) -> int:
    """Forget codes and tokens that can no longer be used (called opportunistically on issue)."""
    removed = conn.execute("DELETE FROM oauth_codes WHERE expires_at < ?", (now - 86400,)).rowcount
    return removed + conn.execute("DELETE FROM oauth_tokens WHERE expires_at < ?", (now - 86400,)).rowcount
