"""Replay claims shared by every process on the store (docs/internals.md#using-every-core): a
service-auth JWT id, an admin request nonce or a client attestation id verifies once in total, not once per
serving process. Plain functions over a connection, and `StoreReplayGuard`, the auth layer's async view."""

from __future__ import annotations

import hashlib
import math
import sqlite3
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from engram.store.database import Store


def claim_key(issuer: str, identifier: str) -> str:
    """A bounded key for any (issuer, id) pair; the NUL keeps ("a", "bc") and ("ab", "c") apart."""
    return hashlib.sha256(f"{issuer}\0{identifier}".encode()).hexdigest()


def claim(conn: sqlite3.Connection, scope: str, key: str, expires_ms: int, now_ms: int) -> bool:
    """True for the first live claim of (scope, key). Expired claims are pruned on the way, so the table
    holds only ids that could still verify (each verifier bounds how far ahead an id may expire). A claim
    made at or after its own expiry is refused: the verifier's time check ran earlier than this write, and
    the first claim of the id may be the one just pruned (a replay at the edge of the window)."""
    if expires_ms <= now_ms:
        return False
    conn.execute("DELETE FROM replay_claims WHERE expires_ms <= ?", (now_ms,))
    inserted = conn.execute(
        "INSERT INTO replay_claims (scope, claim_key, expires_ms) VALUES (?, ?, ?)"
        " ON CONFLICT (scope, claim_key) DO NOTHING",
        (scope, key, expires_ms),
    ).rowcount
    return inserted == 1


class StoreReplayGuard:
    """`ReplayGuard` (engram/auth/replay.py) over the store: one short write per claim. Only the verifiers
    of rare requests use it (service auth, admin signatures, attestations), never the search path."""

    def __init__(self, store: Store, now: Callable[[], float] = time.time):
        self._store = store
        self._now = now

    async def claim(self, scope: str, issuer: str, identifier: str, expires_at: float) -> bool:
        return await self._store.write(
            claim,
            scope,
            claim_key(issuer, identifier),
            math.ceil(expires_at * 1000),
            int(self._now() * 1000),
        )
