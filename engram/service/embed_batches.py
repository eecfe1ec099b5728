"""Document embeds that queue together share one worker call (docs/internals.md#embedding-batches).

Every write that lacks a vector embeds its text before its transaction opens (`embed_missing`). Under a
write load each of those was its own worker call: a queue hop, a concurrent future, a wake-up of the loop
per write, which cost more of the loop's time than the hashing embedder's work and keeps a model from
embedding several texts in one run. Here an embed of a few texts joins the batch of the same embedder that
is still waiting in the worker queue, if there is one with room; otherwise it starts one and queues it.
The worker that takes a batch closes it, embeds every member's texts in one call and hands each member its
rows with one loop callback. Nothing waits to fill a batch: a lone write's batch has one member and runs as
soon as a worker is free, exactly as the call it replaces.

A failure in a batch of several members runs each member again on its own (on the same worker), so a
member fails only for its own texts, as it did alone. A model's vectors for a text do not depend on the
texts beside it beyond float rounding; imports already embed up to 64 texts per call.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import weakref
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..workers import WorkerPool

MAX_TEXTS = 64  # the texts of one batch at most (embed_documents' DOCUMENT_BATCH)

Member = tuple[asyncio.Future[np.ndarray], int, int]  # its future, and its rows [start, end) of the batch


class _Batch:
    __slots__ = ("_lock", "closed", "embedder", "loop", "members", "texts")

    def __init__(self, loop: asyncio.AbstractEventLoop, embedder: Any):
        self.loop, self.embedder = loop, embedder
        self._lock = threading.Lock()  # orders a join against the worker closing the batch
        self.closed = False
        self.texts: list[str] = []
        self.members: list[Member] = []

    def join(self, texts: Sequence[str]) -> asyncio.Future[np.ndarray] | None:
        """The member's future, or None once a worker has taken the batch or it has no room left."""
        with self._lock:
            if self.closed or len(self.texts) + len(texts) > MAX_TEXTS:
                return None
            future = self.loop.create_future()
            start = len(self.texts)
            self.texts += texts
            self.members.append((future, start, len(self.texts)))
            return future

    def _close(self) -> tuple[list[str], list[Member]]:
        with self._lock:
            self.closed = True
            texts, members, self.texts, self.members = self.texts, self.members, [], []
        return texts, members

    def run(self) -> None:  # on a worker thread
        texts, members = self._close()
        embedder, self.embedder = self.embedder, None  # a closed batch keeps no model alive
        outcomes: list[tuple[Member, Any, BaseException | None]]
        try:
            rows = embedder.embed(texts, "document")
            outcomes = [(m, rows[m[1] : m[2]], None) for m in members]
        except BaseException as exc:  # noqa: BLE001 - reported to the waiters, as a future would
            if len(members) == 1:
                outcomes = [(members[0], None, exc)]
            else:  # each member again alone: it fails only for its own texts
                outcomes = [_alone(embedder, texts, m) for m in members]
        self._report(outcomes)

    def abandon(self) -> None:
        """The pool shut down before the batch ran."""
        _, members = self._close()
        self.embedder = None
        self._report([(m, None, RuntimeError("the worker pool shut down")) for m in members])

    def _report(self, outcomes: list[tuple[Member, Any, BaseException | None]]) -> None:
        with contextlib.suppress(RuntimeError):  # the loop is closed: nobody is waiting any more
            self.loop.call_soon_threadsafe(_deliver, outcomes)


def _alone(embedder: Any, texts: list[str], member: Member) -> tuple[Member, Any, BaseException | None]:
    try:
        return member, embedder.embed(texts[member[1] : member[2]], "document"), None
    except BaseException as exc:  # noqa: BLE001
        return member, None, exc


def _deliver(outcomes: list[tuple[Member, Any, BaseException | None]]) -> None:
    for (future, _, _), rows, exc in outcomes:
        if future.done():  # its caller was cancelled meanwhile
            continue
        if exc is not None:
            future.set_exception(exc)
        else:
            future.set_result(rows)


# Per pool, the batch of each (loop, embedder) that callers may still join: the newest one started.
_open: weakref.WeakKeyDictionary[WorkerPool, dict[tuple[int, int], _Batch]] = weakref.WeakKeyDictionary()


async def embed_batched(pool: WorkerPool, embedder: Any, texts: Sequence[str]) -> np.ndarray:
    """`embedder.embed(texts, "document")` on a worker, in one call with the other embeds queued meanwhile
    (at most MAX_TEXTS texts)."""
    loop = asyncio.get_running_loop()
    batches = _open.get(pool)
    if batches is None:
        batches = _open.setdefault(pool, {})
    key = (id(loop), id(embedder))
    batch = batches.get(key)
    # The ids name this loop and embedder while the batch is open (it holds both); a closed one joins nothing.
    future = batch.join(texts) if batch is not None and batch.loop is loop else None
    if future is None:
        batch = _Batch(loop, embedder)
        future = batch.join(texts)
        if future is None:
            raise ValueError(f"at most {MAX_TEXTS} texts per embed")
        batches[key] = batch
        pool.enqueue(batch)
    return await future
