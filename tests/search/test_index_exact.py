"""Exact search (and every exact fallback) equals a brute-force numpy oracle: ids, order and scores."""

import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.search_fakes import filters_strategy, make_rows, oracle, unit

from engram.search.filters import Filters
from engram.search.index import IndexTuning, SpaceIndex
from engram.search.rows import IndexRows

FAR = float("inf")


@settings(max_examples=120, deadline=None)
@given(
    n=st.integers(0, 300),
    seed=st.integers(0, 2**16),
    k=st.integers(1, 40),
    filters=filters_strategy,
    gather_max=st.sampled_from([0, 4096]),  # 0 forces the bitmap-selector FAISS scan instead of gather + dot
    deleted=st.integers(0, 20),
)
def test_exact_matches_oracle(n, seed, k, filters, gather_max, deleted):
    d = 8
    rows = make_rows(n, d, seed)
    index = SpaceIndex.build(
        rows, d, generation=1, tuning=IndexTuning(exact_max=1_000_000, gather_max=gather_max)
    )
    rng = np.random.default_rng(seed + 1)
    dead = rng.choice(rows.row_ids, size=min(deleted, n), replace=False) if n else np.zeros(0, np.int64)
    index.delete(dead)
    keep = ~np.isin(rows.row_ids, dead)
    live = IndexRows(
        rows.row_ids[keep],
        rows.vectors[keep],
        [a for a, kp in zip(rows.authors, keep, strict=True) if kp],
        rows.created_at[keep],
        [t for t, kp in zip(rows.tags, keep, strict=True) if kp],
    )
    q = unit(rng.standard_normal(d))
    got = index.search(q, k, filters, FAR)
    want_ids, want_scores = oracle(live, q, k, filters)
    assert got.approximate is False
    assert got.row_ids.tolist() == want_ids.tolist()
    np.testing.assert_allclose(got.scores, want_scores, atol=2e-6)


@pytest.mark.parametrize("since, expected", [(None, 5), (10**13, 0)])
def test_filters_matching_everything_or_nothing(since, expected):
    rows = make_rows(5, 4, seed=3)
    index = SpaceIndex.build(rows, 4, 1, IndexTuning(exact_max=1_000_000))
    got = index.search(unit(np.ones(4)), 10, Filters(since_ms=since), FAR)
    assert len(got.row_ids) == expected


def test_filter_matching_exactly_one_row():
    rows = make_rows(50, 4, seed=4)
    rows.authors[17] = "did:plc:unique"
    index = SpaceIndex.build(rows, 4, 1, IndexTuning(exact_max=1_000_000))
    got = index.search(unit(np.ones(4)), 10, Filters(author="did:plc:unique"), FAR)
    assert got.row_ids.tolist() == [rows.row_ids[17]]


def test_zero_vectors_are_kept_and_score_zero():
    rows = make_rows(4, 4, seed=5)
    rows.vectors[2] = 0
    index = SpaceIndex.build(rows, 4, 1, IndexTuning(exact_max=1_000_000))
    got = index.search(unit(np.ones(4)), 4, None, FAR)
    assert rows.row_ids[2] in got.row_ids
    assert got.scores[got.row_ids.tolist().index(rows.row_ids[2])] == 0


def test_exact_index_never_reports_approximate_even_past_deadline():
    rows = make_rows(200, 8, seed=6)
    index = SpaceIndex.build(rows, 8, 1, IndexTuning(exact_max=1_000_000))
    assert index.coarse is None
    assert index.search(unit(np.ones(8)), 10, None, deadline=0.0).approximate is False


def test_wrong_query_dims_is_an_error():
    index = SpaceIndex.build(make_rows(5, 4, seed=7), 4, 1, IndexTuning(exact_max=1_000_000))
    with pytest.raises(ValueError):
        index.search(np.ones(5, np.float32), 3, None, time.monotonic() + 1)


@settings(max_examples=60, deadline=None)
@given(n=st.integers(0, 200), seed=st.integers(0, 2**16), deleted=st.integers(0, 20))
def test_cosines_of_rows_equal_the_search_scores(n, seed, deleted):
    """SpaceIndex.cosines (the hybrid side's keyword-only candidates) scores a row exactly as a search
    scores it, and leaves out dead rows and rows the index never held."""
    d = 8
    rows = make_rows(n, d, seed)
    index = SpaceIndex.build(rows, d, generation=1, tuning=IndexTuning(exact_max=1_000_000))
    rng = np.random.default_rng(seed + 1)
    dead = rng.choice(rows.row_ids, size=min(deleted, n), replace=False) if n else np.zeros(0, np.int64)
    index.delete(dead)
    q = unit(rng.standard_normal(d))
    searched = index.search(q, n + 1, None, FAR)
    unknown = [int(rows.row_ids.max()) + 1 if n else 1, -5]
    asked = rng.permutation(np.concatenate([rows.row_ids, dead, unknown]).astype(np.int64))
    ids, scores = index.cosines(asked, q)
    assert sorted(ids.tolist()) == sorted(searched.row_ids.tolist())
    assert dict(zip(ids.tolist(), scores.tolist(), strict=True)) == dict(
        zip(searched.row_ids.tolist(), searched.scores.tolist(), strict=True)
    )
    # the hybrid `then`'s one gather: every asked row's unit vector and the marked rows' cosines, the same
    marks = rng.random(asked.shape[0]) < 0.5
    got_ids, matrix, marked, cosines = index.unit_vectors_and_cosines(asked, q, marks)
    unit_ids, unit_matrix = index.unit_vectors(asked)
    assert got_ids.tolist() == unit_ids.tolist() and np.array_equal(matrix, unit_matrix)
    want_ids, want_scores = index.cosines(asked[marks], q)
    assert marked.tolist() == want_ids.tolist()
    assert cosines.tobytes() == want_scores.tobytes()
