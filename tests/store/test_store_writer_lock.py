"""Writers of one SQLite file in several processes take turns on the writer lock
(docs/internals.md#writes-from-several-processes): a writer that finds another's transaction open waits on
the lock, however long that transaction takes, instead of timing out in SQLite's busy handler.

Two stores on one file stand for two processes: `flock` locks belong to an open file, so two stores in one
process exclude each other as two processes do."""

import asyncio
import os
import threading
from pathlib import Path

import pytest
from support.sync import until

from engram.store import Store, database_path
from engram.store.writer_lock import WriterLock, writer_lock_path


@pytest.fixture
def backend() -> str:
    return "sqlite"


def _create(conn):
    conn.execute("CREATE TABLE IF NOT EXISTS rows (n INTEGER PRIMARY KEY)")


def _insert(conn, n):
    conn.execute("INSERT INTO rows (n) VALUES (?)", (n,))


def _rows(conn):
    return [n for (n,) in conn.execute("SELECT n FROM rows ORDER BY n")]


def _blocked_flock_waiters(path: Path) -> int:
    """Lock requests waiting on `path`'s inode, from the kernel's own list (`->` marks a blocked one)."""
    inode = os.stat(path).st_ino
    return sum(
        1 for line in Path("/proc/locks").read_text().splitlines() if "->" in line and f":{inode} " in line
    )


async def test_a_second_writer_waits_for_the_first_instead_of_failing_busy(tmp_path):
    path = database_path(tmp_path)
    # A busy timeout far below how long the first transaction stays open: without the writer lock the
    # second store's BEGIN IMMEDIATE would give up with "database is locked".
    first = await Store.open(path)
    second = await Store.open(path, busy_timeout_ms=50)
    gate, held = threading.Event(), threading.Event()
    try:
        await first.write(_create)

        def hold(conn):
            _insert(conn, 1)
            held.set()
            assert gate.wait(30)

        holding = asyncio.ensure_future(first.write(hold))
        await until(held.is_set, "the first store holds its transaction open")
        waiting = asyncio.ensure_future(second.write(_insert, 2))
        await until(
            lambda: _blocked_flock_waiters(writer_lock_path(path)) == 1, "the second writer waits on the lock"
        )
        await asyncio.sleep(0.2)  # well past the second store's busy timeout
        assert not waiting.done()
        gate.set()
        await holding
        await waiting
        assert await second.read(_rows) == [1, 2]
    finally:
        gate.set()
        await first.close()
        await second.close()


async def test_a_failed_write_lets_the_other_process_write(tmp_path):
    path = database_path(tmp_path)
    first = await Store.open(path)
    second = await Store.open(path, busy_timeout_ms=50)
    try:
        await first.write(_create)

        def fail(conn):
            _insert(conn, 1)
            raise LookupError("refused")

        with pytest.raises(LookupError):
            await first.write(fail)
        await second.write(_insert, 2)  # the rollback released the lock
        assert await first.read(_rows) == [2]
    finally:
        await first.close()
        await second.close()


def test_closing_the_holder_releases_the_lock(tmp_path):
    path = tmp_path / "lock"
    holder, other = WriterLock(path), WriterLock(path)
    holder.acquire()
    acquired = threading.Event()
    thread = threading.Thread(target=lambda: (other.acquire(), acquired.set()))
    thread.start()
    assert not acquired.wait(0.1)
    holder.close()  # as a process's exit does (kill -9 included): the kernel drops the lock with the file
    thread.join(30)
    assert acquired.is_set()
    other.close()
