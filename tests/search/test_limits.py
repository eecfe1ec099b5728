import pytest

from engram.search.limits import ConcurrencyCaps, SearchLimiter, TokenBuckets
from engram.xrpc.errors import RateLimitExceededError, http_status


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


async def test_bucket_allows_burst_then_429_with_headers():
    clock = Clock()
    limiter = SearchLimiter(rate_per_s=0.5, burst=3, max_concurrent=8, clock=clock)
    for remaining in (2, 1, 0):
        async with limiter.acquire("space") as decision:
            assert decision.remaining == remaining
            assert decision.headers()["RateLimit-Limit"] == "3"
    with pytest.raises(RateLimitExceededError) as info:
        async with limiter.acquire("space"):
            pass
    err = info.value
    assert http_status(err) == 429 and err.error == "RateLimitExceeded"
    assert err.headers == {
        "RateLimit-Limit": "3",
        "RateLimit-Remaining": "0",
        "RateLimit-Reset": "6",
        "Retry-After": "2",
    }
    async with limiter.acquire("other-space"):
        pass  # keys are independent
    clock.now += 2
    async with limiter.acquire("space") as decision:
        assert decision.remaining == 0 and decision.reset_s == 6


def test_reset_and_retry_after_are_whole_seconds_rounded_up():
    clock = Clock()
    buckets = TokenBuckets(rate=3, burst=2, clock=clock)
    buckets.take("k")
    buckets.take("k")
    denied = buckets.take("k")
    assert not denied.allowed and denied.retry_after_s == 1 and denied.reset_s == 1
    clock.now += 0.34
    assert buckets.take("k").allowed


async def test_concurrency_cap_turns_away_excess_and_releases():
    limiter = SearchLimiter(rate_per_s=0, burst=1, max_concurrent=2)
    async with limiter.acquire("s"), limiter.acquire("s"):
        with pytest.raises(RateLimitExceededError) as info:
            async with limiter.acquire("s"):
                pass
        assert info.value.headers["Retry-After"] == "1"
        async with limiter.acquire("t"):
            pass
    async with limiter.acquire("s"):
        pass
    assert len(limiter.caps) == 0


async def test_slot_released_when_the_body_raises():
    limiter = SearchLimiter(rate_per_s=0, burst=1, max_concurrent=1)
    with pytest.raises(KeyError):
        async with limiter.acquire("s"):
            raise KeyError("boom")
    async with limiter.acquire("s"):
        pass


def test_unlimited_rate_never_denies():
    buckets = TokenBuckets(rate=0, burst=5)
    assert all(buckets.take("k").allowed for _ in range(1000)) and len(buckets) == 0


def test_idle_keys_are_forgotten():
    clock = Clock()
    buckets = TokenBuckets(rate=1, burst=5, clock=clock, sweep_every_s=10)
    for i in range(100):
        buckets.take(f"k{i}")
    assert len(buckets) == 100
    clock.now += 11
    buckets.take("fresh")
    assert len(buckets) == 1


def test_caps_unlimited_when_zero():
    caps = ConcurrencyCaps(0)
    assert all(caps.try_enter("k") for _ in range(100))
