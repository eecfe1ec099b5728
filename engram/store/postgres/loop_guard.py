"""Catching PostgreSQL statements sent from a thread that runs an event loop.

On SQLite a point read on the loop is allowed: it costs less than a thread hop. On PostgreSQL every
statement is a network round trip, so one sent from the loop's thread stalls every request that loop
serves (docs/scale-out.md#the-store-on-postgresql). `PgConnection` calls `check` before each statement.
A serving process logs each such statement once (a bug to fix, not a reason to fail the request); the
test suite installs a recorder with `report_to` and fails any test that caused one (tests/conftest.py).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

log = logging.getLogger(__name__)

Reporter = Callable[[str], None]

_logged: set[str] = set()


def _log_once(sql: str) -> None:
    if sql not in _logged:
        _logged.add(sql)
        log.warning("a PostgreSQL statement ran on the event loop's thread: %s", sql[:200])


_reporter: Reporter = _log_once


def on_loop_thread() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def check(sql: str) -> None:
    if on_loop_thread():
        _reporter(sql)


def report_to(reporter: Reporter | None) -> Reporter:
    """Send loop-thread statements to `reporter` (None: back to logging); returns the previous one."""
    global _reporter
    previous = _reporter
    _reporter = reporter if reporter is not None else _log_once
    return previous
