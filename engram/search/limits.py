"""Per-key token buckets and concurrency caps (per-space search limits; reused per authority for text search).

Hand-written because it is ~60 lines and must give the numbers of the RateLimit-* header fields
(docs/protocol.md#rate-limit-headers): limit = burst, remaining = whole tokens left, reset = whole seconds
until the bucket is full again, plus retry_after = whole seconds until one token is available. The front
door renders them (XRPC: `engram/xrpc/errors.py`); this module builds no headers.
Keys idle long enough to have refilled completely are forgotten, so memory stays bounded by active keys.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections import deque
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass

from engram.config_sections import SearchConfig
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
        return self._decision(allowed, bucket.tokens)

    def peek(self, key: str) -> Decision | None:
        """What `take` would decide now when it would refuse, spending nothing; None when it would allow
        (a front door refusing a flood early, engram/mcp/refusal.py)."""
        bucket = self._buckets.get(key)
        if self.rate <= 0 or bucket is None:
            return None
        tokens = min(float(self.burst), bucket.tokens + (self._clock() - bucket.stamp) * self.rate)
        return None if tokens >= 1.0 else self._decision(False, tokens)

    def _decision(self, allowed: bool, tokens: float) -> Decision:
        reset = math.ceil((self.burst - tokens) / self.rate)
        retry = 0 if allowed else max(1, math.ceil((1.0 - tokens) / self.rate))
        return Decision(allowed, self.burst, int(tokens), reset, retry)

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
    """At most `limit` holders per key (limit <= 0 means unlimited). `try_enter` turns the excess away at
    once; `enter` lets it wait, in arrival order, for a holder of the same key to leave: at most `queue`
    waiters per key and each for at most `wait_s`, so a short burst (an agent's parallel recalls) is served
    instead of refused while a flood is still bounded (docs/internals.md#search)."""

    def __init__(self, limit: int, *, queue: int = 0, wait_s: float = 0.0):
        self.limit = limit
        self.queue = queue
        self.wait_s = wait_s
        self._held: dict[str, int] = {}
        self._waiting: dict[str, deque[asyncio.Future[None]]] = {}

    def try_enter(self, key: str) -> bool:
        held = self._held.get(key, 0)
        if self.limit > 0 and (held >= self.limit or self._waiting.get(key)):
            return False
        self._held[key] = held + 1
        return True

    async def enter(self, key: str) -> bool:
        """Hold a slot, waiting for one if need be; False when the queue is full or the wait ran out."""
        if self.try_enter(key):
            return True
        waiters = self._waiting.setdefault(key, deque())
        if len(waiters) >= self.queue or self.wait_s <= 0:
            if not waiters:
                del self._waiting[key]
            return False
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        waiters.append(future)
        try:
            async with asyncio.timeout(self.wait_s):
                await future  # `leave` hands its slot over: `_held` already counts this waiter
            return True
        except BaseException as exc:
            if future.done() and not future.cancelled():
                self.leave(key)  # the slot came just as the wait ended: hand it on
            else:
                if future in waiters:  # `leave` drops a cancelled waiter it meets first
                    waiters.remove(future)
                if not waiters and self._waiting.get(key) is waiters:
                    del self._waiting[key]
            if isinstance(exc, TimeoutError):
                return False
            raise

    def leave(self, key: str) -> None:
        waiters = self._waiting.get(key)
        while waiters:
            future = waiters.popleft()
            if not future.done():
                if not waiters:
                    del self._waiting[key]
                future.set_result(None)  # the slot passes to the longest waiter
                return
        self._waiting.pop(key, None)
        held = self._held.get(key, 0) - 1
        if held <= 0:
            self._held.pop(key, None)  # idle keys leave no trace
        else:
            self._held[key] = held

    def __len__(self) -> int:
        return len(self._held)


class QueueFull(Exception):
    """FairSlots turned a caller away: the queue was full (or it was the one to give way), or it waited
    the longest it may."""


class FairSlots:
    """`limit` holders at once over every caller; beyond it a caller waits its turn, at most `queue` of
    them and each for `wait_s`. Freed slots go round-robin over the callers waiting, so a caller with
    many requests waiting cannot hold back one with a single request. When the queue is full, the
    caller with the most waiting gives way (its newest waiter is turned away) unless that would be the
    newcomer's own or it has no more waiting than the newcomer. Callers are only labels: nothing is kept
    for one with nothing held or waiting."""

    def __init__(self, limit: int, queue: int, wait_s: float):
        self.limit = limit
        self.queue = queue
        self.wait_s = wait_s
        self.held = 0
        self._waiting: dict[str, deque[asyncio.Future[None]]] = {}  # insertion order: whose turn next
        self.waiting = 0

    async def enter(self, caller: str) -> None:
        """Hold a slot (the caller must `leave()`); QueueFull when turned away."""
        if self.held < self.limit and not self.waiting:
            self.held += 1
            return
        if self.waiting >= self.queue:
            self._make_room(caller)
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiting.setdefault(caller, deque()).append(future)
        self.waiting += 1
        try:
            async with asyncio.timeout(self.wait_s):
                await future
        except BaseException as exc:
            if future.done() and not future.cancelled() and future.exception() is None:
                self.leave()  # the slot came just as the wait ended: hand it on
            else:
                self._forget(caller, future)
            if isinstance(exc, TimeoutError):
                raise QueueFull("waited the longest a caller may") from None
            raise

    def leave(self) -> None:
        while self._waiting:
            caller = next(iter(self._waiting))
            waiters = self._waiting.pop(caller)
            future = waiters.popleft()
            self.waiting -= 1
            if waiters:
                self._waiting[caller] = waiters  # to the back of the round
            if not future.done():
                future.set_result(None)  # the slot passes to it: `held` stays
                return
        self.held -= 1

    def _make_room(self, caller: str) -> None:
        if not self._waiting:
            raise QueueFull("no caller may wait")  # queue = 0
        heaviest = max(self._waiting, key=lambda c: len(self._waiting[c]))
        mine = len(self._waiting.get(caller, ()))
        if heaviest == caller or len(self._waiting[heaviest]) <= mine + 1:
            raise QueueFull("the queue is full")
        victim = self._waiting[heaviest].pop()
        self.waiting -= 1
        if not self._waiting[heaviest]:
            del self._waiting[heaviest]
        victim.set_exception(QueueFull("gave way to a caller with fewer requests waiting"))

    def _forget(self, caller: str, future: asyncio.Future[None]) -> None:
        waiters = self._waiting.get(caller)
        if waiters is not None and future in waiters:
            waiters.remove(future)
            self.waiting -= 1
            if not waiters:
                del self._waiting[caller]


class SearchLimiter:
    """Token bucket plus concurrency cap per key; raises RateLimited carrying the bucket's numbers. A search
    past the cap waits up to `wait_s` for a slot (at most `queue` waiting per key) before the refusal."""

    def __init__(
        self,
        rate_per_s: float,
        burst: int,
        max_concurrent: int,
        *,
        wait_s: float,
        queue: int,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.buckets = TokenBuckets(rate_per_s, burst, clock=clock)
        self.caps = ConcurrencyCaps(max_concurrent, queue=queue, wait_s=wait_s)

    @classmethod
    def configured(cls, config: SearchConfig) -> SearchLimiter:
        """As configured: ENGRAM_SEARCH_RATE, _BURST, _CONCURRENCY and _WAIT_MS."""
        return cls(
            config.search_rate,
            config.search_burst,
            config.search_concurrency,
            wait_s=config.search_wait_ms / 1000,
            queue=4 * config.search_concurrency,  # a burst of agents' recalls, not a flood, may wait
        )

    @asynccontextmanager
    async def acquire(self, key: str, spent: Decision | None = None) -> AsyncIterator[Decision]:
        """Spend a token (unless `spent` says it was, by `spend`) and hold a slot while inside."""
        decision = await self.enter(key, spent)
        try:
            yield decision
        finally:
            self.caps.leave(key)

    def spend(self, key: str) -> Decision:
        """The rate half alone: take the key's token or raise RateLimited. For a caller that checks the
        rate before work of its own and holds a slot only for the search (`acquire(key, spent=...)`)."""
        decision = self.buckets.take(key)
        if not decision.allowed:
            raise decision.refusal("rate limit exceeded; retry later")
        return decision

    async def enter(self, key: str, spent: Decision | None = None) -> Decision:
        """`acquire` without the context manager (the search hot path): the caller must `leave(key)`."""
        decision = self.spend(key) if spent is None else spent
        if not await self.caps.enter(key):
            raise decision.refusal("too many concurrent searches; retry shortly", retry_after_s=1)
        return decision

    def leave(self, key: str) -> None:
        self.caps.leave(key)
