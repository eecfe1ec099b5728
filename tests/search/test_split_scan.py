"""Split scans (engram/search/split_scan.py): a lone exact search split over an idle worker returns what the
whole scan returns, every range is scanned exactly once, a helper that never starts costs nothing but the
owner's time, errors reach the caller only once no thread scans the index, and the service splits only when
the index is big enough, a worker is idle and a core is free."""

import asyncio
import threading

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.search_fakes import MODEL, SPACE, D, filters_strategy, make_rows, oracle, seeded, unit
from support.search_fakes import until as _until

from engram.config import SearchConfig
from engram.search import split_scan
from engram.search.index import IndexTuning, SpaceIndex
from engram.search.manager import IndexManager
from engram.search.split_scan import PARTS, SplitScan, spare_core, split_scanner, worth_splitting
from engram.workers import WorkerPool


@pytest.fixture(scope="module")
def helper_pool():
    pool = WorkerPool(1, name="test-split")
    yield pool
    pool.close()


class _RecordingIndex(SpaceIndex):
    """Records the ranges scanned and by which thread; `fail_at` makes the scan of that range raise."""

    def __init__(self, dims, tuning=None):
        super().__init__(dims, tuning)
        self.scans: list[tuple[tuple[int, int] | None, int]] = []
        self.in_flight = 0
        self.fail_at: int | None = None

    def scan(self, q, want, mask, rows=None):
        self.in_flight += 1
        try:
            self.scans.append((rows, threading.get_ident()))
            if rows is not None and rows[0] == self.fail_at:
                raise ValueError("scan failed")
            return super().scan(q, want, mask, rows)
        finally:
            self.in_flight -= 1


def _index(n: int, d: int, seed: int, dead: float = 0.0, cls=SpaceIndex) -> SpaceIndex:
    rows = make_rows(n, d, seed)
    index = cls.build(
        rows, d, 1, IndexTuning(exact_max=1_000_000, gather_max=0)
    )  # filtered searches scan too
    rng = np.random.default_rng(seed)
    index.delete(rows.row_ids[rng.random(n) < dead])
    return index


@settings(max_examples=40, deadline=None)
@given(
    n=st.integers(1, 3000),
    seed=st.integers(0, 2**16),
    k=st.integers(1, 40),
    filters=filters_strategy,
    dead=st.floats(0, 0.4),
)
def test_a_split_search_returns_what_the_whole_scan_returns(helper_pool, n, seed, k, filters, dead):
    index = _index(n, 16, seed, dead)
    rng = np.random.default_rng(seed + 1)
    rows = make_rows(n, 16, seed)
    # a random query, and one tied on the duplicate rows 1 and 3 (ties break by row id on both paths)
    for query in (unit(rng.standard_normal(16)), unit(rows.vectors[min(1, n - 1)].astype(np.float32))):
        alone = index.search(query, k, filters, float("inf"))
        split = index.search(query, k, filters, float("inf"), SplitScan(helper_pool, index))
        assert split.row_ids.tolist() == alone.row_ids.tolist()
        assert split.scores.tolist() == alone.scores.tolist()


def test_a_split_search_of_near_ties_scans_again_while_its_ranges_leave_rows_open(helper_pool):
    # 400 rows a hair apart around the query, spread over every range: the int8 scores cannot order them,
    # so each range's candidates leave rows out that may still reach the top 10; the union's floor (the
    # highest of the ranges') sends the search back for more, and the split answers as the oracle does
    rng = np.random.default_rng(21)
    d = 32
    base = unit(rng.standard_normal(d).astype(np.float32))
    rows = make_rows(2_000, d, 21)
    vectors = rng.standard_normal((2_000, d)).astype(np.float32)
    vectors[::5] = base + 1e-3 * rng.standard_normal((400, d)).astype(np.float32)
    rows.vectors[:] = vectors.astype(rows.vectors.dtype)
    index = SpaceIndex.build(rows, d, 1, IndexTuning(exact_max=1_000_000))
    split = SplitScan(helper_pool, index)
    found = split(base, 36, None)
    stored = index.rows()[found.positions].astype(np.float64) @ base.astype(np.float64)
    assert not found.ruled_out(float(np.sort(stored)[-10]))
    got = index.search(base, 10, None, float("inf"), SplitScan(helper_pool, index))
    ids, scores = oracle(rows, base, 10)
    assert got.row_ids.tolist() == ids.tolist()
    np.testing.assert_array_equal(got.scores, scores)


def test_every_range_is_scanned_once_by_the_owner_or_the_idle_helper(helper_pool):
    index = _index(4000, 16, 1, cls=_RecordingIndex)
    split = SplitScan(helper_pool, index)
    index.search(unit(np.ones(16, dtype=np.float32)), 10, None, float("inf"), split)
    ranges = sorted(rows for rows, _ in index.scans)
    assert ranges == [(4000 * i // PARTS, 4000 * (i + 1) // PARTS) for i in range(PARTS)]
    assert split.ran and index.in_flight == 0


async def test_a_helper_that_never_starts_leaves_every_range_to_the_owner():
    pool = WorkerPool(1, name="test-split-busy")
    release = threading.Event()
    blocker = pool.start(release.wait, 60)  # the only worker is taken: the helper waits in the queue
    try:
        index = _index(2000, 16, 2, cls=_RecordingIndex)
        split = SplitScan(pool, index)
        q = unit(np.ones(16, dtype=np.float32))
        got = index.search(q, 10, None, float("inf"), split)
        assert got.row_ids.tolist() == index.search(q, 10, None, float("inf")).row_ids.tolist()
        assert (
            split.taken_back and len(index.scans) == PARTS + 1
        )  # the owner's PARTS ranges, then the lone scan
        assert {thread for _, thread in index.scans} == {threading.get_ident()}
        release.set()
        blocker.result(60)
        await asyncio.wrap_future(pool.start(lambda: None))  # the helper has been through the queue by now
        assert len(index.scans) == PARTS + 1  # it found itself claimed and scanned nothing
    finally:
        release.set()
        pool.close()


@pytest.mark.parametrize("failing_range", range(PARTS))
def test_a_failed_range_reaches_the_caller_once_no_thread_scans(helper_pool, failing_range):
    index = _index(4000, 16, 3, cls=_RecordingIndex)
    index.fail_at = 4000 * failing_range // PARTS
    with pytest.raises(ValueError, match="scan failed"):
        index.search(
            unit(np.ones(16, dtype=np.float32)), 10, None, float("inf"), SplitScan(helper_pool, index)
        )
    assert index.in_flight == 0  # the helper was settled before the error came back


def test_a_shut_down_pool_scans_everything_on_the_owner():
    pool = WorkerPool(1, name="test-split-closed")
    pool.close()
    index = _index(1000, 16, 4, cls=_RecordingIndex)
    split = SplitScan(pool, index)
    index.search(unit(np.ones(16, dtype=np.float32)), 5, None, float("inf"), split)
    assert not split.ran and [rows for rows, _ in index.scans] == [None]


def test_spare_core_counts_the_running_threads():
    assert spare_core(cores=1) is False  # the caller itself is running
    assert spare_core(cores=10**6) is True


async def test_a_split_needs_the_rows_an_idle_worker_and_a_spare_core():
    pool = WorkerPool(2, name="test-split-worth")
    try:
        await _until(lambda: pool._idle == 2, "both workers wait for work")
        index = _index(500, 16, 5)
        # on the loop: the rows and an idle worker, then the core (None: the worker looks again)
        assert worth_splitting(pool, index, 500, cores=10**6) is True
        assert worth_splitting(pool, index, 500, cores=1) is None  # the loop itself runs: no spare core
        assert worth_splitting(pool, index, 501, cores=10**6) is False  # too few rows
        assert worth_splitting(pool, index, 0, cores=10**6) is False  # 0: never
        # on the worker: a free worker still, and a core if the loop saw none
        assert isinstance(split_scanner(pool, index, True, cores=1), SplitScan)
        assert isinstance(split_scanner(pool, index, None, cores=10**6), SplitScan)
        assert split_scanner(pool, index, None, cores=1) is None
        assert split_scanner(pool, index, False, cores=10**6) is None
        release = threading.Event()
        blockers = [pool.start(release.wait, 60) for _ in range(2)]
        await _until(lambda: pool._idle == 0, "both workers are busy")
        assert worth_splitting(pool, index, 500, cores=10**6) is False
        assert split_scanner(pool, index, True, cores=10**6) is None
        release.set()
        for blocker in blockers:
            blocker.result(60)
    finally:
        pool.close()


@pytest.mark.parametrize("min_rows, splits", [(64, 1), (0, 0), (10**6, 0)])
async def test_the_service_splits_a_lone_search_when_it_pays(monkeypatch, min_rows, splits):
    monkeypatch.setattr(split_scan, "spare_core", lambda cores=None: True)  # whatever the machine is doing
    pool = WorkerPool(2, name="test-split-service")
    try:
        source, vectors = seeded(n=400)
        manager = IndexManager(source, pool, None, SearchConfig.of(split_min_rows=min_rows))
        first = await manager.search(SPACE, MODEL, D, vectors[0], 5)  # loads the index
        await _until(lambda: pool._idle == 2, "both workers wait for work")
        before = manager.batch_stats.split
        got = await manager.search(SPACE, MODEL, D, vectors[0], 5)
        assert manager.batch_stats.split - before == splits
        assert got.row_ids.tolist() == first.row_ids.tolist()
        entry = manager._entries[(SPACE, MODEL)]
        assert entry.lock._readers == 0 and entry.busy == 0
    finally:
        pool.close()
