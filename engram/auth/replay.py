"""Replay guards: the one primitive behind "this id verifies once" (service-auth ``jti``, admin nonces,
client attestation ``jti``). The verifiers only need ``claim``; where the claims live is the caller's
choice. The server passes the store's guard (engram/store/replays.py) so a claim holds across every
serving process; the in-memory guard is for a verifier used on its own (tests, one-off tools)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from engram.auth.ttl_cache import TtlCache


class ReplayGuard(Protocol):
    async def claim(self, scope: str, issuer: str, identifier: str, expires_at: float) -> bool:
        """True the first time (scope, issuer, identifier) is claimed before ``expires_at`` (Unix s)."""
        ...


class MemoryReplayGuard:
    """One process's claims, bounded (the oldest are forgotten past ``max_entries``)."""

    def __init__(self, max_entries: int, now: Callable[[], float]):
        self._seen: TtlCache[bool] = TtlCache(max_entries, now)
        self._now = now

    async def claim(self, scope: str, issuer: str, identifier: str, expires_at: float) -> bool:
        if expires_at <= self._now():  # past its window: the first claim may already be forgotten
            return False
        return self._seen.add_if_absent((scope, issuer, identifier), True, expires_at)
