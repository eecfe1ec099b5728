"""`PostgresStore`: the `Store` API over PostgreSQL (docs/scale-out.md#the-store-on-postgresql).

Writes keep SQLite's contract. The same queue and single writer thread per process (engram/store/
database.py) run each `fn(conn)` in ONE transaction that first takes a transaction-level advisory lock,
so write transactions are serial across every process sharing the database, exactly as SQLite's
`BEGIN IMMEDIATE` makes them: repositories read-then-write (the next generation, rkey claims) without
retries or lost updates. The write is acknowledged only after COMMIT returns, with
`synchronous_commit = on` set on the writer's session, so an acknowledged write is on the server's disk.
If the writer's connection breaks, the write in flight fails and the next one reconnects.

Reads take a connection from a psycopg pool (read-only sessions): `store.read` / `readers.run` wrap `fn`
in one REPEATABLE READ transaction (one snapshot, as SQLite's deferred read transaction gives);
`readers.statement` runs a single statement on its own, which is one snapshot by itself. All blocking
psycopg calls run on the writer thread, the reader threads, or (for `readers.run` point reads) the caller's
thread, never as coroutines: the store's callers are the same as with SQLite.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any, TypeVar

import psycopg
from psycopg_pool import ConnectionPool

from engram.store.database import Store
from engram.store.postgres.connection import PgConnection
from engram.store.postgres.migrate import apply_migrations

T = TypeVar("T")
log = logging.getLogger(__name__)

WRITE_LOCK = 0x656E6772616D_02  # the advisory lock every write transaction holds until it ends
_READ_ONLY = "SET default_transaction_read_only = on"


def _connect(url: str) -> psycopg.Connection:
    return psycopg.connect(url, autocommit=True)


class PgReaders:
    """The `DirectReader` API (`run`, `statement`, `close`) over a pool of read-only connections."""

    def __init__(self, url: str, max_size: int):
        self._pool = ConnectionPool(
            url,
            min_size=1,
            max_size=max_size,
            kwargs={"autocommit": True},
            configure=lambda raw: raw.execute(_READ_ONLY),
            check=ConnectionPool.check_connection,  # a connection broken by a server restart is replaced
            open=False,
            name="engram-readers",
        )

    def open(self) -> None:
        self._pool.open(wait=True, timeout=30)

    def run(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        with self._pool.connection() as raw:
            conn = PgConnection(raw)
            raw.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
            try:
                return fn(conn, *args, **kwargs)
            finally:
                if conn.in_transaction:
                    raw.execute("ROLLBACK")

    def statement(self, fn: Callable[..., T], *args: Any) -> T:
        with self._pool.connection() as raw:
            return fn(PgConnection(raw), *args)

    def close(self) -> None:
        self._pool.close()


class PostgresStore(Store):
    backend = "postgres"
    point_reads_on_loop = False

    def __init__(self, url: str, *, readers: int = 2):
        self.url = url
        self.path = None  # no file: the database is named by `url`
        # The reader threads plus direct readers on other threads (the FAISS workers hydrating hits).
        self._init_threads(readers, PgReaders(url, max_size=readers + 6))

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
        except BaseException:
            raw.close()
            raise
        return PgConnection(raw)

    def _begin(self, conn: PgConnection) -> None:
        if conn.raw.closed or conn.raw.broken:
            conn.raw = _connect(self.url)
        # Durability is the contract, whatever the server's default: ack after a flushed commit.
        conn.raw.execute("BEGIN; SET LOCAL synchronous_commit = on")
        conn.raw.execute("SELECT pg_advisory_xact_lock(%s)", (WRITE_LOCK,))

    def _commit(self, conn: PgConnection) -> None:
        # COMMIT of a transaction a swallowed error aborted is a silent ROLLBACK in PostgreSQL: refuse it,
        # or the caller would be told "written" about a write that is gone.
        if conn.raw.info.transaction_status == psycopg.pq.TransactionStatus.INERROR:
            raise RuntimeError("the write transaction failed part-way and was rolled back")
        conn.raw.execute("COMMIT")

    def _rollback(self, conn: PgConnection) -> None:
        try:
            if not conn.raw.closed and conn.in_transaction:
                conn.raw.execute("ROLLBACK")
        except psycopg.Error:  # the writer must outlive one broken write; _begin reconnects if needed
            log.exception("rollback failed")

    def _close_writer(self, conn: PgConnection) -> None:
        conn.raw.close()
