"""`SavedIndexLoader`: cold loads of saved index files, run back to back on the load pool, handed to the event
loop in batches (docs/benchmarks.md#warm-searches-while-other-spaces-load).

Why not one task and one executor job per load: profiled with `py-spy --gil` while 5,000 saved indexes
loaded, the event loop held the GIL two thirds of the time, nearly all of it per-load bookkeeping (creating
the task, `run_in_executor`'s futures and their chaining, one loop wake-up per finished load), and a warm
search's next step waited behind that queue. Here a load request is an entry in a deque; load threads
drain the deque and do everything that does not touch the manager's state (read, verify, decode, measure
the index's size, decide whether it needs compacting) and post finished loads to the loop: at most one
wake-up is outstanding however many loads finish meanwhile, and one loop callback adopts at most `batch`
of them before the loop gets back to other work.

Loads also give way to searches: a load thread waits before each load while searches are in flight
(`searching`/`idle`), so the warm path's hops between threads do not have to win the GIL from a load that
is being decoded. The wait is bounded (`yield_s`) so a never-idle server still loads.
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import functools
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engram.search import persist
from engram.search.index import IndexTuning, SpaceIndex
from engram.workers import WorkerPool

log = logging.getLogger(__name__)

Key = tuple[str, str]  # (space uri, model key)


@dataclass
class LoadRequest:
    key: Key
    dims: int
    drops: int  # the space's drop count when the load was asked for (a later drop discards the result)
    future: asyncio.Future[Any]  # resolved by whoever adopts the outcome


@dataclass
class LoadOutcome:
    request: LoadRequest
    index: SpaceIndex | None = None  # None: no usable saved index, build from the store
    nbytes: int = 0
    needs_rebuild: bool = False
    error: BaseException | None = None
    prepared: Any = None  # what `prepare` made of the index off the loop (the manager's cache entry)


def settle(future: asyncio.Future[Any], task: asyncio.Task[Any]) -> None:
    """Pass a task's outcome on to a load's future (unless that was cancelled meanwhile)."""
    if future.done():
        return
    if task.cancelled():
        future.cancel()
    elif (error := task.exception()) is not None:
        future.set_exception(error)
    else:
        future.set_result(task.result())


class _Searching:
    """`SavedIndexLoader.searching()`'s context manager: one object reused by every search (a generator-based
    context manager and an Event.clear per search were a visible share of a search's loop time,
    docs/benchmarks.md#where-a-10k-search-spends-its-cpu)."""

    __slots__ = ("_loader",)

    def __init__(self, loader: SavedIndexLoader) -> None:
        self._loader = loader

    def __enter__(self) -> None:
        self._loader._search_started()

    def __exit__(self, *exc: object) -> None:
        self._loader._search_finished()


class SavedIndexLoader:
    """`prepare(index, request)` runs on the load thread; `install(outcome)` on the loop, its value resolves
    the load; `carry_on(request, index or None)` returns the task that builds or compacts instead."""

    def __init__(
        self,
        pool: WorkerPool,
        data_dir: Path | None,  # None: no saved files (the manager never asks for a load then)
        tuning: IndexTuning,
        *,
        prepare: Callable[[SpaceIndex, LoadRequest], Any],
        install: Callable[[LoadOutcome], Any],
        carry_on: Callable[[LoadRequest, SpaceIndex | None], asyncio.Task[Any]],
        batch: int = 32,
        yield_s: float = 0.005,
    ) -> None:
        self._pool = pool
        self._data_dir, self._tuning = data_dir, tuning
        self._prepare, self._install, self._carry_on = prepare, install, carry_on
        self._batch = batch
        self._yield_s = yield_s
        self._pending: collections.deque[LoadRequest] = collections.deque()
        self._finished: list[LoadOutcome] = []
        self._lock = threading.Lock()  # guards _pending, _finished, _drainers, _posted across threads
        self._drainers = 0
        self._posted = False  # a _deliver callback is scheduled on the loop
        self._held: asyncio.TimerHandle | None = None  # set while a delivery waits for searches to finish
        self._loop: asyncio.AbstractEventLoop | None = None
        self._searching = 0  # searches in flight (loop side only)
        self._idle = threading.Event()
        self._idle.set()
        self._searching_scope = _Searching(self)

    # ----- the loop side ---------------------------------------------------------------------------

    def request(self, key: Key, dims: int, drops: int) -> asyncio.Future[Any]:
        """Queue a load; the returned future gets whatever `adopt` sets on it."""
        self._loop = asyncio.get_running_loop()
        request = LoadRequest(key, dims, drops, self._loop.create_future())
        with self._lock:
            self._pending.append(request)
            start = self._drainers < self._pool.size
            if start:
                self._drainers += 1
        if start:
            self._start_drainer()
        return request.future

    def searching(self) -> _Searching:
        """Around a warm search (`with loader.searching():`): loads wait while any is in flight."""
        return self._searching_scope

    def _search_started(self) -> None:
        self._searching += 1
        if self._searching == 1:  # the event stays clear until the last search in flight finishes
            self._idle.clear()

    def _search_finished(self) -> None:
        self._searching -= 1
        if not self._searching:
            self._idle.set()
            if self._held is not None:  # a delivery waited for the searches to finish
                self._on_loop().call_soon(self._deliver)

    def _on_loop(self) -> asyncio.AbstractEventLoop:
        assert self._loop is not None  # set by the first request, before any load, delivery or search ends
        return self._loop

    def _start_drainer(self) -> None:
        try:
            job = self._pool.start(self._drain)
        except RuntimeError as exc:  # the pool is shut down: nothing will load, say so to every waiter
            self._drainer_gone(exc)
            return
        job.add_done_callback(self._drainer_cancelled)

    def _drainer_cancelled(self, job: concurrent.futures.Future[Any]) -> None:
        if job.cancelled():  # the pool shut down before the drainer ran
            self._drainer_gone(RuntimeError("the index load pool was shut down"))

    def _drainer_gone(self, exc: BaseException) -> None:
        with self._lock:
            self._drainers -= 1
            if self._drainers:
                return  # another drainer still serves the queue
            failed = [LoadOutcome(request, error=exc) for request in self._pending]
            self._pending.clear()
        if failed and self._loop is not None and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self._adopt, failed)

    def _adopt(self, outcomes: list[LoadOutcome]) -> None:
        """On the loop: install each loaded index; a failure goes to the load's waiters, and a missing file
        or an index that needs compacting carries on as a task (a build from the store, a compaction)."""
        for outcome in outcomes:
            future = outcome.request.future
            if outcome.error is not None:
                log.warning("index load failed: %r", outcome.error)
                if not future.done():
                    future.set_exception(outcome.error)
            elif outcome.index is None or outcome.needs_rebuild:
                task = self._carry_on(outcome.request, outcome.index)
                task.add_done_callback(functools.partial(settle, future))
            else:
                entry = self._install(outcome)
                if not future.done():
                    future.set_result(entry)

    def _deliver(self, overdue: bool = False) -> None:
        if self._searching and not overdue:
            # Searches first: adopt when they are done, or after `yield_s` at the latest.
            if self._held is None:
                self._held = self._on_loop().call_later(self._yield_s, self._deliver, True)
            return
        if self._held is not None:
            self._held.cancel()
            self._held = None
        with self._lock:
            batch, self._finished = self._finished[: self._batch], self._finished[self._batch :]
            self._posted = bool(self._finished)
        if self._posted:  # more than a batch: let other callbacks run before the next one
            self._on_loop().call_soon(self._deliver)
        self._adopt(batch)

    # ----- the load threads ------------------------------------------------------------------------

    def _read(self, request: LoadRequest) -> LoadOutcome:
        """The saved index, measured and checked here, so adopting it costs the loop no FAISS call (each
        one gives the GIL away and has to win it back)."""
        space, model_key = request.key
        try:
            assert self._data_dir is not None  # loads are asked for only with a data dir
            index = persist.load(self._data_dir, space, model_key, request.dims, self._tuning)
            if index is None:
                return LoadOutcome(request)
            prepared = self._prepare(index, request)
            return LoadOutcome(request, index, index.nbytes(), index.needs_rebuild(0), prepared=prepared)
        except Exception as exc:  # noqa: BLE001 - handed to the load's waiters, as a failed task would be
            return LoadOutcome(request, error=exc)

    def _drain(self) -> None:
        while True:
            with self._lock:
                if not self._pending:
                    self._drainers -= 1
                    return
                request = self._pending.popleft()
            self._idle.wait(self._yield_s)
            outcome = self._read(request)
            with self._lock:
                self._finished.append(outcome)
                post, self._posted = not self._posted, True
            if post:
                try:
                    self._on_loop().call_soon_threadsafe(self._deliver)
                except RuntimeError:  # the loop is closed: nobody is waiting any more
                    return
