"""MCP sessions in the store (engram/store/mcp_sessions.py, docs/mcp.md#sessions): known to every process,
capped per key and overall with the flooding key's oldest going first, ended by idleness or DELETE."""

import hashlib

from engram.mcp.sessions import McpSessions
from engram.store import mcp_sessions as rows

NOW = 1_790_000_000.0


class Clock:
    def __init__(self, now: float):
        self.now = now

    def __call__(self) -> float:
        return self.now


async def test_a_session_opened_through_one_process_is_live_in_another_until_it_ends(two_stores):
    first, second = two_stores
    clock = Clock(NOW)
    a = McpSessions(first, idle_s=900, per_key=8, overall=100, clock=clock)
    b = McpSessions(second, idle_s=900, per_key=8, overall=100, clock=clock)
    opened = await a.open("key:1")
    assert await b.resume(opened, "key:1")
    assert not await b.resume(opened, "key:2")  # another credential: as if it did not exist
    assert not await b.resume("made-up", "key:1")
    assert await b.end(opened)
    assert not await a.resume(opened, "key:1")
    assert not await a.end(opened)


async def test_a_sessions_use_is_written_at_most_once_a_touch_interval(two_stores):
    """Every request resumes its session: a read, and a write only when the last use written is older
    than the touch interval (a tenth of the idle expiry, at most a minute), so a busy session is not a
    store write per request."""
    first, second = two_stores
    clock = Clock(NOW)
    a = McpSessions(first, idle_s=600, per_key=8, overall=100, clock=clock)
    b = McpSessions(second, idle_s=600, per_key=8, overall=100, clock=clock)
    opened = await a.open("key:1")
    digest = hashlib.sha256(opened.encode()).hexdigest()

    async def used_ms() -> int:
        return (await first.read(rows.live_session, digest, int(clock.now * 1000), 10**12))[1]

    for _ in range(5):  # five requests within the interval: nothing written
        clock.now += 10
        assert await b.resume(opened, "key:1")
    assert await used_ms() == int(NOW * 1000)
    clock.now += 15  # 65 s after the last write: this request brings it up to date
    assert await b.resume(opened, "key:1")
    assert await used_ms() == int(clock.now * 1000)


async def test_an_idle_session_ends_and_use_keeps_it_alive(two_stores):
    first, second = two_stores
    clock = Clock(NOW)
    a = McpSessions(first, idle_s=600, per_key=8, overall=100, clock=clock)
    b = McpSessions(second, idle_s=600, per_key=8, overall=100, clock=clock)
    kept, dropped = await a.open("key:1"), await a.open("key:1")
    for _ in range(3):  # used every 5 minutes: alive after 15
        clock.now += 300
        assert await b.resume(kept, "key:1")
    assert not await b.resume(dropped, "key:1")  # unused for 15 minutes > 10
    await a.open("key:2")  # opening prunes the idle rows, so the table stays bounded
    assert await first.read(rows.count_sessions) == 2


async def test_a_key_at_its_cap_loses_its_own_oldest_and_nobody_else_is_touched(store):
    clock = Clock(NOW)
    sessions = McpSessions(store, idle_s=900, per_key=3, overall=100, clock=clock)
    other = await sessions.open("key:quiet")
    flood = []
    for _ in range(10):
        clock.now += 1
        flood.append(await sessions.open("key:flood"))
    live = [await sessions.resume(s, "key:flood") for s in flood]
    assert live == [False] * 7 + [True] * 3  # the newest three
    assert await sessions.resume(other, "key:quiet")
    assert await store.read(rows.count_sessions, "key:flood") == 3


async def test_at_the_overall_cap_the_key_holding_most_gives_way(store):
    clock = Clock(NOW)
    sessions = McpSessions(store, idle_s=900, per_key=5, overall=6, clock=clock)
    heavy = []
    for _ in range(5):
        clock.now += 1
        heavy.append(await sessions.open("key:heavy"))
    light = await sessions.open("key:light")
    clock.now += 1
    newcomer = await sessions.open("key:new")  # total would be 7 > 6: key:heavy's oldest goes
    assert [await sessions.resume(s, "key:heavy") for s in heavy] == [False, True, True, True, True]
    assert await sessions.resume(light, "key:light") and await sessions.resume(newcomer, "key:new")
    assert await store.read(rows.count_sessions) == 6
