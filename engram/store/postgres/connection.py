"""`PgConnection`: a psycopg connection shaped like the part of sqlite3.Connection the repositories use.

`execute(sql, params)` and `executemany` take SQLite-flavoured SQL (engram/store/postgres/translate.py)
and return psycopg cursors, which already have `fetchone`, `fetchall`, iteration and `rowcount`.
`dialect` tells repositories which fragments to use (engram/store/dialect.py).

A writer's connection runs each write transaction after its BEGIN in psycopg's pipeline mode
(`enter_pipeline`, engram/store/postgres/store.py): a statement goes out without waiting for its answer,
and only reading a result waits, for everything sent before it. The repositories' own `pipelined` blocks
then add no sync of their own, and a cursor's `rowcount` waits for its statement's answer before it is
read (`WriterCursor`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import psycopg

from engram.store.dialect import POSTGRES
from engram.store.postgres import loop_guard
from engram.store.postgres.translate import adapt_params, translate


class WriterCursor(psycopg.Cursor[Any]):
    """A writer connection's cursor: in pipeline mode `rowcount` is only known once the statement's answer
    has come back, so reading it waits for everything sent so far (one round trip) instead of answering -1.
    Fetching rows waits by itself."""

    pipeline: psycopg.Pipeline | None = None

    @property
    def rowcount(self) -> int:
        if self.pipeline is not None and self.pgresult is None:
            self.pipeline.sync()
        return super().rowcount


class PgConnection:
    dialect = POSTGRES

    def __init__(self, raw: psycopg.Connection, *, begin: str | None = None):
        self.raw = raw
        # A BEGIN still to send: it goes out with the first statement, in one round trip (a reader's
        # transaction, engram/store/postgres/store.py `PgReaders.run`).
        self._begin = begin
        self._pipeline_cm: contextlib.AbstractContextManager[psycopg.Pipeline] | None = None
        self._pipeline: psycopg.Pipeline | None = None

    @property
    def pipelined(self) -> bool:
        """In a writer's pipelined transaction (`enter_pipeline`)."""
        return self._pipeline is not None

    def enter_pipeline(self) -> None:
        self._pipeline_cm = self.raw.pipeline()
        self._pipeline = self._pipeline_cm.__enter__()

    def leave_pipeline(self) -> None:
        """Send a sync and wait for every answer still due; raises the first statement's error, if any."""
        cm, self._pipeline_cm, self._pipeline = self._pipeline_cm, None, None
        if cm is not None:
            cm.__exit__(None, None, None)

    def execute(self, sql: str, params: Sequence[Any] = ()) -> psycopg.Cursor:
        loop_guard.check(sql)
        query, numbered = translate(sql)
        # Parameters always go (even none), so psycopg un-doubles the `%%` the translation wrote.
        if self._pipeline is not None:
            cursor = self.raw.execute(query, adapt_params(params, numbered))
            cursor.pipeline = self._pipeline  # type: ignore[attr-defined]  # a WriterCursor
            return cursor
        if self._begin is not None:
            begin, self._begin = self._begin, None
            with self.raw.pipeline():  # leaving it waits for both answers, the statement's rows included
                self.raw.execute(begin)
                return self.raw.execute(query, adapt_params(params, numbered))
        return self.raw.execute(query, adapt_params(params, numbered))

    def start(self) -> None:
        """Send the pending BEGIN now, if there is one."""
        if self._begin is not None:
            begin, self._begin = self._begin, None
            self.raw.execute(begin)

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> psycopg.Cursor:
        loop_guard.check(sql)
        self.start()
        query, numbered = translate(sql)
        cursor = self.raw.cursor()
        if self._pipeline is not None:
            cursor.pipeline = self._pipeline  # type: ignore[attr-defined]  # a WriterCursor
        batch = [adapt_params(row, numbered) for row in rows]
        if batch:
            cursor.executemany(query, batch)
        return cursor

    def pipeline(self) -> contextlib.AbstractContextManager[Any]:
        """psycopg's pipeline mode (engram/store/dialect.py `pipelined`); nothing more inside a writer's
        pipelined transaction, whose statements already go out unwaited (leaving a nested pipeline would
        wait for every answer)."""
        if self._pipeline is not None:
            return contextlib.nullcontext(self._pipeline)
        if self._begin is not None:
            begin, self._begin = self._begin, None
            return self._pipeline_after(begin)
        return self.raw.pipeline()

    @contextlib.contextmanager
    def _pipeline_after(self, begin: str) -> Iterator[psycopg.Pipeline]:
        with self.raw.pipeline() as pipeline:
            self.raw.execute(begin)
            yield pipeline

    @property
    def in_transaction(self) -> bool:
        return self.raw.info.transaction_status != psycopg.pq.TransactionStatus.IDLE
