"""The warm search's worker job and its completion on the loop: the hot path of `IndexManager.search`, which
takes its read share synchronously and gives it back from the worker's report on the loop
(docs/internals.md#concurrency).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import logging
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from engram.search.filters import Filters
from engram.search.index import SHARED_SCAN_MIN_FRACTION, Scan, SearchResult, SpaceIndex
from engram.search.split_scan import SplitScan, split_scanner, worth_splitting
from engram.workers import Claimable, WorkerPool

# A member's outcome, as the worker reports it to the loop: (result, None) or (None, the error).
Outcome = tuple[Any, BaseException | None]


def search_job(
    index: SpaceIndex,
    query: np.ndarray,
    k: int,
    filters: Filters | None,
    deadline: float,
    then: Callable[[SearchResult], Any] | None,
) -> Any:
    result = index.search(query, k, filters, deadline)
    return then(result) if then is not None else result


def start_search(
    pool: WorkerPool,
    stats: BatchStats,
    entry: Any,
    query: np.ndarray,
    k: int,
    filters: Filters | None,
    deadline: float,
    then: Callable[[SearchResult], Any] | None,
    split_min_rows: int,
) -> asyncio.Future[Any]:
    """Queue a warm search whose read share the caller holds; the returned future resolves on the loop.

    No task, shield or concurrent Future: the read share is given back by the worker's report on the loop,
    i.e. only once no worker thread uses the index. Cancelling the future cancels the search only if it has
    not started (then the index was never touched); a running one runs to the end and releases the share
    then (docs/internals.md#concurrency). Unfiltered searches of an exact index join the index's queued
    `SearchBatch` if there is one (docs/internals.md#batched-scans)."""
    loop = asyncio.get_running_loop()
    answer: asyncio.Future[Any] = loop.create_future()
    try:
        if batchable(entry.index):
            job: Any = BatchMember(entry, query, k, filters, deadline, then, answer)
            batch = entry.batch
            if batch is None or batch.index is not entry.index or not batch.join(job):
                batch = SearchBatch(
                    loop,
                    pool,
                    entry.index,
                    stats,
                    may_split=worth_splitting(pool, entry.index, split_min_rows),
                )
                batch.join(job)
                pool.enqueue(batch)  # raises if the pool is shut down: then no later search may join it
                entry.batch = batch
        else:
            args = (entry.index, query, k, filters, deadline, then)
            job = pool.dispatch(loop, search_job, args, functools.partial(finish_search, entry, answer))
    except BaseException:  # the pool is shut down: nothing will run, give the share back now
        release_share(entry)
        raise
    answer.add_done_callback(lambda a: cancel_search(entry, job) if a.cancelled() else None)
    return answer


def release_share(entry: Any) -> None:
    """Give back the read share of the manager's cache entry (`Entry` (engram/search/cache.py): its lock and busy count)."""
    entry.lock.release_read()
    entry.busy -= 1


def finish_search(entry: Any, answer: asyncio.Future[Any], result: Any, error: BaseException | None) -> None:
    """On the loop once the worker is done with the index (`WorkerPool.dispatch`'s report, or the pool shut
    down before the job ran)."""
    release_share(entry)
    if answer.done():  # the caller gave up meanwhile
        return
    if isinstance(error, asyncio.CancelledError):
        answer.cancel()
    elif error is not None:
        answer.set_exception(error)
    else:
        answer.set_result(result)


def cancel_search(entry: Any, job: Any) -> None:
    """The caller gave up: a job that had not started never will, so its read share comes back now; a
    running one gives it back through `finish_search` when the worker is done with the index."""
    if job.cancel():
        release_share(entry)


# ----- batches: unfiltered searches of one exact index, queued while the workers were busy ------------------

# Measured (docs/benchmarks.md#int8-lone-scans): against lone int8 scans, a batched scan breaks even at 4
# queries on 10k rows and at 5 on 100k, and wins from 5 and 6 up.
MIN_BATCH = 5
# A full batch closes and the next search starts another: every member waits for the whole scan, and the
# scores of one block (batch x 1,024 floats) stay cache-sized.
MAX_BATCH = 64
_scan_works = True  # until a batched scan fails in this process (see _scan)
log = logging.getLogger(__name__)


@dataclass
class BatchStats:
    """Plain counters, updated on the loop and exported on /metrics (engram/metrics.py)."""

    scans: int = 0  # batched scans run
    scanned: int = 0  # searches answered by them
    alone: int = 0  # searches of batches below MIN_BATCH, run one by one
    split: int = 0  # lone searches whose scan was split over two workers (engram/search/split_scan.py)
    taken_back: int = 0  # of those, the ones whose owner scanned every range (the helper never started)


def batchable(index: SpaceIndex) -> bool:
    return index.coarse is None


class BatchMember(Claimable):
    """One caller's search inside a `SearchBatch`. As for `engram.workers.Job`, whichever of the worker
    (closing the batch) and `cancel` claims it first owns the search's outcome."""

    __slots__ = ("answer", "context", "deadline", "entry", "filters", "k", "query", "then")

    def __init__(
        self,
        entry: Any,
        query: np.ndarray,
        k: int,
        filters: Filters | None,
        deadline: float,
        then: Callable[[SearchResult], Any] | None,
        answer: asyncio.Future[Any],
    ) -> None:
        super().__init__()
        self.entry, self.query, self.k, self.filters, self.deadline = entry, query, k, filters, deadline
        self.then, self.answer = then, answer
        self.context = contextvars.copy_context()

    cancel = Claimable.claim  # True if the search had not started: it never will

    def finish(self, result: Any) -> Outcome:  # on the worker
        if self.then is None:
            return result, None
        try:
            return self.context.run(self.then, result), None
        except BaseException as exc:  # noqa: BLE001 - reported to the waiter, as a lone search's job does
            return None, exc


class SearchBatch:
    """Searches that arrive for the same exact index while this batch waits in the worker queue join it. The
    worker that takes it closes it and runs the members that may share one scan (`SpaceIndex.search_many`)
    together, if they are enough to pay for it; every other member goes back to the queue on its own, so
    idle workers run them alongside instead of one worker running them in turn. Nothing waits to fill a
    batch: at c=1 a batch has one member and runs as soon as a worker is free, so a lone search pays nothing
    for this (docs/internals.md#batched-scans)."""

    __slots__ = ("_lock", "_loop", "_members", "_pool", "_stats", "index", "may_split")

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        pool: WorkerPool,
        index: SpaceIndex,
        stats: BatchStats,
        members: Iterable[BatchMember] = (),
        may_split: bool | None = False,
    ) -> None:
        """`may_split`: whether a lone member may split its scan over an idle worker (`worth_splitting`:
        True, False, or None when the worker should look for a free core again; engram/search/split_scan.py)."""
        self._loop, self._pool, self._stats = loop, pool, stats
        self.may_split = may_split
        self._lock = threading.Lock()  # orders a join against the worker closing the batch
        self._members: list[BatchMember] | None = list(members)
        self.index: SpaceIndex | None = index

    def join(self, member: BatchMember) -> bool:
        """False once a worker has taken the batch, or it is full: the caller starts a new one."""
        with self._lock:
            if self._members is None or len(self._members) >= MAX_BATCH:
                return False
            self._members.append(member)
            return True

    def _close(self) -> tuple[SpaceIndex | None, list[BatchMember]]:
        """Take the members. The batch lets go of the index here: the entry keeps pointing at its last
        batch, which must not keep a replaced index alive."""
        with self._lock:
            index, members, self.index, self._members = self.index, self._members or [], None, None
        return index, members

    def run(self) -> None:  # on a worker thread
        index, members = self._close()
        assert index is not None  # only closing the batch lets go of it, and a batch runs once
        rest = _shared_scan(index, members, self._report) if len(members) >= MIN_BATCH else members
        for member in rest[1:]:  # a member's own item: an idle worker may take it
            try:
                self._pool.enqueue(SearchBatch(self._loop, self._pool, index, self._stats, [member]))
            except RuntimeError:  # the pool is shutting down: nothing else will run it
                self._run_alone(index, member)
        if rest:
            self._run_alone(index, rest[0], self.may_split if len(members) == 1 else False)

    def _run_alone(self, index: SpaceIndex, member: BatchMember, may_split: bool | None = False) -> None:
        """A lone search, its scan split over an idle worker if the loop found that worth it when it queued
        the search and a worker and a core are free now (engram/search/split_scan.py)."""
        if member.claim():  # else it was cancelled while it waited
            split = split_scanner(self._pool, index, may_split)
            outcome = _alone(index, member, split)
            self._report([member], [outcome], 0, split if split is not None and split.ran else None)

    def abandon(self) -> None:
        """The pool shut down before the batch ran: its members are cancelled."""
        _, members = self._close()
        members = [member for member in members if member.claim()]
        self._report(members, [(None, asyncio.CancelledError())] * len(members), None)

    def _report(
        self,
        members: list[BatchMember],
        outcomes: list[Outcome],
        scanned: int | None,
        split: SplitScan | None = None,
    ) -> None:
        """`scanned`: how many members shared one scan; None when the batch never ran. `split`: the lone
        member's `SplitScan`, if its scan was split."""
        with contextlib.suppress(RuntimeError):  # the loop is closed: nobody is waiting any more
            self._loop.call_soon_threadsafe(_finish_members, self._stats, scanned, members, outcomes, split)


def _shared_scan(
    index: SpaceIndex,
    members: list[BatchMember],
    report: Callable[[list[BatchMember], list[Outcome], int | None], None],
) -> list[BatchMember]:
    """Run the members that may share one scan as one, and report them; returns the others. A member may
    share it when its filters leave at least SHARED_SCAN_MIN_FRACTION of the rows (`SpaceIndex.scan_mask`);
    the scan runs when those members' lone scans would add up to MIN_BATCH full ones (a member allowing half
    the rows counts half), which is when it pays for decoding the whole index once."""
    if index.coarse is not None or not _scan_works:
        return members
    plans = [index.scan_mask(m.filters) for m in members]
    shared = [i for i, (fraction, _) in enumerate(plans) if fraction >= SHARED_SCAN_MIN_FRACTION]
    if sum(plans[i][0] for i in shared) < MIN_BATCH:
        return members
    group = [i for i in shared if members[i].claim()]  # the rest were cancelled meanwhile
    found = _scan(index, [members[i] for i in group], [plans[i][1] for i in group])
    if found is None:  # the scan cannot run here: they go alone, already claimed
        outcomes = [_alone(index, members[i]) for i in group]
        report([members[i] for i in group], outcomes, 0)
    else:
        outcomes = [members[i].finish(result) for i, result in zip(group, found, strict=True)]
        report([members[i] for i in group], outcomes, len(group))
    taken = set(shared)
    return [m for i, m in enumerate(members) if i not in taken]


def _alone(index: SpaceIndex, member: BatchMember, scan: Scan | None = None) -> Outcome:
    try:
        return member.finish(index.search(member.query, member.k, member.filters, member.deadline, scan))
    except BaseException as exc:  # noqa: BLE001 - reported to the waiter
        return None, exc


def _scan(
    index: SpaceIndex, members: list[BatchMember], masks: list[np.ndarray | None]
) -> list[SearchResult] | None:
    """The members' results from one batched scan, or None when the scan itself cannot run here (the
    onnxruntime session fails to load or run): then they run as lone searches, and so does every later
    batch of this process, after one logged error. A search is never failed for the batching's sake."""
    global _scan_works
    try:
        return index.search_many(np.stack([m.query for m in members]), [m.k for m in members], masks)
    except Exception:  # logged once; the lone path answers instead
        _scan_works = False
        log.exception("batched scans are off in this process: the scan failed, searches run one by one")
        return None


def _finish_members(
    stats: BatchStats,
    scanned: int | None,
    members: list[BatchMember],
    outcomes: list[Outcome],
    split: SplitScan | None = None,
) -> None:
    if scanned is not None:  # None: the batch never ran
        stats.scans += 1 if scanned else 0
        stats.scanned += scanned
        stats.alone += len(members) - scanned
    if split is not None:
        stats.split += 1
        stats.taken_back += split.taken_back
    for member, (result, error) in zip(members, outcomes, strict=True):
        finish_search(member.entry, member.answer, result, error)
