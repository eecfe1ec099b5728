"""Per-key token buckets and concurrency caps (per-space search limits; reused per authority for text search).

Hand-written because it is ~60 lines and must give the numbers of the RateLimit-* header fields
(docs/protocol.md#rate-limit-headers): limit = burst, remaining = whole tokens left, reset = whole seconds
until the bucket is full again, plus retry_after = whole seconds until one token is available. The front
door renders them (XRPC: `engram/xrpc/errors.py`); this module builds no headers.
Keys idle long enough to have refilled completely are forgotten, so memory stays bounded by active keys.
"""

from __future__ import annotations

import math
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass

from engram.errors import RateLimited


@dataclass(frozen=True)
class Decision:
    allowed: bool
    limit: int
    remaining: int
    reset_s: int
    retry_after_s: int

    def refusal(self, message: str, *, retry_after_s: int | None = None) -> RateLimited:
        """The domain error for a refused take, carrying this bucket's numbers."""
        return RateLimited(
            message,
            retry_after=self.retry_after_s if retry_after_s is None else retry_after_s,
            limit=self.limit,
            remaining=self.remaining,
            reset=self.reset_s,
        )


@dataclass
class _Bucket:
    tokens: float
    stamp: float


class TokenBuckets:
    """`rate` tokens per second up to `burst`, one bucket per key; rate <= 0 means unlimited."""

    def __init__(
        self,
        rate: float,
        burst: int,
        *,
        clock: Callable[[], float] = time.monotonic,
        sweep_every_s: float = 60.0,
    ):
        self.rate = rate
        self.burst = max(1, int(burst))
        self._clock = clock
        self._buckets: dict[str, _Bucket] = {}
        self._sweep_every_s = sweep_every_s
        self._last_sweep = clock()

    def take(self, key: str) -> Decision:
        if self.rate <= 0:
            return Decision(True, self.burst, self.burst, 0, 0)
        now = self._clock()
        self._sweep(now)
        bucket = self._buckets.get(key)
        if bucket is None:
            bucket = self._buckets[key] = _Bucket(float(self.burst), now)
        bucket.tokens = min(float(self.burst), bucket.tokens + (now - bucket.stamp) * self.rate)
        bucket.stamp = now
        allowed = bucket.tokens >= 1.0
        if allowed:
            bucket.tokens -= 1.0
        reset = math.ceil((self.burst - bucket.tokens) / self.rate)
        retry = 0 if allowed else max(1, math.ceil((1.0 - bucket.tokens) / self.rate))
        return Decision(allowed, self.burst, int(bucket.tokens), reset, retry)

    def __len__(self) -> int:
        return len(self._buckets)

    def _sweep(self, now: float) -> None:
        if now - self._last_sweep < self._sweep_every_s:
            return
        self._last_sweep = now
        full_after = self.burst / self.rate
        for key in [k for k, b in self._buckets.items() if now - b.stamp >= full_after]:
            del self._buckets[key]  # refilled completely: indistinguishable from a new key


class ConcurrencyCaps:
    """At most `limit` holders per key; no queue (excess is turned away). limit <= 0 means unlimited."""

    def __init__(self, limit: int):
        self.limit = limit
        self._held: dict[str, int] = {}

    def try_enter(self, key: str) -> bool:
        held = self._held.get(key, 0)
        if self.limit > 0 and held >= self.limit:
            return False
        self._held[key] = held + 1
        return True

    def leave(self, key: str) -> None:
        held = self._held.get(key, 0) - 1
        if held <= 0:
            self._held.pop(key, None)  # idle keys leave no trace
        else:
            self._held[key] = held

    def __len__(self) -> int:
        return len(self._held)


class SearchLimiter:
    """Token bucket plus concurrency cap per key; raises RateLimited carrying the bucket's numbers."""

    def __init__(
        self,
        rate_per_s: float,
        burst: int,
        max_concurrent: int,
        *,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.buckets = TokenBuckets(rate_per_s, burst, clock=clock)
        self.caps = ConcurrencyCaps(max_concurrent)

    @asynccontextmanager
    async def acquire(self, key: str) -> AsyncIterator[Decision]:
        decision = self.enter(key)
        try:
            yield decision
        finally:
            self.caps.leave(key)

    def enter(self, key: str) -> Decision:
        """`acquire` without the context manager (the search hot path): the caller must `leave(key)`."""
        decision = self.buckets.take(key)
        if not decision.allowed:
            raise decision.refusal("rate limit exceeded; retry later")
        if not self.caps.try_enter(key):
            raise decision.refusal("too many concurrent searches; retry shortly", retry_after_s=1)
        return decision

    def leave(self, key: str) -> None:
        self.caps.leave(key)
