"""Batched exact scans (engram/search/batch_scan.py, `SpaceIndex.search_many`): for every query the same
hits, order and scores as a lone `search`, and the same as the brute-force oracle, whatever the block
boundaries, ties, tombstones and k."""

import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.search_fakes import filters_strategy, make_rows, oracle, unit

from engram.search.batch_scan import scan_candidates, stored_rows
from engram.search.filters import Filters
from engram.search.index import IndexTuning, SpaceIndex
from engram.search.int8_rows import REQUANTIZE_GROWTH, Int8Rows
from engram.search.rows import IndexRows


def _queries(rng: np.random.Generator, count: int, d: int) -> np.ndarray:
    return np.stack([unit(rng.standard_normal(d)) for _ in range(count)])


BLOCK_ROWS = 1024  # sizes across the quantiser's and the heap's round numbers


def _index_with_tombstones(n: int, d: int, seed: int, dead: float):
    rng = np.random.default_rng(seed)
    rows = make_rows(n, d, seed)
    index = SpaceIndex.build(rows, d, 1, IndexTuning(exact_max=1_000_000))
    index.delete(rows.row_ids[rng.random(n) < dead])
    return rng, rows, index


def _exact(index: SpaceIndex, positions: np.ndarray, q: np.ndarray) -> np.ndarray:
    return (stored_rows(index.store, index.dims)[positions].astype(np.float64) @ q.astype(np.float64)).astype(
        np.float32
    )


def _assert_as_lone(index: SpaceIndex, queries, ks, filters, batched) -> None:
    """Each batched result has the lone search's hits, order and scores."""
    for query, k, f, got in zip(queries, ks, filters, batched, strict=True):
        alone = index.search(query, k, f, float("inf"))
        assert got.row_ids.tolist() == alone.row_ids.tolist()
        assert got.scores.tolist() == alone.scores.tolist()
        assert not got.approximate


@settings(max_examples=40, deadline=None)
@given(
    n=st.integers(1, 2 * BLOCK_ROWS + 300),
    seed=st.integers(0, 2**16),
    ks=st.lists(st.integers(0, 40), min_size=1, max_size=9),
    dead=st.floats(0, 0.5),
)
def test_search_many_returns_what_each_lone_search_returns(n, seed, ks, dead):
    rng, rows, index = _index_with_tombstones(n, 24, seed, dead)
    queries = _queries(rng, len(ks), 24)
    queries[0] = unit(rows.vectors[min(1, n - 1)].astype(np.float32))  # a query tied on the duplicate rows
    _assert_as_lone(index, queries, ks, [None] * len(ks), index.search_many(queries, ks))


@settings(max_examples=40, deadline=None)
@given(
    n=st.integers(1, BLOCK_ROWS + 300),
    seed=st.integers(0, 2**16),
    filters=st.lists(filters_strategy, min_size=1, max_size=6),
    dead=st.floats(0, 0.3),
)
def test_filtered_search_many_returns_what_each_lone_filtered_search_returns(n, seed, filters, dead):
    rng, _, index = _index_with_tombstones(n, 16, seed, dead)
    queries, ks = _queries(rng, len(filters), 16), [7] * len(filters)
    masks = [index.scan_mask(f)[1] for f in filters]
    _assert_as_lone(index, queries, ks, filters, index.search_many(queries, ks, masks))


def test_scan_mask_gives_the_allowed_fraction_and_rows():
    rows = make_rows(2000, 8, 7)
    index = SpaceIndex.build(rows, 8, 1, IndexTuning(exact_max=1_000_000))
    assert index.scan_mask(None) == (1.0, None) and index.scan_mask(Filters()) == (1.0, None)
    index.delete(rows.row_ids[:10])
    fraction, mask = index.scan_mask(None)
    assert fraction == 1.0 and int(mask.sum()) == 1990  # tombstones only: an unfiltered search counts whole
    fraction, mask = index.scan_mask(Filters(since_ms=500))  # created_at is uniform in [0, 1000)
    assert fraction == int(mask.sum()) / 2000 and 0.4 < fraction < 0.6
    assert not mask[:10].any()  # never a tombstone


def test_search_many_matches_the_oracle_across_blocks():
    rng = np.random.default_rng(5)
    rows = make_rows(3 * BLOCK_ROWS + 17, 32, 5)
    index = SpaceIndex.build(rows, 32, 1, IndexTuning(exact_max=1_000_000))
    queries = _queries(rng, 6, 32)
    for query, got in zip(queries, index.search_many(queries, [10] * 6), strict=True):
        ids, scores = oracle(rows, query, 10)
        assert got.row_ids.tolist() == ids.tolist()
        np.testing.assert_array_equal(got.scores, scores)


def test_scan_candidates_skips_dead_rows_and_returns_fewer_when_few_live():
    rng = np.random.default_rng(1)
    rows = make_rows(BLOCK_ROWS + 5, 8, 1)
    index = SpaceIndex.build(rows, 8, 1, IndexTuning(exact_max=1_000_000))
    live = np.zeros(len(rows), dtype=bool)
    live[[3, BLOCK_ROWS + 2, BLOCK_ROWS + 4]] = True
    found = scan_candidates(index.int8_rows(), _queries(rng, 4, 8), 10, live).candidates
    assert [sorted(f.tolist()) for f in found] == [[3, BLOCK_ROWS + 2, BLOCK_ROWS + 4]] * 4
    none_live = np.zeros(len(rows), dtype=bool)
    scan = scan_candidates(index.int8_rows(), _queries(rng, 2, 8), 5, none_live)
    assert all(len(f) == 0 for f in scan.candidates)


def test_int8_rounding_stays_within_the_bound_the_certificate_uses():
    rng = np.random.default_rng(7)
    rows = make_rows(3_000, 48, 7)
    index = SpaceIndex.build(rows, 48, 1, IndexTuning(exact_max=1_000_000))
    queries = _queries(rng, 16, 48)
    scan = scan_candidates(index.int8_rows(), queries, 20, None)
    exact = stored_rows(index.store, 48).astype(np.float64) @ queries.astype(np.float64).T
    error = np.abs(exact.T - scan.scores.astype(np.float64)).max(axis=1)
    assert (error <= scan.bound).all()
    assert (error > 0).all()  # the scores really are approximate: the re-score and the certificate are needed


def test_near_ties_outside_the_candidates_are_rescored_so_batched_answers_stay_exact(monkeypatch):
    # 400 rows a hair apart around the query: the int8 order among them is noise, the true top 10 is
    # spread over the 400, and only the certified band brings them all to the exact re-score
    rng = np.random.default_rng(11)
    d = 32
    base = unit(rng.standard_normal(d).astype(np.float32))
    near = base + 1e-3 * rng.standard_normal((400, d)).astype(np.float32)
    far = rng.standard_normal((600, d)).astype(np.float32)
    rows = make_rows(1_000, d, 11)
    rows.vectors[:] = np.concatenate([near, far]).astype(rows.vectors.dtype)
    index = SpaceIndex.build(rows, d, 1, IndexTuning(exact_max=1_000_000))
    queries = np.stack([base] * 4)
    scan = scan_candidates(index.int8_rows(), queries, 26, None)
    candidates = scan.candidates[0]
    exact = (stored_rows(index.store, d)[candidates].astype(np.float64) @ base.astype(np.float64)).astype(
        np.float32
    )
    assert scan.certify(0, candidates, exact, 10).shape[0] > 0  # the band reaches past the candidates
    _assert_as_lone(index, queries, [10] * 4, [None] * 4, index.search_many(queries, [10] * 4))
    # the lone scan too: 36 candidates cannot rule the rows left out, so the search scans again for more
    lone = index.scan(base, 36, None)
    kth = np.sort(_exact(index, lone.positions, base))[-10]
    assert not lone.ruled_out(float(kth))
    wanted = []
    scan = index.scan
    monkeypatch.setattr(index, "scan", lambda q, want, mask: wanted.append(want) or scan(q, want, mask))
    for f in (None, Filters(since_ms=100)):  # and with a filter, whose scans keep to the allowed rows
        got = index.search(base, 10, f, float("inf"))
        allowed = np.flatnonzero(index.columns.allowed(f, index.live)) if f else np.arange(1_000)
        exact = _exact(index, allowed, base)
        best = allowed[np.lexsort((allowed, -exact))[:10]]
        assert got.row_ids.tolist() == rows.row_ids[best].tolist()
    assert wanted[:2] == [36, 144] and len(wanted) >= 4  # each search scanned again, for 4x the candidates


def _int8_errors(rows: Int8Rows, stored: np.ndarray, queries: np.ndarray) -> np.ndarray:
    """|exact - FAISS's int8 score| of every row, per query (queries x rows)."""
    units, tau, _ = rows.queries(queries)
    scores, found = rows.index.search(units, rows.count)
    approx = np.take_along_axis(scores, np.argsort(found, axis=1), axis=1) * tau[:, None]
    exact = queries.astype(np.float64) @ stored.astype(np.float64).T
    return np.abs(exact - approx)


def test_int8_rows_follow_appended_rows_within_their_bound():
    rng = np.random.default_rng(9)
    stored = make_rows(60, 16, 9).vectors.astype(np.float16)
    stored[45, 3] = 60  # far past every earlier row's range in one dimension: clipped, then re-quantised
    rows = Int8Rows(16)
    queries = _queries(rng, 8, 16)
    for stop in (1, 2, 3, 17, 40, 45, 46, 60):  # one row at a time at first: each clips some values
        scales = rows.scales.copy()
        rows.extend(stored[:stop])
        assert rows.count == stop and rows.codes().shape == (stop, 16)
        errors = _int8_errors(rows, stored[:stop], queries)
        assert (errors <= rows.queries(queries)[2][:, None]).all()
        assert rows.error <= REQUANTIZE_GROWTH * rows._fresh_error + 1e-12
        if stop == 46:
            assert scales[3] < rows.scales[3]  # the clipped row brought fresh scales
    assert (rows.codes() > 0).all()  # codes stay in [-127, 127] (+ 128), clipped or not


@pytest.mark.parametrize("d", [1_100, 1_536])  # FAISS sums in float32 (not a multiple of 16) / in int32
def test_int8_scores_of_wide_rows_stay_within_the_bound(d):
    rng = np.random.default_rng(d)
    rows = make_rows(300, d, 5)
    index = SpaceIndex.build(rows, d, 1, IndexTuning(exact_max=1_000_000))
    queries = _queries(rng, 6, d)
    errors = _int8_errors(index.int8_rows(), stored_rows(index.store, d), queries)
    assert (errors.max(axis=1) <= index.int8_rows().queries(queries)[2]).all()
    for query in queries:
        ids, _ = oracle(rows, query, 10)
        assert index.search(query, 10, None, float("inf")).row_ids.tolist() == ids.tolist()


def test_lone_int8_scans_stay_within_their_bound_and_pick_the_oracle_top_k():
    rng = np.random.default_rng(3)
    rows = make_rows(2_000, 48, 3)
    index = SpaceIndex.build(rows, 48, 1, IndexTuning(exact_max=1_000_000))
    queries = _queries(rng, 12, 48)
    errors = _int8_errors(index.int8_rows(), stored_rows(index.store, 48), queries)
    assert (errors > 0).any(axis=1).all()  # the int8 scores are approximate: the re-score is needed
    ruled_out = 0
    for query, row_errors in zip(queries, errors, strict=True):
        assert row_errors.max() <= index.int8_rows().queries(query[None, :])[2][0]
        found = index.scan(query, 26, None)
        ruled_out += found.ruled_out(float(np.sort(_exact(index, found.positions, query))[-10]))
        ids, scores = oracle(rows, query, 10)
        got = index.search(query, 10, None, float("inf"))
        assert got.row_ids.tolist() == ids.tolist()
        np.testing.assert_array_equal(got.scores, scores)
    assert ruled_out >= 10  # the int8 candidates are good ones: a second scan is seldom needed


def test_a_scan_that_returns_every_allowed_row_is_not_repeated(monkeypatch):
    calls = []
    scan = Int8Rows.search
    monkeypatch.setattr(Int8Rows, "search", lambda self, *args: calls.append(args) or scan(self, *args))
    query = unit(np.ones(16, dtype=np.float32))
    # 20 rows, 2k + 16 = 36 wanted: the scan returns them all, nothing was left out to certify
    small = SpaceIndex.build(make_rows(20, 16, 4), 16, 1, IndexTuning(exact_max=1_000_000, gather_max=0))
    assert not np.isfinite(small.scan(query, 36, None).floor)
    calls.clear()
    # 40 rows of which a filter allows fewer than 36: the scan is asked for exactly those, a full list
    index = SpaceIndex.build(make_rows(40, 16, 4), 16, 1, IndexTuning(exact_max=1_000_000, gather_max=0))
    filters = Filters(since_ms=600)
    allowed = np.flatnonzero(index.columns.allowed(filters, index.live))
    assert 10 < allowed.shape[0] < 36
    for space, f, positions in ((small, None, np.arange(20)), (index, filters, allowed)):
        got = space.search(query, 10, f, float("inf"))
        exact = _exact(space, positions, query)
        assert got.row_ids.tolist() == space.row_ids[positions[np.lexsort((positions, -exact))[:10]]].tolist()
    assert [want for _, want, _ in calls] == [20, allowed.shape[0]]  # one scan each


def test_stored_rows_is_the_canonical_float16_copy_without_a_copy():
    rows = make_rows(50, 16, 2)
    index = SpaceIndex.build(rows, 16, 1, IndexTuning(exact_max=1_000_000))
    view = stored_rows(index.store, 16)
    assert view.dtype == np.float16 and view.shape == (50, 16) and not view.flags.owndata
    # the values FAISS's own decoder gives: re-scores and `vectors` gather them instead of calling it
    decoded = index.store.reconstruct_batch(np.arange(50, dtype=np.int64))
    np.testing.assert_array_equal(view.astype(np.float32), decoded)
    picked = np.array([49, 0, 17, 17, 3])
    np.testing.assert_array_equal(index.stored(picked).astype(np.float32), decoded[picked])
    np.testing.assert_array_equal(index.vectors(picked), decoded[picked])
    assert index.vectors(np.zeros(0, dtype=np.int64)).shape == (0, 16)
    assert stored_rows(SpaceIndex(16, IndexTuning(exact_max=1_000_000)).store, 16).shape == (0, 16)


def test_search_many_edge_cases():
    rows = make_rows(30, 16, 3)
    index = SpaceIndex.build(rows, 16, 1, IndexTuning(exact_max=1_000_000))
    queries = _queries(np.random.default_rng(0), 2, 16)
    assert [len(r.row_ids) for r in index.search_many(queries, [0, 0])] == [0, 0]
    assert [len(r.row_ids) for r in index.search_many(queries, [0, 50])] == [0, 30]
    assert [
        len(r.row_ids) for r in SpaceIndex(16, IndexTuning(exact_max=1_000_000)).search_many(queries, [3, 3])
    ] == [0, 0]
    with pytest.raises(ValueError, match="dims"):
        index.search_many(queries[:, :8], [3, 3])
    hnsw = SpaceIndex.build(make_rows(60, 16, 4), 16, 1, IndexTuning(exact_max=10))
    assert hnsw.coarse is not None
    with pytest.raises(ValueError, match="exact"):
        hnsw.search_many(queries, [3, 3])
    assert len(hnsw.search(queries[0], 3, None, time.monotonic() + 60).row_ids) == 3


def test_the_shipped_scan_graph_is_what_the_script_builds():
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
    from make_scan_graph import GRAPH_FILE, graph_bytes

    from engram.search import batch_scan

    assert GRAPH_FILE == batch_scan.GRAPH_FILE
    assert GRAPH_FILE.read_bytes() == graph_bytes(), "run scripts/make_scan_graph.py and commit the file"


def test_batched_searches_after_a_delta_see_the_appended_rows_exactly():
    rows = make_rows(600, 16, 12)
    first = IndexRows(rows.row_ids[:500], rows.vectors[:500], rows.authors[:500], rows.created_at[:500])
    index = SpaceIndex.build(first, 16, 1, IndexTuning(exact_max=1_000_000))
    assert index.int8_rows().count == 500  # quantised by the build
    rest = IndexRows(rows.row_ids[500:], rows.vectors[500:], rows.authors[500:], rows.created_at[500:])
    index.apply(rest, rows.row_ids[:50], 2)  # 50 deletions, 100 new rows
    queries = np.stack([unit(rows.vectors[i].astype(np.float32)) for i in (10, 520, 599, 3)])
    batched = index.search_many(queries, [10] * 4)
    assert index.int8_rows().count == 600  # caught up by the scan
    assert int(rows.row_ids[520]) in batched[1].row_ids.tolist()
    assert int(rows.row_ids[10]) not in batched[0].row_ids.tolist()  # deleted
    _assert_as_lone(index, queries, [10] * 4, [None] * 4, batched)
