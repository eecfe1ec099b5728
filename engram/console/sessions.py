"""Console sessions: kept in the store (engram/store/console_sessions.py), found by the sha256 of the
cookie's random value, so every serving process knows every session (docs/internals.md#using-every-core).

Only the digest is stored, never the cookie, so a copy of the database does not sign anyone in. A session
records who signed in (the operator, or a reader holding one API key) and its CSRF token; it never records
what the key allows: that is re-read from the store on every request, so revoking a key ends its sessions
at once.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Callable
from dataclasses import dataclass

from ..store import console_sessions as rows
from ..store.database import Store

SESSION_TTL_S = 8 * 3600  # a working day; after it the operator asks for a new link
MAX_SESSIONS = (
    10_000  # reader sessions in all; beyond it the oldest readers' are dropped (never the operator's)
)
PER_PRINCIPAL = 20  # sessions of one API key, or of the operator; beyond it that signer's own oldest go

OPERATOR = "operator"
READER = "reader"


@dataclass(frozen=True)
class Session:
    role: str  # OPERATOR or READER
    key_id: int | None  # the API key a reader signed in with
    csrf: str
    expires_at: float


def _digest(value: str) -> str:
    return hashlib.sha256(value.encode("utf-8")).hexdigest()


def _ms(seconds: float) -> int:
    return int(seconds * 1000)


class SessionStore:
    def __init__(self, store: Store, clock: Callable[[], float], ttl_s: float = SESSION_TTL_S):
        self._store = store
        self.clock = clock
        self.ttl_s = ttl_s
        # The caps (docs/security.md#per-tenant-caps); tests set small ones.
        self.max_sessions = MAX_SESSIONS
        self.per_principal = PER_PRINCIPAL

    async def start(self, role: str, key_id: int | None = None) -> tuple[str, Session]:
        """(cookie value, session)."""
        now = self.clock()
        cookie = secrets.token_urlsafe(32)
        session = Session(role, key_id, secrets.token_urlsafe(32), now + self.ttl_s)
        await self._store.write(
            rows.start_session,
            _digest(cookie),
            role,
            key_id,
            session.csrf,
            _ms(now),
            _ms(session.expires_at),
            self.max_sessions,
            self.per_principal,
        )
        return cookie, session

    async def get(self, cookie: str | None) -> Session | None:
        if not cookie:
            return None
        row = await self._store.read(rows.live_session, _digest(cookie), _ms(self.clock()))
        if row is None:
            return None
        role, key_id, csrf, expires_ms = row
        return Session(role, key_id, csrf, expires_ms / 1000)

    async def end(self, cookie: str | None) -> None:
        if cookie:
            await self._store.write(rows.end_session, _digest(cookie))

    async def end_key(self, key_id: int) -> None:
        """Drop every session signed in with this key (it was revoked or its space deleted)."""
        await self._store.write(rows.end_key_sessions, key_id)

    async def count(self) -> int:
        return await self._store.read(rows.count_sessions)
