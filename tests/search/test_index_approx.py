"""HNSW + exact re-rank: recall against the exact oracle, filtered planning, and the approximate flag."""

import time

import numpy as np
import pytest
from support.search_fakes import clustered, oracle

from engram.search.filters import Filters
from engram.search.graph import newest_neighbors
from engram.search.index import IndexTuning, SpaceIndex
from engram.search.rows import IndexRows

N, D, K = 20_000, 64, 10
FAR = float("inf")


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(7)
    vectors = clustered(N, D, seed=1)
    rows = IndexRows(
        np.arange(1, N + 1, dtype=np.int64) * 2,
        vectors.astype(np.float16),
        [f"did:plc:{i % 100}" for i in range(N)],  # author filter: 1 % of rows
        np.arange(N, dtype=np.int64),  # since filter: any fraction
        [("half",) if rng.random() < 0.5 else () for _ in range(N)],
    )
    index = SpaceIndex.build(rows, D, 1, IndexTuning(exact_max=5_000))
    queries = clustered(100, D, seed=2, centres=N // 500)
    return rows, index, queries


def recall(index, rows, queries, filters):
    hits, total = 0, 0
    for q in queries:
        got = index.search(q, K, filters, time.monotonic() + 10)
        assert got.approximate is False
        want, _ = oracle(rows, q, K, filters)
        hits += len(set(got.row_ids.tolist()) & set(want.tolist()))
        total += len(want)
    return hits / total


def test_large_index_uses_hnsw(data):
    _, index, _ = data
    assert index.coarse is not None and index.coarse.ntotal == N


@pytest.mark.parametrize(
    "filters",
    [
        None,
        Filters(author="did:plc:7"),  # 1 %: selective -> exact scan of allowed rows
        Filters(since_ms=N - N // 10),  # 10 %: broad -> HNSW with a selector
        Filters(tags=("half",)),  # ~50 %
        Filters(tags=("half",), since_ms=N // 4),  # ~37 %, two filters combined
    ],
    ids=["none", "author-1pct", "since-10pct", "tag-50pct", "tag+since"],
)
def test_recall_at_10_against_exact(data, filters):
    rows, index, queries = data
    assert recall(index, rows, queries, filters) >= 0.98


def test_filtered_results_always_satisfy_the_filter(data):
    rows, index, queries = data
    f = Filters(tags=("half",), since_ms=N // 2)
    allowed = {
        int(r)
        for r, t, c in zip(rows.row_ids, rows.tags, rows.created_at, strict=True)
        if "half" in t and c >= N // 2
    }
    for q in queries[:20]:
        got = index.search(q, K, f, FAR)
        assert len(got.row_ids) == K and set(got.row_ids.tolist()) <= allowed


def test_deadline_passed_returns_coarse_order_flagged_approximate(data):
    rows, index, queries = data
    got = index.search(queries[0], K, None, deadline=0.0)
    assert got.approximate is True and len(got.row_ids) == K
    assert set(got.row_ids.tolist()) <= set(rows.row_ids.tolist())
    assert np.all(np.diff(got.scores) <= 0)
    assert index.search(queries[0], K, None, deadline=time.monotonic() + 600).approximate is False


def test_selective_filter_stays_exact_even_past_deadline(data):
    _, index, queries = data
    assert index.search(queries[0], K, Filters(author="did:plc:3"), deadline=0.0).approximate is False


def test_tombstones_and_appends_on_hnsw():
    vectors = clustered(6_000, 32, seed=3)
    rows = IndexRows(
        np.arange(1, 6_001, dtype=np.int64),
        vectors.astype(np.float16),
        ["a"] * 6_000,
        np.zeros(6_000, np.int64),
        [()] * 6_000,
    )
    index = SpaceIndex.build(rows, 32, 1, IndexTuning(exact_max=1_000))
    q = vectors[10]
    assert index.search(q, 1, None, FAR).row_ids[0] == 11
    index.apply(
        IndexRows(np.array([7_000]), (q * 1.0).astype(np.float16)[None], ["b"], np.array([5]), [("new",)]),
        np.array([11]),
        2,
    )
    got = index.search(q, 3, None, FAR)
    assert got.row_ids[0] == 7_000 and 11 not in got.row_ids.tolist()
    assert index.search(q, 3, Filters(tags=("new",)), FAR).row_ids.tolist() == [7_000]
    assert index.generation == 2 and index.high_water == 7_000 and index.tombstones == 1


def test_compaction_drops_tombstones_and_switches_kind():
    vectors = clustered(3_000, 16, seed=4)
    rows = IndexRows(
        np.arange(1, 3_001, dtype=np.int64),
        vectors.astype(np.float16),
        ["a"] * 3_000,
        np.arange(3_000, dtype=np.int64),
        [("t",)] * 3_000,
    )
    index = SpaceIndex.build(rows, 16, 1, IndexTuning(exact_max=2_000))
    assert index.coarse is not None
    assert index.needs_rebuild(0, deleting=1_500)
    fresh = index.compacted(None, 5, deleted=np.arange(1, 1_501))
    assert (
        fresh.coarse is None and len(fresh) == 1_500 and fresh.generation == 5 and fresh.high_water == 3_000
    )
    got = fresh.search(vectors[2_000], 1, Filters(tags=("t",), since_ms=1_999), FAR)
    assert got.row_ids.tolist() == [2_001]


def test_newest_neighbors_is_exact():
    vectors = clustered(300, 16, seed=5)
    rows = IndexRows(
        np.arange(1, 301, dtype=np.int64),
        vectors.astype(np.float16),
        ["a"] * 300,
        np.zeros(300, np.int64),
        [()] * 300,
    )
    index = SpaceIndex.build(rows, 16, 1, IndexTuning(exact_max=1_000_000))
    index.delete(np.array([300]))
    nb = newest_neighbors(index, 50, 5)
    assert nb.row_ids[0] == 299 and len(nb.row_ids) == 50
    sub = IndexRows(
        rows.row_ids[249:299], rows.vectors[249:299], ["a"] * 50, np.zeros(50, np.int64), [()] * 50
    )
    for i, row_id in enumerate(nb.row_ids[:10]):
        want, _ = oracle(sub, index.vectors(np.array([row_id - 1]))[0], 6)
        assert nb.neighbor_ids[i].tolist() == [w for w in want.tolist() if w != row_id][:5]
