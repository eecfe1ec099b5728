"""`PgChangeFeed`: the PostgreSQL store's change counter, fed by notifications (docs/scale-out.md#point-reads).

SQLite's `ChangeCounter` (engram/store/change_counter.py) is a number in shared memory every process bumps
after each commit; readers cache a point read (a space, an API key) with the value they saw before reading,
and trust it while the value is unchanged. PostgreSQL's writers may be on other machines, so the counter
here is per process and is bumped two ways:

- by this process's writer, after COMMIT and before the write is acknowledged (as on SQLite), so a request
  that starts after one of this process's writes was acknowledged never sees an older answer;
- by a notification: migration 0010 makes every statement that changes `spaces`, `api_keys` or
  `api_key_spaces` send `NOTIFY engram_changes` from inside its transaction, which PostgreSQL delivers once
  the transaction commits, to every listening connection. One thread per store waits on a LISTEN
  connection of its own and bumps the counter for each one.

A write committed by another process is therefore seen here once its notification arrives (normally well
under a millisecond after its COMMIT; the cluster's index catch-up rides on the same delivery). While the
LISTEN connection is down nothing could tell this process about other writers, so `value()` is -1 (callers
then read the database, as without a cache) until it is back, and the counter is bumped on reconnecting.

`keys_value()` is a second count for the remembered API-key and revocation lookups, which no space-scoped
write can change (engram/store/point_cache.py): it moves with `value()` except for this process's own
commits of scoped writes only and for notifications with the payload 'scoped', which migration 0016 sends
for a change to `spaces` that only such a write makes (a generation bump). Under a memory-write load,
from this node or any other, the keys stay remembered, as on SQLite (engram/store/change_counter.py).
"""

from __future__ import annotations

import logging
import threading

import psycopg

log = logging.getLogger(__name__)
CHANNEL = "engram_changes"
SCOPED = "scoped"  # the payload of a change only a space-scoped write makes (migration 0016)
_RETRY_S = 1.0


class PgChangeFeed:
    def __init__(self, url: str):
        self._url = url
        self._lock = threading.Lock()
        self._count = 0
        self._keys_count = 0
        self._listening = False
        self._stop = threading.Event()
        self._connected = threading.Event()
        self._thread = threading.Thread(target=self._run, name="engram-postgres-changes", daemon=True)
        self._thread.start()

    def wait_listening(self, timeout: float) -> bool:
        """True once the LISTEN is in place (the store waits for it at start-up, briefly)."""
        return self._connected.wait(timeout)

    def value(self) -> int:
        with self._lock:
            return self._count if self._listening else -1

    def keys_value(self) -> int:
        """The count of changes that could alter a remembered API-key lookup (see the module doc)."""
        with self._lock:
            return self._keys_count if self._listening else -1

    def bump(self, *, scoped: bool = False) -> None:
        """`scoped`: the commit held only space-scoped writes (`Store.write_to`), or the notification said
        so."""
        with self._lock:
            self._count += 1
            if not scoped:
                self._keys_count += 1

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                with psycopg.connect(self._url, autocommit=True) as conn:
                    conn.execute(f"LISTEN {CHANNEL}")
                    with self._lock:  # anything may have changed while nobody listened
                        self._count += 1
                        self._keys_count += 1
                        self._listening = True
                    self._connected.set()
                    while not self._stop.is_set():
                        for notice in conn.notifies(timeout=0.5):
                            self.bump(scoped=notice.payload == SCOPED)
            except Exception as exc:  # noqa: BLE001 - reconnect after anything until closed
                if not self._stop.is_set():
                    log.warning("the change listener lost its connection: %r", exc)
            finally:
                with self._lock:
                    self._listening = False
            self._stop.wait(_RETRY_S)
