"""OAuth clients: key-backed ones (no registration) and registered ones (a row in `oauth_clients`).

A key-backed client's id is an API key's id and its secret is that key, so an operator configures one
with nothing but `engram apikey create`; it may redirect to any URI `redirects.py` accepts (https, loopback
http, a native app's private-use scheme), because a code is worthless without its secret or PKCE verifier. A registered client (for front doors that need
clients of their own, e.g. an MCP server's) has a random id, fixed redirect URIs, and either a secret
(stored as sha256) or none (a public client, which must use PKCE).
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import sqlite3
from dataclasses import dataclass

import orjson

from ..store.prepared_memories import now_iso
from .redirects import redirect_allowed

REGISTERED_PREFIX = "oc_"


@dataclass(frozen=True)
class Client:
    client_id: str
    name: str
    redirect_uris: tuple[str, ...]  # exact matches; empty: any acceptable URI (key-backed clients)
    key_id: int | None = None  # key-backed: the API key that is the client's secret
    secret_hash: str | None = None  # registered confidential clients

    @property
    def confidential(self) -> bool:
        return self.key_id is not None or self.secret_hash is not None

    def allows_redirect(self, uri: str) -> bool:
        # Rows registered before the parser check (docs/oauth.md#redirect-uris) are checked again here.
        if self.redirect_uris:
            return uri in self.redirect_uris and redirect_allowed(uri)
        return redirect_allowed(uri)

    def secret_matches(self, secret: str) -> bool:
        digest = hashlib.sha256(secret.encode("utf-8")).hexdigest()
        return self.secret_hash is not None and hmac.compare_digest(digest, self.secret_hash)


_KEY_ID = re.compile(r"[1-9][0-9]{0,17}")  # an API key id as engram writes it (ASCII, fits SQLite's INTEGER)


def is_key_backed(client_id: str) -> bool:
    # not str.isdigit: it takes "²", "٢" and "０２", which int() refuses or reads as another spelling of an id
    return _KEY_ID.fullmatch(client_id) is not None


def register_client(
    conn: sqlite3.Connection, issuer: str, name: str, redirect_uris: list[str], confidential: bool = True
) -> tuple[Client, str | None]:
    """A new registered client and its secret (shown once; None for a public client)."""
    if not redirect_uris or not all(redirect_allowed(u) for u in redirect_uris):
        raise ValueError("a registered client needs redirect URIs that engram/oauth/redirects.py accepts")
    secret = secrets.token_urlsafe(32) if confidential else None
    client = Client(
        client_id=REGISTERED_PREFIX + secrets.token_urlsafe(12),
        name=name,
        redirect_uris=tuple(redirect_uris),
        secret_hash=hashlib.sha256(secret.encode()).hexdigest() if secret else None,
    )
    conn.execute(
        "INSERT INTO oauth_clients (client_id, issuer, name, redirect_uris, secret_hash, created_at)"
        " VALUES (?, ?, ?, ?, ?, ?)",
        (
            client.client_id,
            issuer,
            name,
            orjson.dumps(list(redirect_uris)).decode(),
            client.secret_hash,
            now_iso(),
        ),
    )
    return client, secret


def get_registered(conn: sqlite3.Connection, issuer: str, client_id: str) -> Client | None:
    """The client `issuer`'s mount registered under this id (another mount's is unknown here)."""
    row = conn.execute(
        "SELECT client_id, name, redirect_uris, secret_hash FROM oauth_clients WHERE client_id = ? AND issuer = ?",
        (client_id, issuer),
    ).fetchone()
    if row is None:
        return None
    return Client(row[0], row[1], tuple(orjson.loads(row[2])), None, row[3])
