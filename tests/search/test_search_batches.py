"""Search batches (engram/search/search_job.py): unfiltered searches of one exact index that queue while the
workers are busy run as one scan and each get their own answer; cancelling one touches no other; filtered
searches and small groups go alone; a shut-down pool cancels what was queued and gives every share back."""

import asyncio
import threading

import numpy as np
import pytest
from support.search_fakes import MODEL, SPACE, D, seeded
from support.search_fakes import until as _until

from engram.config import SearchConfig
from engram.search.filters import Filters
from engram.search.manager import IndexManager
from engram.search.search_job import MAX_BATCH, MIN_BATCH
from engram.workers import WorkerPool


class _Occupied:
    """A pool whose workers (one by default) are held until `release()`, and a loaded manager on it."""

    def __init__(self, n: int = 300, workers: int = 1):
        self.pool = WorkerPool(workers, name="test-batches")
        self.source, self.vectors = seeded(n=n)
        self.manager = IndexManager(self.source, self.pool, None, SearchConfig.of())
        self._release = threading.Event()

    async def load(self):
        await self.manager.search(SPACE, MODEL, D, self.vectors[0], 1)
        self.entry = self.manager._entries[(SPACE, MODEL)]
        self.scans: list[int] = []  # batch sizes seen by search_many
        many = self.entry.index.search_many

        def recording(queries, ks, masks=None):
            self.scans.append(len(ks))
            return many(queries, ks, masks)

        self.entry.index.search_many = recording
        busy = [threading.Event() for _ in range(self.pool.size)]
        self.blockers = [self.pool.start(lambda e=e: (e.set(), self._release.wait(60))) for e in busy]
        await _until(lambda: all(e.is_set() for e in busy), "every worker is taken")

    def release(self):
        self._release.set()
        for blocker in self.blockers:
            blocker.result(60)

    def close(self):
        self._release.set()
        self.pool.close()


@pytest.fixture
async def occupied():
    held = _Occupied()
    await held.load()
    yield held
    held.close()


async def test_searches_queued_behind_a_busy_worker_run_as_one_scan(occupied):
    m = occupied.manager
    hydrated = []

    def hydrate(result):  # runs in the worker, once per member, like the service's hydrate
        hydrated.append(threading.get_ident())
        return result.row_ids.tolist()

    queries = occupied.vectors[10:16]
    calls = [asyncio.create_task(m.search(SPACE, MODEL, D, q, 5, then=hydrate)) for q in queries]
    await _until(lambda: occupied.entry.lock._readers == len(queries), "every search holds its share")
    assert occupied.entry.busy == len(queries)
    occupied.release()
    answers = await asyncio.wait_for(asyncio.gather(*calls), 60)
    assert occupied.scans == [len(queries)]
    assert (m.batch_stats.scans, m.batch_stats.scanned) == (1, len(queries))  # exported on /metrics
    for q, got in zip(queries, answers, strict=True):
        alone = occupied.entry.index.search(q, 5, None, float("inf"))
        assert got == alone.row_ids.tolist()
    assert len(hydrated) == len(queries) and threading.get_ident() not in hydrated
    assert occupied.entry.lock._readers == 0 and occupied.entry.busy == 0
    assert occupied.entry.batch.index is None  # a finished batch does not keep the index alive


async def test_a_member_cancelled_before_the_scan_leaves_the_others_answered(occupied):
    m = occupied.manager
    queries = occupied.vectors[20 : 20 + MIN_BATCH + 1]
    calls = [asyncio.create_task(m.search(SPACE, MODEL, D, q, 3)) for q in queries]
    await _until(lambda: occupied.entry.lock._readers == len(calls), "every search holds its share")
    calls[1].cancel()
    await _until(lambda: occupied.entry.lock._readers == len(calls) - 1, "the cancelled share came back")
    occupied.release()
    with pytest.raises(asyncio.CancelledError):
        await calls[1]
    rest = await asyncio.wait_for(asyncio.gather(*calls[:1], *calls[2:]), 60)
    assert [len(r.row_ids) for r in rest] == [3] * len(rest)
    assert occupied.scans == [len(rest)]
    assert occupied.entry.lock._readers == 0 and occupied.entry.busy == 0


async def test_filtered_searches_and_groups_below_min_batch_go_alone(occupied):
    m = occupied.manager
    author = Filters(author="did:plc:1")
    filtered = [asyncio.create_task(m.search(SPACE, MODEL, D, q, 3, author)) for q in occupied.vectors[30:36]]
    plain = [
        asyncio.create_task(m.search(SPACE, MODEL, D, q, 3))
        for q in occupied.vectors[40 : 40 + MIN_BATCH - 1]
    ]
    await _until(lambda: occupied.entry.lock._readers == len(filtered) + len(plain), "all hold shares")
    occupied.release()
    got_filtered = await asyncio.wait_for(asyncio.gather(*filtered), 60)
    got_plain = await asyncio.wait_for(asyncio.gather(*plain), 60)
    assert occupied.scans == []  # neither group went through search_many
    # a narrow filter (75 of 300 rows) runs alone, and the 3 others are too few to share a scan; one more
    # ran alone before: the fixture's first search, which loaded the index
    assert (m.batch_stats.scans, m.batch_stats.alone) == (0, 1 + len(filtered) + len(plain))
    rows = {int(r): i for i, r in enumerate(occupied.entry.index.row_ids)}
    authors = occupied.entry.index.columns.take(np.arange(len(rows)))[0]
    assert all(authors[rows[int(r)]] == "did:plc:1" for got in got_filtered for r in got.row_ids)
    assert [len(r.row_ids) for r in got_plain] == [3] * len(plain)


async def test_broad_filters_share_the_scan_and_narrow_ones_run_alone(occupied):
    m = occupied.manager
    # 150 and 75 of the 300 rows: the scan runs since (MIN_BATCH - 1) + 2 x 0.5 = MIN_BATCH full scans'
    # worth share it
    even, author = Filters(tags=("even",)), Filters(author="did:plc:2")
    plan = [None] * (MIN_BATCH - 1) + [even, even, author, author]
    queries = occupied.vectors[120 : 120 + len(plan)]
    calls = [
        asyncio.create_task(m.search(SPACE, MODEL, D, q, 4, f)) for q, f in zip(queries, plan, strict=True)
    ]
    await _until(lambda: occupied.entry.lock._readers == len(calls), "every search holds its share")
    occupied.release()
    answers = await asyncio.wait_for(asyncio.gather(*calls), 60)
    assert occupied.scans == [MIN_BATCH + 1]  # the unfiltered and the broad ones
    assert (m.batch_stats.scans, m.batch_stats.scanned, m.batch_stats.alone) == (1, MIN_BATCH + 1, 1 + 2)
    for q, f, got in zip(queries, plan, answers, strict=True):
        alone = occupied.entry.index.search(q, 4, f, float("inf"))
        assert got.row_ids.tolist() == alone.row_ids.tolist() and got.scores.tolist() == alone.scores.tolist()


async def test_a_hydrate_error_reaches_only_its_own_caller(occupied):
    m = occupied.manager

    def fails_for_the_second(result):
        if int(result.row_ids[0]) == second:
            raise RuntimeError("hydrate failed")
        return len(result.row_ids)

    queries = occupied.vectors[50 : 50 + MIN_BATCH]
    second = int(occupied.entry.index.search(queries[1], 1, None, float("inf")).row_ids[0])
    calls = [asyncio.create_task(m.search(SPACE, MODEL, D, q, 2, then=fails_for_the_second)) for q in queries]
    await _until(lambda: occupied.entry.lock._readers == len(calls), "every search holds its share")
    occupied.release()
    outcomes = await asyncio.wait_for(asyncio.gather(*calls, return_exceptions=True), 60)
    assert isinstance(outcomes[1], RuntimeError)
    assert [o for i, o in enumerate(outcomes) if i != 1] == [2] * (len(calls) - 1)
    assert occupied.scans == [len(calls)]


async def test_a_pool_shut_down_under_a_queued_batch_cancels_it_and_frees_every_share(occupied):
    m = occupied.manager
    calls = [asyncio.create_task(m.search(SPACE, MODEL, D, q, 3)) for q in occupied.vectors[60:66]]
    await _until(lambda: occupied.entry.lock._readers == len(calls), "every search holds its share")
    closing = asyncio.get_running_loop().run_in_executor(None, occupied.close)  # joins the held worker
    outcomes = await asyncio.wait_for(asyncio.gather(*calls, return_exceptions=True), 60)
    await closing
    assert all(isinstance(o, asyncio.CancelledError) for o in outcomes)
    assert occupied.entry.lock._readers == 0 and occupied.entry.busy == 0 and occupied.scans == []
    assert (
        m.batch_stats.scans == m.batch_stats.scanned == 0 and m.batch_stats.alone == 1
    )  # only the loading search
    with pytest.raises(RuntimeError, match="shut down"):
        await m.search(SPACE, MODEL, D, occupied.vectors[70], 3)
    assert occupied.entry.lock._readers == 0 and occupied.entry.busy == 0


async def test_a_full_batch_closes_and_the_next_search_starts_another(occupied):
    m = occupied.manager
    calls = [
        asyncio.create_task(m.search(SPACE, MODEL, D, q, 2))
        for q in occupied.vectors[100 : 100 + MAX_BATCH + 5]
    ]
    await _until(lambda: occupied.entry.lock._readers == len(calls), "every search holds its share")
    occupied.release()
    answers = await asyncio.wait_for(asyncio.gather(*calls), 60)
    assert sorted(occupied.scans) == [5, MAX_BATCH] and [len(a.row_ids) for a in answers] == [2] * len(calls)


async def test_a_scan_that_cannot_run_falls_back_to_lone_searches_for_good(occupied, monkeypatch, caplog):
    from engram.search import search_job

    monkeypatch.setattr(search_job, "_scan_works", True)  # restored after the test: the switch is per process

    def broken(queries, ks, masks=None):
        occupied.scans.append(len(ks))
        raise RuntimeError("onnxruntime could not run the scan graph")

    occupied.entry.index.search_many = broken
    m = occupied.manager
    queries = occupied.vectors[200 : 200 + MIN_BATCH + 1]
    calls = [asyncio.create_task(m.search(SPACE, MODEL, D, q, 3)) for q in queries]
    await _until(lambda: occupied.entry.lock._readers == len(calls), "every search holds its share")
    occupied.release()
    answers = await asyncio.wait_for(asyncio.gather(*calls), 60)
    for q, got in zip(queries, answers, strict=True):
        assert got.row_ids.tolist() == occupied.entry.index.search(q, 3, None, float("inf")).row_ids.tolist()
    assert occupied.scans == [len(queries)] and search_job._scan_works is False
    assert "batched scans are off" in caplog.text
    assert (m.batch_stats.scans, m.batch_stats.alone) == (0, 1 + len(queries))


async def test_members_that_do_not_share_a_scan_run_on_other_workers_too():
    """Narrow filters never share a scan: they go back to the queue one by one, so a second worker runs
    them alongside the first instead of one worker running them in turn."""
    held = _Occupied(workers=2)
    try:
        await held.load()
        m, entry, vectors = held.manager, held.entry, held.vectors
        seen, other_started = [], threading.Event()

        def hydrate(result):
            seen.append(threading.get_ident())
            if len(seen) == 1:  # the first waits until another worker has started one of the rest
                assert other_started.wait(60), "no other worker ran a member"
            else:
                other_started.set()
            return len(result.row_ids)

        narrow = Filters(author="did:plc:3")  # 75 of 300 rows: runs alone
        calls = [
            asyncio.create_task(m.search(SPACE, MODEL, D, q, 2, narrow, then=hydrate)) for q in vectors[1:7]
        ]
        await _until(lambda: entry.lock._readers == len(calls), "every search holds its share")
        held.release()
        assert await asyncio.wait_for(asyncio.gather(*calls), 60) == [2] * len(calls)
        assert len(set(seen)) == 2 and m.batch_stats.alone == 1 + len(calls) and held.scans == []
    finally:
        held.close()
