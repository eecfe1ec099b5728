"""Reads on the calling thread's own query-only connection, without a hop to the store's reader pool.

The store's reader threads use it (one connection per thread), and so do two callers that would
otherwise pay for a thread hop on every search: the auth step's space lookup (a point read by
a unique key, ~20 µs, done on the event loop) and hydrating search hits (done in the FAISS worker right
after the search, so a search costs one hop instead of three). Measured on the shared 2-core machine, a
hop costs 50-120 µs (queue put + GIL hand-off + wake-up), more than either read. In WAL mode readers never
wait for the writer, so a point read on the loop cannot stall behind a bulk import. Everything bigger
than a point read still goes through `Store.read`.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")


def connect(path: Path, *, busy_timeout_ms: int, query_only: bool = False) -> sqlite3.Connection:
    # isolation_level=None: Python's sqlite3 must not open transactions behind our back; we issue
    # BEGIN/COMMIT ourselves. check_same_thread=False only so close() can run from the closing thread
    # after the owning thread has stopped; each connection is used by exactly one thread while open.
    conn = sqlite3.connect(
        path, isolation_level=None, check_same_thread=False, timeout=busy_timeout_ms / 1000
    )
    conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
    conn.execute("PRAGMA foreign_keys = ON")
    conn.execute("PRAGMA synchronous = FULL")
    if query_only:
        conn.execute("PRAGMA query_only = ON")
    return conn


class DirectReader:
    def __init__(self, path: Path, *, busy_timeout_ms: int = 5000):
        self.path = Path(path)
        self._busy_timeout_ms = busy_timeout_ms
        self._local = threading.local()
        self._conns: list[sqlite3.Connection] = []
        self._lock = threading.Lock()

    def run(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        conn = self._connection()
        conn.execute("BEGIN")  # one snapshot for everything fn reads
        try:
            return fn(conn, *args, **kwargs)
        finally:
            if conn.in_transaction:  # SQLite may already have ended it after an error; keep the real error
                conn.execute("ROLLBACK")

    def statement(self, fn: Callable[..., T], *args: Any) -> T:
        """`run` for a function that executes ONE statement (a single statement reads one snapshot by
        itself): saves the BEGIN/ROLLBACK round trip on the search hot path."""
        conn = self._connection()
        return fn(conn, *args)

    def _connection(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = connect(self.path, busy_timeout_ms=self._busy_timeout_ms, query_only=True)
            self._local.conn = conn
            with self._lock:
                self._conns.append(conn)
        return conn

    def close(self) -> None:
        with self._lock:
            for conn in self._conns:
                conn.close()
            self._conns.clear()
