"""`PostgresStore`: the `Store` API over PostgreSQL (docs/scale-out.md#the-store-on-postgresql).

Writes keep SQLite's contract. The same queue and single writer thread per process (engram/store/
database.py) run the writes queued together in ONE transaction (group commit, each write in its own
savepoint), which first takes transaction-level advisory locks: a write of one space (`Store.write_to`)
takes that space's lock and the shared side of the store-wide lock; any other write takes the store-wide
lock exclusively, so it is serial with every write in every process sharing the database, exactly as
SQLite's `BEGIN IMMEDIATE` makes it. Repositories read-then-write (the next generation, rkey claims,
counters) without retries or lost updates, since two writers of one space still take turns. A group takes
all its locks in one statement, in one order (the store-wide lock, then the spaces' keys sorted), so two
groups never wait for each other in a cycle. The write is acknowledged only after COMMIT returns, with
`synchronous_commit = on` set on the transaction, so an acknowledged write is on the server's disk.
If the writer's connection breaks, the write in flight fails and the next one reconnects.

Reads take a connection from a psycopg pool (read-only sessions): `store.read` / `readers.run` wrap `fn`
in one REPEATABLE READ transaction (one snapshot, as SQLite's deferred read transaction gives);
`readers.statement` runs a single statement on its own, which is one snapshot by itself. All blocking
psycopg calls run on the writer thread, the reader threads, or (for `readers.run` point reads) the caller's
thread, never as coroutines: the store's callers are the same as with SQLite.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
from collections.abc import Callable
from typing import Any, TypeVar

import psycopg
from psycopg_pool import ConnectionPool

from engram.store.database import NotCommitted, Store
from engram.store.postgres.changes import PgChangeFeed
from engram.store.postgres.connection import PgConnection, WriterCursor
from engram.store.postgres.migrate import apply_migrations

T = TypeVar("T")
log = logging.getLogger(__name__)

WRITE_LOCK = 0x656E6772616D_02  # the store-wide advisory lock: exclusive, or shared beside a space's lock
# Spaces' locks use the two-integer key space (never equal to a one-bigint key): this namespace and 32 bits
# of the URI's sha256. Two spaces whose bits collide share a lock, which costs parallelism, never safety.
SPACE_LOCKS = 0x656E6733
# Writer threads (and connections) per store. A group's statements are round trips, one after another on
# its connection, so one writer leaves the database and the process mostly waiting; a few let the groups
# of different spaces overlap. Each holds a connection for the store's lifetime.
WRITERS = 4
_EXCLUSIVE_BEGIN = f"BEGIN; SET LOCAL synchronous_commit = on; SELECT pg_advisory_xact_lock({WRITE_LOCK})"
_SHARED_BEGIN = f"BEGIN; SET LOCAL synchronous_commit = on; SELECT pg_advisory_xact_lock_shared({WRITE_LOCK})"
# The spaces' keys are spelled into the statement (they are ints we computed), so it goes out with BEGIN
# in one simple query: one round trip for the whole start of a transaction instead of two.
_SPACE_LOCKS = (
    "; SELECT pg_advisory_xact_lock(" + str(SPACE_LOCKS) + ", k) FROM unnest(ARRAY[{}]::int[]) AS k"
)
_FAILED_PART_WAY = "the write transaction failed part-way and was rolled back"


def space_lock_key(space_uri: str) -> int:
    return int.from_bytes(hashlib.sha256(space_uri.encode()).digest()[:4], "big", signed=True)


_READ_ONLY = "SET default_transaction_read_only = on"
_BEGIN_READ = "BEGIN ISOLATION LEVEL REPEATABLE READ"


def _read_only(raw: psycopg.Connection[Any]) -> None:
    raw.execute(_READ_ONLY)


def _connect(url: str) -> psycopg.Connection:
    return psycopg.connect(url, autocommit=True, cursor_factory=WriterCursor)


class PgReaders:
    """The `DirectReader` API (`run`, `statement`, `close`) over a pool of read-only connections.

    A connection is not checked when it is taken from the pool (that would be one more round trip per
    read): a read that fails because its connection was lost (a server restart, a terminated backend)
    runs again on another, up to `max_size` times, since a read changes nothing. The pool discards the
    broken connection when it comes back."""

    def __init__(self, url: str, max_size: int):
        self._max_size = max_size
        self._pool = ConnectionPool(
            url,
            min_size=1,
            max_size=max_size,
            kwargs={"autocommit": True},
            configure=_read_only,
            open=False,
            name="engram-readers",
        )

    def open(self) -> None:
        self._pool.open(wait=True, timeout=30)

    def run(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        def in_snapshot(raw: psycopg.Connection) -> T:
            # BEGIN goes out with fn's first statement: one round trip for both (connection.py).
            conn = PgConnection(raw, begin=_BEGIN_READ)
            try:
                return fn(conn, *args, **kwargs)
            finally:
                if not raw.broken and conn.in_transaction:
                    raw.execute("ROLLBACK")

        return self._retrying(in_snapshot)

    def statement(self, fn: Callable[..., T], *args: Any) -> T:
        return self._retrying(lambda raw: fn(PgConnection(raw), *args))

    def _retrying(self, read: Callable[[psycopg.Connection], T]) -> T:
        for attempt in range(self._max_size + 1):
            with self._pool.connection() as raw:
                try:
                    return read(raw)
                except psycopg.OperationalError:
                    if not raw.broken or attempt == self._max_size:
                        raise
        raise AssertionError("unreachable")

    def close(self) -> None:
        self._pool.close()


class PostgresStore(Store):
    backend = "postgres"
    point_reads_on_loop = False

    def __init__(self, url: str, *, readers: int = 2, writers: int = WRITERS):
        self.url = url
        self.path = None  # type: ignore[assignment]  # no file: the database is named by `url`
        # The reader threads plus direct readers on other threads (the FAISS workers hydrating hits).
        # Several writers, each a connection: writes of different spaces commit in parallel
        # (docs/scale-out.md#durability-and-isolation).
        self._init_threads(readers, PgReaders(url, max_size=readers + 6), writers)

    @classmethod
    async def open(cls, url: str, **kwargs: Any) -> PostgresStore:  # type: ignore[override]
        """Connect to `url` (postgresql://...), bringing its schema up to date."""
        store = cls(url, **kwargs)
        await asyncio.to_thread(store._start)
        return store

    def _open_writer(self) -> PgConnection:
        raw = _connect(self.url)
        try:
            apply_migrations(raw)
            self.readers.open()
            # Point reads are remembered while no commit could have changed them (engram/store/postgres/
            # changes.py); until the listener is in place the cache stays off (value() is -1).
            feed = PgChangeFeed(self.url)
            feed.wait_listening(10)
            self.changes = feed
        except BaseException:
            raw.close()
            raise
        return PgConnection(raw)

    def _open_extra_writer(self) -> PgConnection:
        return PgConnection(_connect(self.url))

    def _begin(self, conn: PgConnection, scopes: list[str | None]) -> None:
        if conn.raw.closed or conn.raw.broken:
            conn.raw = _connect(self.url)
        # Durability is the contract, whatever the server's default: ack after a flushed commit. BEGIN and
        # the locks are waited for (one round trip), so the locks are held once a write starts; the rest of
        # the transaction goes out in pipeline mode (connection.py), COMMIT included.
        if None in scopes:
            conn.raw.execute(_EXCLUSIVE_BEGIN)
        else:
            keys = sorted({space_lock_key(scope) for scope in scopes if scope is not None})
            conn.raw.execute(_SHARED_BEGIN + _SPACE_LOCKS.format(",".join(str(int(k)) for k in keys)))
        conn.enter_pipeline()

    def _commit(self, conn: PgConnection) -> None:
        # A statement that failed before COMMIT, even one whose error a write swallowed, aborts the
        # pipeline: the server skips everything up to the sync, COMMIT too, and the sync reports the error.
        # (Outside a pipeline COMMIT of an aborted transaction is a silent ROLLBACK: refuse it, or the
        # caller would be told "written" about a write that is gone.)
        if not conn.pipelined:
            if conn.raw.info.transaction_status == psycopg.pq.TransactionStatus.INERROR:
                raise RuntimeError(_FAILED_PART_WAY)
            conn.raw.execute("COMMIT")
            return
        try:
            # Sending a statement in pipeline mode also reads the answers already in, so an earlier
            # statement's error may be raised here, or by the sync that waits for every answer.
            conn.raw.execute("COMMIT")
            conn.leave_pipeline()
        except psycopg.Error as exc:
            with contextlib.suppress(psycopg.Error):
                conn.leave_pipeline()  # if still in it: its sync brings the transaction's status back
            if conn.raw.broken or conn.raw.info.transaction_status != psycopg.pq.TransactionStatus.INERROR:
                raise  # COMMIT ran and failed, or the outcome is unknown
            # Still open and aborted: COMMIT never ran. "Pipeline aborted" means a write was told of the
            # failing statement and went on (it swallowed the error); otherwise nobody waited for it.
            reported = None if isinstance(exc, psycopg.errors.PipelineAborted) else exc
            raise NotCommitted(_FAILED_PART_WAY, reported) from exc

    def _savepoint(self, conn: PgConnection, *, release_previous: bool) -> None:
        # Unwaited in the pipeline. The previous write's savepoint is kept (PostgreSQL nests savepoints of
        # one name; ROLLBACK TO names the newest): one statement per write instead of RELEASE + SAVEPOINT.
        conn.raw.execute("SAVEPOINT engram_write")

    def _check_write(self, conn: PgConnection) -> None:
        # In the pipeline a swallowed error surfaces at the next wait, at the latest COMMIT's (_commit).
        if not conn.pipelined and conn.raw.info.transaction_status == psycopg.pq.TransactionStatus.INERROR:
            raise RuntimeError(_FAILED_PART_WAY)  # as in _commit: this write's error was swallowed

    def _lost_with_group(self, conn: PgConnection, exc: BaseException) -> bool:
        # A database error reaches whichever write waits next for an answer, which may not be the write
        # that sent the failing statement, and it aborted the pipeline for everything after it.
        return conn.pipelined and isinstance(exc, psycopg.Error)

    def _rollback_to_savepoint(self, conn: PgConnection) -> bool:
        if conn.raw.closed or conn.raw.broken or not conn.in_transaction:
            return False
        try:
            # In the pipeline: unwaited, and skipped if an earlier statement failed, which the next wait
            # then reports (the group is run again, _lost_with_group).
            conn.raw.execute("ROLLBACK TO engram_write")
        except psycopg.Error:
            log.exception("rollback to savepoint failed")
            return False
        return True

    def _rollback(self, conn: PgConnection) -> None:
        try:
            if conn.pipelined:
                conn.leave_pipeline()
        except psycopg.Error:
            pass  # the error the rollback is for, reported again by the sync
        try:
            if not conn.raw.closed and conn.in_transaction:
                conn.raw.execute("ROLLBACK")
        except psycopg.Error:  # the writer must outlive one broken write; _begin reconnects if needed
            log.exception("rollback failed")

    def _close_writer(self, conn: PgConnection) -> None:
        conn.raw.close()
