"""One-time operator sign-in links, shared between `engram console login` and the running server.

The CLI and the server are separate processes (and the server may be several), so a link lives in the
store (engram/store/console_links.py) as the sha256 of its token and its expiry; the raw token exists only
in the printed link. Redeeming deletes the row, which succeeds for exactly one caller, so a link works
once even when two requests race for it in different processes.
"""

from __future__ import annotations

import hashlib
import secrets
from typing import Any

from ..store import console_links as rows

LINK_TTL_S = 600  # a link works once and for 10 minutes (README.md, the console)


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


async def create_link_token(store: Any, now: float, ttl_s: float = LINK_TTL_S) -> str:
    """A fresh token valid until `now + ttl_s`; expired links are pruned on the way."""
    token = secrets.token_urlsafe(32)
    await store.write(rows.add_link, _digest(token), int((now + ttl_s) * 1000), int(now * 1000))
    return token


async def redeem_link_token(store: Any, token: str, now: float) -> bool:
    """True once for a live token; False for an unknown, used or expired one."""
    if not isinstance(token, str) or not 20 <= len(token) <= 100:
        return False  # not a token we could have made: no store write for it
    return await store.write(rows.take_link, _digest(token), int(now * 1000))
