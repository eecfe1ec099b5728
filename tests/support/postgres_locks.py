"""Waiting for PostgreSQL advisory-lock waiters: how the lock tests see that a write is blocked on another
store's transaction (docs/scale-out.md#durability-and-isolation) without timing anything."""

from __future__ import annotations

import asyncio

import psycopg


def lock_waiters(url: str) -> int:
    """Backends of this database waiting for an advisory lock."""
    with psycopg.connect(url, autocommit=True) as conn:
        return conn.execute(
            "SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid"
            " WHERE l.locktype = 'advisory' AND NOT l.granted AND a.datname = current_database()"
        ).fetchone()[0]


async def wait_for_lock_waiters(url: str, count: int) -> None:
    """Until at least `count` backends wait for an advisory lock (off the loop: the loop guard forbids
    statements on it); fails after ~30 s."""
    for _ in range(3000):
        if await asyncio.to_thread(lock_waiters, url) >= count:
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"no {count} lock waiter(s) appeared")
