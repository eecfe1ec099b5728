"""Group commit (docs/internals.md#group-commit): writes queued while the writer is busy share one
transaction and one COMMIT, each in its own savepoint, so a failing write fails alone and changes nothing.

Every test holds the writer on a gate first, queues the writes behind it, then opens the gate: they are
then queued together, whatever the machine's speed, and run as one group."""

import asyncio
import contextlib
import threading

import psycopg
import pytest

from engram.store import MemoryWrite
from engram.store.database import MAX_GROUP, Deferred
from engram.store.memory_reads import list_memories
from engram.store.memory_writes import put_memories
from engram.store.spaces import require_space


def _create_rows(conn):
    conn.execute("CREATE TABLE IF NOT EXISTS rows (n INTEGER PRIMARY KEY)")


def _insert(conn, n):
    conn.execute("INSERT INTO rows (n) VALUES (?)", (n,))
    return _transaction_id(conn)


def _insert_then_fail(conn, n):
    conn.execute("INSERT INTO rows (n) VALUES (?)", (n,))
    raise LookupError(f"write {n} fails")


def _rows(conn):
    return [n for (n,) in conn.execute("SELECT n FROM rows ORDER BY n")]


def _transaction_id(conn):
    """Which transaction the write ran in: PostgreSQL's xid; on SQLite every group shares the writer's
    one connection, so the change counter (bumped once per COMMIT) tells commits apart instead."""
    if getattr(conn, "dialect", None) is not None:
        return conn.execute("SELECT txid_current()").fetchone()[0]
    return None


async def _queued_behind_a_gate(store, writes):
    """Start `writes` (coroutine factories) while the writer is held, then let it go; their outcomes."""
    gate, held = threading.Event(), threading.Event()

    def hold(conn):
        held.set()
        assert gate.wait(30)

    blocker = asyncio.ensure_future(store.write(hold))
    while not held.is_set():
        await asyncio.sleep(0.01)
    pending = [asyncio.ensure_future(make()) for make in writes]
    await asyncio.sleep(0)  # every write is queued before the writer is let go
    await asyncio.sleep(0)
    before = store.changes.value() if store.changes is not None else None
    gate.set()
    await blocker
    outcomes = await asyncio.gather(*pending, return_exceptions=True)
    # COMMITs after the gate's own write (the change counter counts every commit, the gate's too)
    commits = store.changes.value() - before - 1 if store.changes is not None else None
    return outcomes, commits


async def test_queued_writes_share_one_commit_and_a_failing_one_changes_nothing(store):
    await store.write(_create_rows)
    writes = [(lambda n=n: store.write(_insert_then_fail if n == 5 else _insert, n)) for n in range(10)]
    outcomes, commits = await _queued_behind_a_gate(store, writes)
    failed = [o for o in outcomes if isinstance(o, BaseException)]
    assert len(failed) == 1 and isinstance(failed[0], LookupError) and "write 5" in str(failed[0])
    # the failing write's row is gone, every other write is committed and acknowledged
    assert await store.read(_rows) == [n for n in range(10) if n != 5]
    if store.backend == "sqlite":
        assert commits == 1  # one COMMIT (one fsync) for the nine writes
    else:
        assert len({o for o in outcomes if not isinstance(o, BaseException)}) == 1  # one transaction


async def test_a_group_is_bounded(store):
    await store.write(_create_rows)
    count = MAX_GROUP + 6
    outcomes, commits = await _queued_behind_a_gate(
        store, [(lambda n=n: store.write(_insert, n)) for n in range(count)]
    )
    assert await store.read(_rows) == list(range(count))
    if store.backend == "sqlite":
        assert commits == 2
    else:
        assert len(set(outcomes)) == 2


async def test_a_swallowed_error_fails_only_its_own_write(pg_database_url):
    """On PostgreSQL an error aborts the transaction even when the write catches it: inside a group that
    write's savepoint is rolled back and it is refused, as alone (test_store_postgres.py)."""
    from engram.store.postgres.store import PostgresStore

    store = await PostgresStore.open(pg_database_url)
    try:
        await store.write(_create_rows)

        def insert_then_swallow(conn, n):
            conn.execute("INSERT INTO rows (n) VALUES (?)", (n,))
            with contextlib.suppress(psycopg.errors.UndefinedTable):
                conn.execute("SELECT * FROM no_such_table").fetchall()

        writes = [(lambda n=n: store.write(insert_then_swallow if n == 2 else _insert, n)) for n in range(5)]
        outcomes, _ = await _queued_behind_a_gate(store, writes)
        assert isinstance(outcomes[2], RuntimeError) and "rolled back" in str(outcomes[2])
        assert await store.read(_rows) == [0, 1, 3, 4]
    finally:
        await store.close()


async def test_a_failing_statement_nobody_waited_for_fails_only_its_own_write(pg_database_url):
    """The writer sends a transaction's statements in pipeline mode (engram/store/postgres/connection.py):
    a statement's error reaches whichever write next waits for an answer, or COMMIT, which the server then
    skips. The group is rolled back and its writes run again one by one, so only the write that sent the
    statement fails, with that statement's own error, and the others commit."""
    from engram.store.postgres.store import PostgresStore

    store = await PostgresStore.open(pg_database_url)
    try:
        await store.write(_create_rows)

        def insert_then_a_duplicate(conn, n):
            conn.execute("INSERT INTO rows (n) VALUES (?)", (n,))
            conn.execute("INSERT INTO rows (n) VALUES (?)", (0,))  # write 0's row: fails, unread

        failing = 2
        for count in (5, 3):  # the error found by a later write's read, then by COMMIT (the last write)
            await store.write(lambda conn: conn.execute("DELETE FROM rows"))
            writes = [
                (lambda n=n: store.write(insert_then_a_duplicate if n == failing else _insert, n))
                for n in range(count)
            ]
            outcomes, _ = await _queued_behind_a_gate(store, writes)
            assert isinstance(outcomes[failing], psycopg.errors.UniqueViolation)
            assert [o for n, o in enumerate(outcomes) if n != failing and isinstance(o, BaseException)] == []
            assert await store.read(_rows) == [n for n in range(count) if n != failing]
    finally:
        await store.close()


async def test_a_group_whose_commit_hook_fails_runs_its_writes_one_by_one(store):
    """The commit hook (it signs hosted spaces' repo commits) runs once per group; when it fails for the
    group, each write runs again alone, so only a write the hook refuses by itself fails."""
    await store.write(_create_rows)

    def refuse_thirteen(conn):
        if 13 in _rows(conn):
            raise ValueError("the hook refuses row 13")

    store.before_commit = refuse_thirteen
    outcomes, _ = await _queued_behind_a_gate(
        store, [(lambda n=n: store.write(_insert, n)) for n in (11, 12, 13, 14)]
    )
    assert isinstance(outcomes[2], ValueError)
    assert not any(isinstance(o, BaseException) for i, o in enumerate(outcomes) if i != 2)
    assert await store.read(_rows) == [11, 12, 14]


async def test_deferred_results_are_read_after_the_group_s_writes_and_a_failing_one_reruns_them(store):
    """A write may return `Deferred(finish)` (engram/store/database.py): `finish` runs after every write of
    its group and the commit hook, before COMMIT, reading the answer of a statement its write sent, and
    gives the write's result. When one raises, the group runs again one by one and only that write fails,
    with nothing of it committed."""
    await store.write(_create_rows)

    def insert_and_read_back(conn, n):
        conn.execute("INSERT INTO rows (n) VALUES (?)", (n,))
        cursor = conn.execute("SELECT count(*) FROM rows WHERE n <= ?", (n,))

        def finish():
            (seen,) = cursor.fetchone()
            if n == 23:
                raise ValueError("finishing 23 fails")
            return n, seen

        return Deferred(finish)

    outcomes, _ = await _queued_behind_a_gate(
        store, [(lambda n=n: store.write(insert_and_read_back, n)) for n in (21, 22, 23, 24)]
    )
    assert outcomes[:2] == [(21, 1), (22, 2)] and outcomes[3] == (24, 3)  # each its own statement's answer
    assert isinstance(outcomes[2], ValueError)
    assert await store.read(_rows) == [21, 22, 24]
    assert await store.write(insert_and_read_back, 25) == (25, 4)  # alone too


async def test_grouped_memory_writes_keep_generations_and_records(store, space, make_embedding):
    """Memory batches of one space in one group: each bumps the generation once, in order, as alone."""
    author = "did:plc:alice"
    writes = [
        (
            lambda i=i: store.write_to(
                space,
                put_memories,
                space,
                [MemoryWrite(author, f"memory {i}", embedding=make_embedding(i), idempotency_key=f"k{i}")],
            )
        )
        for i in range(8)
    ]
    before = (await store.read(require_space, space)).generation
    outcomes, _ = await _queued_behind_a_gate(store, writes)
    assert all(o[0].status == "created" for o in outcomes)
    assert (await store.read(require_space, space)).generation == before + 8
    page, _ = await store.read(list_memories, space, limit=50)
    assert sorted(m.text for m in page) == [f"memory {i}" for i in range(8)]
    assert len({o[0].row_id for o in outcomes}) == 8


@pytest.mark.parametrize("backend", ["sqlite"])
async def test_cancelled_writes_in_a_group_are_skipped(store):
    await store.write(_create_rows)
    gate, held = threading.Event(), threading.Event()

    def hold(conn):
        held.set()
        assert gate.wait(30)

    blocker = asyncio.ensure_future(store.write(hold))
    while not held.is_set():
        await asyncio.sleep(0.01)
    pending = [asyncio.ensure_future(store.write(_insert, n)) for n in range(4)]
    await asyncio.sleep(0)
    pending[1].cancel()
    await asyncio.sleep(0)
    gate.set()
    await blocker
    outcomes = await asyncio.gather(*pending, return_exceptions=True)
    assert isinstance(outcomes[1], asyncio.CancelledError)
    assert await store.read(_rows) == [0, 2, 3]


async def test_rowcount_is_the_statement_s_own_inside_a_group(store):
    """A write reading `rowcount` gets its statement's count, on PostgreSQL too, where the statement went
    out in pipeline mode and its answer had not been read (engram/store/postgres/connection.py)."""
    await store.write(_create_rows)
    await store.write(lambda conn: [_insert(conn, n) for n in range(10)])

    def delete_below(conn, n):
        return conn.execute("DELETE FROM rows WHERE n < ?", (n,)).rowcount

    outcomes, _ = await _queued_behind_a_gate(
        store, [(lambda n=n: store.write(delete_below, n)) for n in (3, 5, 8)]
    )
    assert outcomes == [3, 2, 3]
    assert await store.read(_rows) == [8, 9]
