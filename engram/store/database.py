"""`Store`: one SQLite file, one writer thread, a few reader threads (datasette's shape).

Writes: `await store.write(fn, *args)` queues `fn(conn, *args)` for the single writer thread, which runs it
inside `BEGIN IMMEDIATE ... COMMIT` and only then resolves the awaiting caller, so an acknowledged write is
committed. With `synchronous=FULL` in WAL mode SQLite fsyncs the WAL on every commit, so "committed" also
means "on disk": NORMAL would survive a process crash (kill -9) but could lose the last commits on power
loss or an OS crash, which would break the contract that acknowledged writes are never lost.
`BEGIN IMMEDIATE` takes the write lock up front: another process (the CLI next to a running server) then
waits in the busy handler instead of failing a deferred transaction's lock upgrade with SQLITE_BUSY.

Reads: `await store.read(fn, *args)` runs `fn(conn, *args)` on a reader thread whose connection is
`query_only`, inside one deferred transaction so every SELECT in `fn` sees the same snapshot (WAL lets
readers run alongside the writer). A write function mistakenly sent to `read` fails loudly.

An exception raised by `fn` rolls the transaction back and is re-raised to the awaiting caller.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import queue
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, Self, TypeVar

from engram.store.change_counter import ChangeCounter, counter_path
from engram.store.direct_reads import DirectReader, connect
from engram.store.migrate import apply_migrations

T = TypeVar("T")
log = logging.getLogger(__name__)

DB_FILE_NAME = "engram.sqlite3"
_STOP = object()  # sentinel that ends the writer thread


def database_path(data_dir: str | Path) -> Path:
    return Path(data_dir) / DB_FILE_NAME


class Store:
    backend = "sqlite"  # names the threads; the PostgreSQL store says "postgres"
    # A point read costs ~10 us in-process, less than a thread hop: callers may run it on the event loop.
    # Over a network (PostgreSQL) it is a round trip, which must not block the loop.
    point_reads_on_loop = True

    def __init__(self, path: Path, *, readers: int = 2, busy_timeout_ms: int = 5000):
        self.path = Path(path)
        self._busy_timeout_ms = busy_timeout_ms
        # Reader threads each keep their own query-only connection; DirectReader owns them all.
        self._init_threads(readers, DirectReader(self.path, busy_timeout_ms=busy_timeout_ms))

    def _init_threads(self, readers: int, direct_reader: Any) -> None:
        self._readers = max(1, readers)
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._writer: threading.Thread | None = None
        self._reader_pool: concurrent.futures.ThreadPoolExecutor | None = None
        self.readers = direct_reader
        self._lock = threading.Lock()
        self._closed = False
        # Transaction hooks (engram/store/repo.py): `before_commit(conn)` runs on the writer thread after
        # every write function, inside its transaction (a failure rolls the write back); its result goes to
        # `after_commit(result)` once COMMIT has returned. Set once at start-up, before any write.
        self.before_commit: Callable[[sqlite3.Connection], Any] | None = None
        self.after_commit: Callable[[Any], None] | None = None
        # Bumped after every commit by every process writing the file; None where readers cannot cache
        # (PostgreSQL: writers on other machines). engram/store/change_counter.py
        self.changes: ChangeCounter | None = None

    @classmethod
    async def open(cls, path: str | Path, **kwargs: Any) -> Store:
        """Open the SQLite file `path`, creating it, its directory and its schema as needed.

        The service's file is `database_path(data_dir)`."""
        store = cls(Path(path), **kwargs)
        await asyncio.to_thread(store._start)
        return store

    def _start(self) -> None:
        conn = self._open_writer()
        self._writer = threading.Thread(
            target=self._write_loop, args=(conn,), name=f"engram-{self.backend}-writer"
        )
        self._writer.daemon = True  # a hung fn must not keep the process alive; close() warns about it
        self._writer.start()
        self._reader_pool = concurrent.futures.ThreadPoolExecutor(
            max_workers=self._readers, thread_name_prefix=f"engram-{self.backend}-reader"
        )

    # The transaction seam: the PostgreSQL store (engram/store/postgres/store.py) overrides these five and
    # keeps the queue, the writer thread, the hooks and the readers' thread pool as they are here.
    def _open_writer(self) -> Any:
        """The writer's connection, with the schema brought up to date."""
        if self.path.is_dir():
            raise ValueError(f"{self.path} is a directory: open database_path(data_dir) instead")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        conn = connect(self.path, busy_timeout_ms=self._busy_timeout_ms)
        try:
            mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            if mode.lower() != "wal":
                raise RuntimeError(f"could not put {self.path} in WAL mode (got {mode!r})")
            apply_migrations(conn)
            self.changes = ChangeCounter(counter_path(self.path), self.path.stat().st_mode & 0o666)
            self.changes.bump()  # migrations may have changed rows a cache holds
        except BaseException:
            conn.close()
            raise
        return conn

    def _begin(self, conn: Any) -> None:
        conn.execute("BEGIN IMMEDIATE")

    def _commit(self, conn: Any) -> None:
        conn.execute("COMMIT")

    def _rollback(self, conn: Any) -> None:
        try:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
        except sqlite3.Error:  # the writer must outlive one broken write; SQLite rolls back on its own
            log.exception("rollback failed")

    def _close_writer(self, conn: Any) -> None:
        conn.close()

    # -- writes -------------------------------------------------------------------------------------------

    async def write(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run `fn(conn, *args, **kwargs)` in a transaction on the writer thread; returns once committed."""
        future: concurrent.futures.Future = concurrent.futures.Future()
        with self._lock:
            if self._closed or self._writer is None:
                raise RuntimeError("store is closed")
            self._queue.put((fn, args, kwargs, future))
        return await asyncio.wrap_future(future)

    def _write_loop(self, conn: Any) -> None:
        try:
            while True:
                item = self._queue.get()
                if item is _STOP:
                    return
                fn, args, kwargs, future = item
                # A caller cancelled before its turn: skip it, so "cancelled" never means "written anyway".
                # (Once running, a write completes and commits even if its caller has gone away.)
                if not future.set_running_or_notify_cancel():
                    continue
                try:
                    self._begin(conn)
                    result = fn(conn, *args, **kwargs)
                    hooked = self.before_commit(conn) if self.before_commit is not None else None
                    self._commit(conn)
                except BaseException as exc:  # noqa: BLE001 - every failure goes back to the caller
                    self._rollback(conn)
                    future.set_exception(exc)
                else:
                    if self.changes is not None:  # before the acknowledgement: see change_counter.py
                        self.changes.bump()
                    # after_commit first: its loop callbacks are then queued ahead of the caller's wake-up,
                    # so work it schedules (write notifications) exists once the write is acknowledged.
                    self._run_after_commit(hooked)
                    future.set_result(result)
        finally:
            self._close_writer(conn)
            self._fail_pending()

    def _run_after_commit(self, hooked: Any) -> None:
        if self.after_commit is not None and hooked:
            try:
                self.after_commit(hooked)
            except (
                Exception
            ):  # the write is committed and acknowledged; a hook failure must not stop the writer
                log.exception("after-commit hook failed")

    def _fail_pending(self) -> None:
        """Writes still queued when the writer stops would otherwise wait forever."""
        with self._lock:
            self._closed = True
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                return
            if item is not _STOP and item[3].set_running_or_notify_cancel():
                item[3].set_exception(RuntimeError("store is closed"))

    # -- reads --------------------------------------------------------------------------------------------

    async def read(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run `fn(conn, *args, **kwargs)` on a reader thread, in one read snapshot."""
        if self._closed or self._reader_pool is None:
            raise RuntimeError("store is closed")
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._reader_pool, self._run_read, fn, args, kwargs)

    def _run_read(self, fn: Callable[..., T], args: tuple, kwargs: dict) -> T:
        return self.readers.run(fn, *args, **kwargs)

    async def read_statement(self, fn: Callable[..., T], *args: Any) -> T:
        """`readers.statement` (a function running ONE statement, no transaction around it) on a reader
        thread."""
        if self._closed or self._reader_pool is None:
            raise RuntimeError("store is closed")
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._reader_pool, self.readers.statement, fn, *args)

    async def point_read(self, fn: Callable[..., T], *args: Any) -> T:
        """A small read by a unique key, from the event loop: inline on the loop's own reader connection
        where that is cheaper than a thread hop (`point_reads_on_loop`), on a reader thread where it is a
        network round trip (docs/scale-out.md#the-store-on-postgresql). One snapshot, as `read`."""
        if self.point_reads_on_loop:
            return self.readers.run(fn, *args)
        return await self.read(fn, *args)

    # -- shutdown -----------------------------------------------------------------------------------------

    async def close(self, timeout: float = 10.0) -> None:
        """Finish queued writes, stop the writer (sentinel + join) and close every connection."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._queue.put(_STOP)
        if self._writer is not None:
            await asyncio.to_thread(self._writer.join, timeout)
            if self._writer.is_alive():
                log.warning("store writer thread did not stop within %.1f s", timeout)
        if self._reader_pool is not None:
            await asyncio.to_thread(self._reader_pool.shutdown, True)
        self.readers.close()
        if self.changes is not None and not (self._writer is not None and self._writer.is_alive()):
            self.changes.close()  # a hung writer may still bump it: then it stays mapped until exit

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()
