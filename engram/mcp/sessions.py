"""MCP sessions (`Mcp-Session-Id`) kept in the store, so every serving process and cluster node knows every
session (docs/mcp.md#sessions).

The SDK's own session manager keeps a session in the memory of the process that opened it, with a task
per session; real clients send their next request on a new connection, which `SO_REUSEPORT` (or a load
balancer) hands to any process. So engram runs the SDK's transport statelessly (a fresh one per request,
born initialized) and owns the session itself: `initialize` makes a row here, and a request naming a
session is served only if the row is live and was opened by the same principal. Nothing the tools do
depends on per-session state (no subscriptions, no requests from server to client), which is what makes a
per-request transport enough.
"""

from __future__ import annotations

import hashlib
import secrets
import time
from collections.abc import Callable

from ..store import mcp_sessions as rows
from ..store.database import Store

TOUCH_S = 60  # a session's last use is written at most this often (or a tenth of the idle expiry)


def _digest(session_id: str) -> str:
    return hashlib.sha256(session_id.encode("utf-8")).hexdigest()


class McpSessions:
    def __init__(
        self,
        store: Store,
        *,
        idle_s: float,
        per_key: int,
        overall: int,
        clock: Callable[[], float] = time.time,
    ):
        """`idle_s`, `per_key`, `overall`: ENGRAM_MCP_SESSION_IDLE_S, _SESSIONS_PER_KEY, _SESSIONS. A
        principal at `per_key` loses its own oldest session when it opens another; past `overall`, the
        principal holding the most loses its oldest. Nobody is ever refused a new session."""
        self._store = store
        self.idle_ms = int(idle_s * 1000)
        self.touch_ms = int(min(TOUCH_S, idle_s / 10) * 1000)
        self.per_key = per_key
        self.overall = overall
        self.clock = clock

    def _now_ms(self) -> int:
        return int(self.clock() * 1000)

    async def open(self, principal: str) -> str:
        """A new session id for `principal` (only its digest is stored)."""
        session_id = secrets.token_urlsafe(32)
        await self._store.write(
            rows.open_session,
            _digest(session_id),
            principal,
            self._now_ms(),
            self.idle_ms,
            self.per_key,
            self.overall,
        )
        return session_id

    async def resume(self, session_id: str, principal: str) -> bool:
        """True when the session is live and `principal` opened it; its last use is then brought up to date
        (a write at most every `touch_ms` per session)."""
        digest, now = _digest(session_id), self._now_ms()
        row = await self._store.point_read(rows.live_session, digest, now, self.idle_ms)
        if row is None or row[0] != principal:
            return False
        if now - row[1] >= self.touch_ms:
            await self._store.write(rows.touch_session, digest, now)
        return True

    async def end(self, session_id: str) -> bool:
        return await self._store.write(rows.end_session, _digest(session_id))
