"""Filtered search against a brute-force oracle (issue 32's recall goal at small scale): any mix of author,
tags all/any/none, a createdAt window and typed attrs predicates gives exactly the oracle's allowed rows,
and the oracle's top 10, on the exact index and on HNSW, on the keyword index, after a compaction and
after a save and load (the filter columns are persisted)."""

from __future__ import annotations

import time

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.search_fakes import clustered, oracle, passes

from engram.search import persist
from engram.search.filters import AttrPredicate, Filters, datetime_ms
from engram.search.index import IndexTuning, SpaceIndex
from engram.search.keyword_index import KeywordIndex
from engram.search.rows import IndexRows

N, D, K = 600, 16, 10
AUTHORS = [f"did:plc:a{i}" for i in range(4)]
TAGS = ["red", "green", "blue", "work", "home"]
TEAMS = ["apollo", "apollo-2", "artemis", "gemini"]
DAYS = [f"2026-0{m}-{d:02d}T0{h}:00:00Z" for m in (1, 2, 3) for d in (1, 15) for h in (0, 5)]


def _attrs(rng: np.random.Generator, i: int) -> dict | None:
    if i % 7 == 0:
        return None  # rows without attrs never match an attrs predicate
    attrs: dict = {"team": TEAMS[rng.integers(len(TEAMS))], "priority": int(rng.integers(0, 5))}
    if rng.random() < 0.5:
        attrs["score"] = float(rng.random())
    if rng.random() < 0.6:
        attrs["due"] = DAYS[rng.integers(len(DAYS))]
    if rng.random() < 0.5:
        attrs["labels"] = [TEAMS[j] for j in rng.choice(len(TEAMS), size=2, replace=False)]
    if rng.random() < 0.2:
        attrs["nested"] = {"team": "apollo"}  # not indexed: never matches a predicate on "team"
    if rng.random() < 0.1:
        attrs["flag"] = True
    return attrs


def _rows() -> IndexRows:
    rng = np.random.default_rng(3)
    return IndexRows(
        np.arange(1, N + 1, dtype=np.int64) * 3,
        clustered(N, D, seed=4).astype(np.float16),
        [AUTHORS[i % len(AUTHORS)] for i in range(N)],
        np.arange(N, dtype=np.int64) * 1000,
        [tuple(t for t in TAGS if rng.random() < 0.3) for _ in range(N)],
        [_attrs(rng, i) for i in range(N)],
    )


ROWS = _rows()
EXACT = SpaceIndex.build(ROWS, D, 1, IndexTuning(exact_max=10_000))
# HNSW above 200 rows; selective_min 0 so broad filters really walk the graph with a selector
HNSW = SpaceIndex.build(ROWS, D, 1, IndexTuning(exact_max=200, selective_min=0, selective_fraction=0.02))
QUERIES = clustered(8, D, seed=5, centres=2)

predicates = st.one_of(
    st.builds(AttrPredicate, st.just("team"), eq=st.sampled_from([*TEAMS, "nobody"])),
    st.builds(AttrPredicate, st.just("team"), prefix=st.sampled_from(["apo", "a", "gem", "x", ""])),
    st.builds(AttrPredicate, st.just("labels"), in_=st.lists(st.sampled_from(TEAMS), min_size=1).map(tuple)),
    st.builds(
        AttrPredicate,
        st.just("priority"),
        gte=st.sampled_from([None, 0, 1, 2.5, 4]),
        lte=st.sampled_from([None, 1, 3, 4.0]),
    ),
    st.builds(AttrPredicate, st.just("score"), gte=st.floats(0, 1), lte=st.floats(0, 1)),
    st.builds(AttrPredicate, st.just("priority"), eq=st.sampled_from([0, 2, 2.0, True])),
    st.builds(AttrPredicate, st.just("flag"), eq=st.just(True)),
    st.builds(
        AttrPredicate,
        st.just("due"),
        after_ms=st.sampled_from([None, *(datetime_ms(d) for d in DAYS[::3])]),
        before_ms=st.sampled_from([None, *(datetime_ms(d) for d in DAYS[2::3])]),
    ),
)
filters = st.builds(
    Filters,
    author=st.sampled_from([None, *AUTHORS]),
    tags=st.lists(st.sampled_from(TAGS), max_size=2).map(tuple),
    since_ms=st.sampled_from([None, 0, 150_000, 590_000]),
    until_ms=st.sampled_from([None, 5_000, 300_000]),
    tags_any=st.lists(st.sampled_from(TAGS), max_size=3).map(tuple),
    tags_none=st.lists(st.sampled_from(TAGS), max_size=2).map(tuple),
    attrs=st.lists(predicates, max_size=3).map(tuple),
)


def _allowed(f: Filters) -> set[int]:
    return {
        int(ROWS.row_ids[i])
        for i in range(N)
        if passes(f, ROWS.authors[i], int(ROWS.created_at[i]), ROWS.tags[i], ROWS.attrs[i])
    }


def _top_k_matches(index: SpaceIndex, f: Filters) -> None:
    for q in QUERIES:
        got = index.search(q, K, f, time.monotonic() + 60)
        want_ids, want_scores = oracle(ROWS, q, K, f)
        assert got.approximate is False
        assert len(got.row_ids) == len(want_ids)  # recall@10 = 1.0: ties aside, the same rows
        np.testing.assert_allclose(got.scores, want_scores, atol=1e-3)
        tie = want_scores[-1] if len(want_scores) else 0.0
        assert {r for r, s in zip(want_ids, want_scores, strict=True) if s > tie + 1e-3} <= set(
            got.row_ids.tolist()
        )


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(filters)
def test_every_filter_gives_the_oracles_rows_on_exact_and_hnsw(f):
    allowed = _allowed(f)
    everything = EXACT.search(QUERIES[0], N, f, time.monotonic() + 60)
    assert set(everything.row_ids.tolist()) == allowed
    _top_k_matches(EXACT, f)
    _top_k_matches(HNSW, f)


@settings(max_examples=60, deadline=None)
@given(filters)
def test_keyword_index_applies_the_same_filters(f):
    keywords = KeywordIndex()
    keywords.add([
        (int(ROWS.row_ids[i]), ROWS.authors[i], int(ROWS.created_at[i]), ROWS.tags[i], "note", None,
         ROWS.attrs[i])
        for i in range(N)
    ])  # fmt: skip
    found = keywords.search("note", N, f)
    assert set(found.row_ids.tolist()) == _allowed(f)


def test_filters_survive_compaction_and_a_save_and_load(tmp_path):
    f = Filters(attrs=(AttrPredicate("team", prefix="apo"), AttrPredicate("priority", gte=2)))
    deleted = ROWS.row_ids[::5]
    compacted = EXACT.compacted(None, 2, deleted)
    want = _allowed(f) - set(deleted.tolist())
    assert set(compacted.search(QUERIES[0], N, f, time.monotonic() + 60).row_ids.tolist()) == want
    persist.save(compacted, tmp_path, "at://did:plc:x/space/s", "m/16")
    loaded = persist.load(tmp_path, "at://did:plc:x/space/s", "m/16", D, compacted.tuning)
    assert loaded is not None
    assert set(loaded.search(QUERIES[0], N, f, time.monotonic() + 60).row_ids.tolist()) == want
    assert want  # the case is not vacuous


def test_datetimes_read_as_rfc3339():
    assert datetime_ms("2026-01-01T00:00:00Z") == datetime_ms("2026-01-01") == 1767225600000
    assert datetime_ms("2026-01-01T01:00:00+01:00") == 1767225600000
    assert datetime_ms("2026-01-01T00:00:00") is None  # no zone: not a point in time
    assert datetime_ms("apollo") is None and datetime_ms("12345678901") is None
