import asyncio

import pytest

from engram.errors import RateLimited
from engram.search.limits import ConcurrencyCaps, FairSlots, QueueFull, SearchLimiter, TokenBuckets
from engram.xrpc.errors import http_status, wire_headers


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


async def test_bucket_allows_burst_then_refuses_with_its_numbers():
    clock = Clock()
    limiter = SearchLimiter(rate_per_s=0.5, burst=3, max_concurrent=8, wait_s=0, queue=0, clock=clock)
    for remaining in (2, 1, 0):
        async with limiter.acquire("space") as decision:
            assert decision.remaining == remaining
            assert decision.limit == 3
    with pytest.raises(RateLimited) as info:
        async with limiter.acquire("space"):
            pass
    err = info.value
    assert http_status(err) == 429 and err.name == "RateLimitExceeded"
    assert (err.limit, err.remaining, err.reset, err.retry_after) == (3, 0, 6, 2)
    assert err.headers == {}  # the domain error carries numbers; the XRPC runtime renders them
    assert wire_headers(err) == {
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


def test_peek_tells_a_refusal_ahead_without_spending():
    clock = Clock()
    buckets = TokenBuckets(rate=1, burst=2, clock=clock)
    assert buckets.peek("k") is None  # a key never seen has its whole burst
    buckets.take("k")
    assert buckets.peek("k") is None and buckets.peek("k") is None  # looking spends nothing
    buckets.take("k")
    ahead = buckets.peek("k")
    assert ahead is not None and not ahead.allowed
    assert ahead == buckets.take("k")  # what the refused take then says
    clock.now += 1
    assert buckets.peek("k") is None and buckets.take("k").allowed
    assert TokenBuckets(rate=0, burst=1).peek("k") is None  # unlimited


async def test_concurrency_cap_turns_away_excess_and_releases():
    limiter = SearchLimiter(rate_per_s=0, burst=1, max_concurrent=2, wait_s=0, queue=0)
    async with limiter.acquire("s"), limiter.acquire("s"):
        with pytest.raises(RateLimited) as info:
            async with limiter.acquire("s"):
                pass
        assert info.value.retry_after == 1 and wire_headers(info.value)["Retry-After"] == "1"
        async with limiter.acquire("t"):
            pass
    async with limiter.acquire("s"):
        pass
    assert len(limiter.caps) == 0


async def test_slot_released_when_the_body_raises():
    limiter = SearchLimiter(rate_per_s=0, burst=1, max_concurrent=1, wait_s=0, queue=0)
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


# -- FairSlots: the embedding slots' queue (engram/service/text_query.py) --------------------------------


async def _queued(slots: FairSlots, caller: str, granted: list[str]) -> asyncio.Task:
    """A task that enters for `caller`, run up to its wait: `enter` is synchronous until it waits, and the
    task's first step runs before this coroutine resumes (the loop runs callbacks in order)."""

    async def wait() -> None:
        await slots.enter(caller)
        granted.append(caller)

    task = asyncio.ensure_future(wait())
    await asyncio.sleep(0)
    return task


async def test_freed_slots_go_round_robin_over_the_callers_waiting():
    slots, granted = FairSlots(1, 16, 60.0), []
    await slots.enter("holder")
    flood = [await _queued(slots, "flood", granted) for _ in range(3)]
    single = await _queued(slots, "agent", granted)
    for _ in range(4):
        slots.leave()
        await asyncio.sleep(0)
    await asyncio.gather(*flood, single)
    assert granted == ["flood", "agent", "flood", "flood"]  # not behind the whole flood
    assert slots.held == 1 and slots.waiting == 0


async def test_a_full_queue_makes_the_caller_with_most_waiting_give_way():
    slots, granted = FairSlots(1, 3, 60.0), []
    await slots.enter("holder")
    flood = [await _queued(slots, "flood", granted) for _ in range(3)]
    with pytest.raises(QueueFull):
        await slots.enter("flood")  # it is the heaviest itself: the newcomer is refused
    agent = await _queued(slots, "agent", granted)
    await asyncio.sleep(0)
    assert flood[2].done() and isinstance(flood[2].exception(), QueueFull)  # flood's newest gave way
    assert slots.waiting == 3
    for _ in range(3):
        slots.leave()
        await asyncio.sleep(0)
    await asyncio.gather(agent, *flood[:2])
    assert sorted(granted) == ["agent", "flood", "flood"]


async def test_a_waiter_that_gives_up_or_is_cancelled_leaves_no_trace():
    slots, granted = FairSlots(1, 8, 0.01), []
    await slots.enter("holder")
    with pytest.raises(QueueFull):
        await slots.enter("impatient")  # waited the longest it may
    cancelled = await _queued(slots, "gone", granted)
    cancelled.cancel()
    with pytest.raises(asyncio.CancelledError):
        await cancelled
    assert slots.waiting == 0
    slots.leave()
    assert slots.held == 0
    await slots.enter("next")  # a free slot is taken at once
    assert slots.held == 1 and granted == []


async def test_no_queue_turns_a_caller_away_at_once():
    slots = FairSlots(1, 0, 60.0)
    await slots.enter("holder")
    with pytest.raises(QueueFull):
        await slots.enter("other")


async def test_a_search_past_the_cap_waits_for_a_slot_in_arrival_order():
    limiter = SearchLimiter(rate_per_s=0, burst=1, max_concurrent=1, wait_s=30, queue=2)
    order: list[str] = []
    first = await limiter.enter("s")

    async def waiter(name: str) -> None:
        async with limiter.acquire("s"):
            order.append(name)

    a = asyncio.create_task(waiter("a"))
    await asyncio.sleep(0)
    b = asyncio.create_task(waiter("b"))
    await asyncio.sleep(0)
    assert not a.done() and not b.done() and first.allowed
    with pytest.raises(RateLimited):  # the queue (2) is full: refused at once, not queued
        await limiter.enter("s")
    assert not limiter.caps.try_enter("s")  # no barging ahead of the waiters either
    limiter.leave("s")
    await asyncio.gather(a, b)
    assert order == ["a", "b"] and len(limiter.caps) == 0


async def test_a_waiter_whose_wait_runs_out_is_refused_and_leaves_no_trace():
    limiter = SearchLimiter(rate_per_s=0, burst=1, max_concurrent=1, wait_s=0.01, queue=4)
    await limiter.enter("s")
    with pytest.raises(RateLimited) as info:
        await limiter.enter("s")
    assert "concurrent" in str(info.value)
    limiter.leave("s")
    assert len(limiter.caps) == 0 and not limiter.caps._waiting
    async with limiter.acquire("s"):
        pass


async def test_a_cancelled_waiter_hands_on_nothing_it_did_not_get():
    limiter = SearchLimiter(rate_per_s=0, burst=1, max_concurrent=1, wait_s=30, queue=4)
    await limiter.enter("s")
    waiting = asyncio.create_task(limiter.enter("s"))
    await asyncio.sleep(0)
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    limiter.leave("s")
    assert len(limiter.caps) == 0 and not limiter.caps._waiting
