"""`PgConnection`: a psycopg connection shaped like the part of sqlite3.Connection the repositories use.

`execute(sql, params)` and `executemany` take SQLite-flavoured SQL (engram/store/postgres/translate.py)
and return psycopg cursors, which already have `fetchone`, `fetchall`, iteration and `rowcount`.
`dialect` tells repositories which fragments to use (engram/store/dialect.py).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import psycopg

from engram.store.dialect import POSTGRES
from engram.store.postgres import loop_guard
from engram.store.postgres.translate import adapt_params, translate


class PgConnection:
    dialect = POSTGRES

    def __init__(self, raw: psycopg.Connection, *, begin: str | None = None):
        self.raw = raw
        # A BEGIN still to send: it goes out with the first statement, in one round trip (a reader's
        # transaction, engram/store/postgres/store.py `PgReaders.run`).
        self._begin = begin

    def execute(self, sql: str, params: Sequence[Any] = ()) -> psycopg.Cursor:
        loop_guard.check(sql)
        query, numbered = translate(sql)
        # Parameters always go (even none), so psycopg un-doubles the `%%` the translation wrote.
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
        batch = [adapt_params(row, numbered) for row in rows]
        if batch:
            cursor.executemany(query, batch)
        return cursor

    def pipeline(self) -> contextlib.AbstractContextManager[psycopg.Pipeline]:
        """psycopg's pipeline mode (engram/store/dialect.py `pipelined`)."""
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
