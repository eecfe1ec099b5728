"""Console sessions: held in the server's memory, found by the sha256 of the cookie's random value.

A restart signs everyone out, which is acceptable for an operator console and keeps session secrets off
disk. A session records who signed in (the operator, or a reader holding one API key) and its CSRF token;
it never records what the key allows: that is re-read from the store on every request, so revoking a key
ends its sessions at once.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Callable
from dataclasses import dataclass

SESSION_TTL_S = 8 * 3600  # a working day; after it the operator asks for a new link
MAX_SESSIONS = 10_000  # beyond this the oldest sessions are dropped (memory stays bounded)

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


class SessionStore:
    def __init__(self, clock: Callable[[], float], ttl_s: float = SESSION_TTL_S):
        self.clock = clock
        self.ttl_s = ttl_s
        self._sessions: dict[str, Session] = {}  # insertion order = creation order

    def start(self, role: str, key_id: int | None = None) -> tuple[str, Session]:
        """(cookie value, session)."""
        now = self.clock()
        self._sweep(now)
        cookie = secrets.token_urlsafe(32)
        session = Session(role, key_id, secrets.token_urlsafe(32), now + self.ttl_s)
        self._sessions[_digest(cookie)] = session
        return cookie, session

    def get(self, cookie: str | None) -> Session | None:
        if not cookie:
            return None
        digest = _digest(cookie)
        session = self._sessions.get(digest)
        if session is None:
            return None
        if self.clock() >= session.expires_at:
            del self._sessions[digest]
            return None
        return session

    def end(self, cookie: str | None) -> None:
        if cookie:
            self._sessions.pop(_digest(cookie), None)

    def end_key(self, key_id: int) -> None:
        """Drop every session signed in with this key (it was revoked or its space deleted)."""
        for digest in [d for d, s in self._sessions.items() if s.key_id == key_id]:
            del self._sessions[digest]

    def __len__(self) -> int:
        return len(self._sessions)

    def _sweep(self, now: float) -> None:
        for digest in [d for d, s in self._sessions.items() if s.expires_at <= now]:
            del self._sessions[digest]
        while len(self._sessions) >= MAX_SESSIONS:
            del self._sessions[next(iter(self._sessions))]
