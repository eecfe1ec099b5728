"""`Store`: one SQLite file, one writer thread, a few reader threads (datasette's shape).

Writes: `await store.write(fn, *args)` queues `fn(conn, *args)` for the single writer thread, which runs it
inside `BEGIN IMMEDIATE ... COMMIT` and only then resolves the awaiting caller, so an acknowledged write is
committed. Group commit: the writes queued while the writer was busy run together in ONE transaction, each
inside its own savepoint, and are acknowledged together after its one COMMIT (one fsync for the group, not
one per write; docs/internals.md#group-commit). A write that fails is rolled back to its savepoint and
fails alone: it changes nothing, and the others commit. With `synchronous=FULL` in WAL mode SQLite fsyncs the WAL on every commit, so "committed" also
means "on disk": NORMAL would survive a process crash (kill -9) but could lose the last commits on power
loss or an OS crash, which would break the contract that acknowledged writes are never lost.
`BEGIN IMMEDIATE` takes the write lock up front: another process (the CLI next to a running server) then
waits instead of failing a deferred transaction's lock upgrade with SQLITE_BUSY. Engram's own processes
wait for each other on the writer lock first (engram/store/writer_lock.py), woken as soon as it is free.

Reads: `await store.read(fn, *args)` runs `fn(conn, *args)` on a reader thread whose connection is
`query_only`, inside one deferred transaction so every SELECT in `fn` sees the same snapshot (WAL lets
readers run alongside the writer). A write function mistakenly sent to `read` fails loudly.

An exception raised by `fn` rolls its writes back and is re-raised to the awaiting caller. A write function
must therefore change nothing but the connection's rows: it may run again, alone, if the group it ran in
could not commit before COMMIT was sent (the commit hook failed, or the backend dropped the transaction), or
whose COMMIT the backend did not run (`NotCommitted`).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import hashlib
import logging
import queue
import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, Self, TypeVar, cast

from engram.store.change_counter import ChangeCounter, Changes, counter_path
from engram.store.direct_reads import DirectReader, connect
from engram.store.migrate import apply_migrations
from engram.store.pending_writes import PendingWrite, settle
from engram.store.point_cache import MISS, PointReadCache, is_cacheable
from engram.store.writer_lock import WriterLock, writer_lock_path

T = TypeVar("T")
log = logging.getLogger(__name__)

DB_FILE_NAME = "engram.sqlite3"
_STOP = object()  # sentinel that ends the writer thread
# Writes committed together at most: a group's writes wait for each other's work, so an unbounded group
# would let a burst of writes delay the first of them behind all the rest.
MAX_GROUP = 64


class _GroupLost(Exception):
    """The backend ended the group's transaction under a failing write (SQLite does for a few errors, such
    as a full disk): nothing of the group was committed, so its other writes run again alone."""


class NotCommitted(RuntimeError):
    """The backend did not run the COMMIT: a statement sent before it had failed, so the transaction was
    aborted and nothing of it was committed (PostgreSQL in pipeline mode, engram/store/postgres/store.py).
    A group's writes then run again one by one; a write alone fails with `reported`, the failing
    statement's own error when no write had been told of it, else with this."""

    def __init__(self, message: str, reported: BaseException | None = None):
        super().__init__(message)
        self.reported = reported


class Deferred:
    """A write function's result that is only read once its transaction's statements have been answered:
    `finish()` runs on the writer thread after the group's writes and the commit hook, before COMMIT, and
    its return value (or exception) is the write's outcome. On PostgreSQL the commit hook's read has then
    waited for every statement sent before it, so a write that returns one of these instead of reading its
    own answers back (a Sim append's new rows) adds no round trip of its own. `finish` only reads the
    answers of statements already sent: it must send no write (the hook has run). If it raises, its
    group's writes run again one by one, as when the hook fails."""

    __slots__ = ("finish",)

    def __init__(self, finish: Callable[[], Any]):
        self.finish = finish


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

    def _init_threads(self, readers: int, direct_reader: Any, writers: int = 1) -> None:
        self._readers = max(1, readers)
        # One queue and thread per writer. SQLite has one (one write lock per file); PostgreSQL may have
        # several, each with its connection, a space's writes always on the same one (`_queue_for`).
        self._queues: list[queue.SimpleQueue[Any]] = [queue.SimpleQueue() for _ in range(max(1, writers))]
        self._writers: list[threading.Thread] = []
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
        self.changes: Changes | None = None
        self._point_cache = PointReadCache()

    @classmethod
    async def open(cls, path: str | Path, **kwargs: Any) -> Store:
        """Open the SQLite file `path`, creating it, its directory and its schema as needed.

        The service's file is `database_path(data_dir)`."""
        store = cls(Path(path), **kwargs)
        await asyncio.to_thread(store._start)
        return store

    def _start(self) -> None:
        conns = [self._open_writer()]
        try:
            conns += [self._open_extra_writer() for _ in self._queues[1:]]
        except BaseException:
            for conn in conns:
                self._close_writer(conn)
            raise
        for n, (conn, writes) in enumerate(zip(conns, self._queues, strict=True)):
            name = f"engram-{self.backend}-writer" + (f"_{n}" if n else "")
            thread = threading.Thread(target=self._write_loop, args=(conn, writes), name=name)
            thread.daemon = True  # a hung fn must not keep the process alive; close() warns about it
            thread.start()
            self._writers.append(thread)
        self._reader_pool = concurrent.futures.ThreadPoolExecutor(
            max_workers=self._readers, thread_name_prefix=f"engram-{self.backend}-reader"
        )

    # The transaction seam: the PostgreSQL store (engram/store/postgres/store.py) overrides these and
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
            counter = ChangeCounter(counter_path(self.path), self.path.stat().st_mode & 0o666)
            counter.bump()  # migrations may have changed rows a cache holds
            self.changes = counter
            self._writer_lock = WriterLock(writer_lock_path(self.path), self.path.stat().st_mode & 0o666)
        except BaseException:
            conn.close()
            raise
        return conn

    def _open_extra_writer(self) -> Any:
        """Another writer's connection (only backends with more than one writer: PostgreSQL)."""
        raise NotImplementedError

    def _begin(self, conn: Any, scopes: list[str | None]) -> None:
        """`scopes`: each write's space (`write_to`) or None; SQLite's write lock covers the whole file.
        Other processes' writers are waited for on the writer lock first (engram/store/writer_lock.py); it
        is held until `_commit` or `_rollback` ends the transaction."""
        self._writer_lock.acquire()
        conn.execute("BEGIN IMMEDIATE")

    def _commit(self, conn: Any) -> None:
        conn.execute("COMMIT")
        self._writer_lock.release()  # a failed COMMIT is rolled back, which releases it

    def _savepoint(self, conn: Any, *, release_previous: bool) -> None:
        if release_previous:
            conn.execute("RELEASE engram_write")
        conn.execute("SAVEPOINT engram_write")

    def _check_write(self, conn: Any) -> None:
        """Raise if the write just run left the transaction unusable (PostgreSQL: a swallowed error)."""

    def _lost_with_group(self, conn: Any, exc: BaseException) -> bool:
        """Whether a write's failure may be another write's of its group, so that the whole group must be
        rolled back and its writes run again alone, this one included (PostgreSQL in pipeline mode: an
        error is reported by the first statement that waits for an answer after it)."""
        return False

    def _rollback_to_savepoint(self, conn: Any) -> bool:
        """Undo the current write only; False if the whole transaction is gone (SQLite ends it on a few
        errors, e.g. SQLITE_FULL), which leaves nothing of the group to commit."""
        if not conn.in_transaction:
            return False
        try:
            conn.execute("ROLLBACK TO engram_write")
            conn.execute("RELEASE engram_write")
        except sqlite3.Error:
            log.exception("rollback to savepoint failed")
            return False
        return True

    def _rollback(self, conn: Any) -> None:
        try:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
        except sqlite3.Error:  # the writer must outlive one broken write; SQLite rolls back on its own
            log.exception("rollback failed")
        finally:
            self._writer_lock.release()

    def _close_writer(self, conn: Any) -> None:
        conn.close()
        self._writer_lock.close()

    # -- writes -------------------------------------------------------------------------------------------

    async def write(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run `fn(conn, *args, **kwargs)` in a transaction on the writer thread; returns once committed."""
        return await self._enqueue(None, fn, args, kwargs)

    async def write_to(self, space_uri: str, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """`write` for a function that reads and writes only the rows of one space (its memories, tombstones,
        generation, repo, import keys): on PostgreSQL it then locks that space instead of every write in the
        database, so writes to different spaces run in parallel across processes and nodes
        (docs/scale-out.md#durability-and-isolation). SQLite has one write lock per file either way. Its
        commit does not invalidate this process's cached API-key and revocation lookups (which such a write
        cannot change: engram/store/change_counter.py `keys_value`)."""
        return await self._enqueue(space_uri, fn, args, kwargs)

    async def _enqueue(
        self, scope: str | None, fn: Callable[..., T], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> T:
        write = PendingWrite(fn, args, kwargs, scope, asyncio.get_running_loop())
        with self._lock:
            if self._closed or not self._writers:
                raise RuntimeError("store is closed")
            self._queue_for(scope).put(write)
        try:
            return cast("T", await write.future)
        except asyncio.CancelledError:
            write.abandon()  # skipped if the writer has not started it (engram/store/pending_writes.py)
            raise

    def _queue_for(self, scope: str | None) -> queue.SimpleQueue[Any]:
        """A space's writes always go to one writer (in order, and a group never waits for the space's
        lock held by another writer of this process); writes that name no space go to the first."""
        if scope is None or len(self._queues) == 1:
            return self._queues[0]
        return self._queues[int.from_bytes(hashlib.sha256(scope.encode()).digest()[:4]) % len(self._queues)]

    def _write_loop(self, conn: Any, writes: queue.SimpleQueue[Any]) -> None:
        try:
            stop = False
            while not stop:
                item = writes.get()
                if item is _STOP:
                    return
                group = [item]
                while len(group) < MAX_GROUP:  # everything queued meanwhile joins this group
                    try:
                        item = writes.get_nowait()
                    except queue.Empty:
                        break
                    if item is _STOP:
                        stop = True  # close() queues nothing after the sentinel
                        break
                    group.append(item)
                conn = self._run_alone(conn, group[0]) if len(group) == 1 else self._run_group(conn, group)
        finally:
            self._close_writer(conn)
            self._fail_pending(writes)

    def _run_alone(self, conn: Any, write: PendingWrite, *, started: bool = False) -> Any:
        """One write in its own transaction (no savepoint: the transaction is its unit). `started`: it ran
        in a group that could not commit, and runs again."""
        # A caller cancelled before its turn is skipped, so "cancelled" never means "written anyway". (Once
        # running, a write completes and commits even if its caller has gone away.)
        if not started and not write.claim():
            return conn
        try:
            self._begin(conn, [write.scope])
            result = write.fn(conn, *write.args, **write.kwargs)
            hooked = self.before_commit(conn) if self.before_commit is not None else None
            if isinstance(result, Deferred):
                result = result.finish()
            self._commit(conn)
        except BaseException as exc:  # noqa: BLE001 - every failure goes back to the caller
            self._rollback(conn)
            write.fail(exc.reported or exc if isinstance(exc, NotCommitted) else exc)
        else:
            self._acknowledge(hooked, [(write, result)])
        return conn

    def _run_group(self, conn: Any, group: list[PendingWrite]) -> Any:
        """Several writes in ONE transaction, each in its own savepoint, acknowledged after one COMMIT."""
        try:
            self._begin(conn, [w.scope for w in group])
        except BaseException as exc:  # noqa: BLE001 - nothing ran: every write of the group fails with it
            self._rollback(conn)
            for write in group:
                if write.claim():
                    write.fail(exc)
            return conn
        done: list[tuple[PendingWrite, Any]] = []
        try:
            # A write's savepoint is released when the next one starts (one statement, one round trip on
            # PostgreSQL); COMMIT releases the last.
            open_savepoint = False
            for write in group:
                if not write.claim():
                    continue  # cancelled before its turn, as in _run_alone
                self._savepoint(conn, release_previous=open_savepoint)
                open_savepoint = True
                try:
                    result = write.fn(conn, *write.args, **write.kwargs)
                    self._check_write(conn)
                except BaseException as exc:  # this write fails alone: back to its savepoint
                    open_savepoint = False
                    if self._lost_with_group(conn, exc):
                        raise _GroupLost from exc  # run again alone below, with the rest
                    if not self._rollback_to_savepoint(conn):
                        write.fail(exc)
                        raise _GroupLost from exc
                    write.fail(exc)
                else:
                    done.append((write, result))
            if not done:
                self._rollback(conn)
                return conn
            hooked = self.before_commit(conn) if self.before_commit is not None else None
            done = [(w, r.finish() if isinstance(r, Deferred) else r) for w, r in done]
        except BaseException:  # noqa: BLE001 - not committed (COMMIT was not sent): run them one by one
            self._rollback(conn)
            for write in group:
                if not write.settled:  # those that did not fail by themselves (or never started)
                    conn = self._run_alone(conn, write, started=write.running)
            return conn
        try:
            self._commit(conn)
        except NotCommitted:  # nothing was committed: as when the hook fails, one by one
            self._rollback(conn)
            for write, _ in done:
                conn = self._run_alone(conn, write, started=True)
            return conn
        except BaseException as exc:  # noqa: BLE001 - COMMIT itself failed: the outcome is the backend's
            self._rollback(conn)
            for write, _ in done:
                write.fail(exc)
            return conn
        self._acknowledge(hooked, done)
        return conn

    def _acknowledge(self, hooked: Any, done: list[tuple[PendingWrite, Any]]) -> None:
        if self.changes is not None:  # before the acknowledgement: see change_counter.py
            self.changes.bump(scoped=all(write.scope is not None for write, _ in done))
        # after_commit first: its loop callbacks are then queued ahead of the callers' wake-up, so work it
        # schedules (write notifications) exists once the writes are acknowledged.
        self._run_after_commit(hooked)
        settle(done)  # one wake-up of the callers' loop for the group

    def _run_after_commit(self, hooked: Any) -> None:
        if self.after_commit is not None and hooked:
            try:
                self.after_commit(hooked)
            except (
                Exception
            ):  # the write is committed and acknowledged; a hook failure must not stop the writer
                log.exception("after-commit hook failed")

    def _fail_pending(self, writes: queue.SimpleQueue[Any]) -> None:
        """Writes still queued when the writer stops would otherwise wait forever."""
        with self._lock:
            self._closed = True
        while True:
            try:
                item = writes.get_nowait()
            except queue.Empty:
                return
            if item is not _STOP and item.claim():
                item.fail(RuntimeError("store is closed"))

    # -- reads --------------------------------------------------------------------------------------------

    async def read(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run `fn(conn, *args, **kwargs)` on a reader thread, in one read snapshot."""
        if self._closed or self._reader_pool is None:
            raise RuntimeError("store is closed")
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._reader_pool, self._run_read, fn, args, kwargs)

    def _run_read(self, fn: Callable[..., T], args: tuple[Any, ...], kwargs: dict[str, Any]) -> T:
        result: T = self.readers.run(fn, *args, **kwargs)
        return result

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
        network round trip (docs/scale-out.md#the-store-on-postgresql). One snapshot, as `read`. The answer
        of a `@cacheable` function is remembered until the change counter moves (engram/store/point_cache.py)."""
        changes = self.changes if is_cacheable(fn) else None
        # Read before the row (change_counter.py). Cacheable answers never depend on what a scoped write
        # changes, so this process's own scoped commits do not move their version (`keys_value`).
        version = -1 if changes is None else changes.keys_value()
        if version >= 0:
            found = self._point_cache.get(fn, args, version)
            if found is not MISS:
                return cast("T", found)
        if self.point_reads_on_loop:
            result = self.readers.run(fn, *args)
        else:
            result = await self.read(fn, *args)
        if version >= 0:
            self._point_cache.put(fn, args, version, result)
        return cast("T", result)

    # -- shutdown -----------------------------------------------------------------------------------------

    async def close(self, timeout: float = 10.0) -> None:
        """Finish queued writes, stop the writer (sentinel + join) and close every connection."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            for writes in self._queues:
                writes.put(_STOP)
        for writer in self._writers:
            await asyncio.to_thread(writer.join, timeout)
            if writer.is_alive():
                log.warning("store writer thread %s did not stop within %.1f s", writer.name, timeout)
        if self._reader_pool is not None:
            await asyncio.to_thread(self._reader_pool.shutdown, True)
        self.readers.close()
        if self.changes is not None and not any(writer.is_alive() for writer in self._writers):
            self.changes.close()  # a hung writer may still bump it: then it stays mapped until exit

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()
