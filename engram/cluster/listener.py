"""Catching the owner's indexes up with writes other nodes commit.

Any node writes to the shared store; the store's trigger sends `NOTIFY engram_space_write, '<space>'` when
the write commits (migration 0008 of the PostgreSQL store). Each node LISTENs on a dedicated connection (a LISTEN
connection can run nothing else) and, for a space it owns, applies the store's delta to the loaded index
right away, so the next search finds it current. Searches still compare the store generation before
answering, so a lost notification (connection dropped, node restarting) costs latency, never correctness
(docs/scale-out.md#writes-from-any-node).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

import psycopg

log = logging.getLogger(__name__)
WRITE_CHANNEL = "engram_space_write"  # the channel the store's write trigger notifies


async def listen_for_writes(
    database_url: str, owned: Callable[[str], bool], catch_up: Callable[[str], Awaitable[None]], on_owned=None
) -> None:
    """Run until cancelled; reconnects after a lost connection (1 s apart)."""
    pending: set[asyncio.Task] = set()
    while True:
        try:
            async with await psycopg.AsyncConnection.connect(database_url, autocommit=True) as conn:
                await conn.execute(f"LISTEN {WRITE_CHANNEL}")
                async for note in conn.notifies():
                    if not owned(note.payload):
                        continue
                    if on_owned is not None:
                        on_owned()
                    task = asyncio.ensure_future(_catch_up(catch_up, note.payload))
                    pending.add(task)
                    task.add_done_callback(pending.discard)
        except Exception as exc:  # noqa: BLE001 - reconnect after anything but cancellation
            log.warning("write listener lost its connection: %r", exc)
            await asyncio.sleep(1)


async def _catch_up(catch_up: Callable[[str], Awaitable[None]], space: str) -> None:
    try:
        await catch_up(space)
    except Exception:  # a failed catch-up is retried by the next search's generation check
        log.exception("catching up %s after a write notification failed", space)
