"""The evaluation metrics on tiny rankings computed by hand (engram/evaluation/metrics.py), RRF fusion,
and the restatement ordering (engram/service/supersession.py)."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engram.evaluation.metrics import hit_at_1, mrr_at, ndcg_at, paired_bootstrap, recall_at
from engram.service.fusion import fuse, rrf_fuse
from engram.service.supersession import Restatements, newer_first

LABELS = {"a": 2, "b": 1}  # a is the answer, b helps


def test_hit_recall_and_mrr_count_only_the_answer():
    assert hit_at_1(["a", "x"], LABELS) == 1.0
    assert hit_at_1(["b", "a"], LABELS) == 0.0
    assert hit_at_1([], LABELS) == 0.0
    assert recall_at(["x", "y", "z", "w", "a"], LABELS, 5) == 1.0
    assert recall_at(["x", "y", "z", "w", "v", "a"], LABELS, 5) == 0.0
    assert recall_at(["a"], {"a": 2, "c": 2}, 5) == 0.5
    assert mrr_at(["x", "b", "a"], LABELS) == pytest.approx(1 / 3)
    assert mrr_at(["x"] * 10 + ["a"], LABELS, 10) == 0.0


def test_ndcg_uses_exponential_gain_and_the_ideal_order():
    # ideal: a (gain 3) at 1, b (gain 1) at 2 -> 3 + 1/log2(3)
    ideal = 3 + 1 / math.log2(3)
    assert ndcg_at(["a", "b"], LABELS) == pytest.approx(1.0)
    assert ndcg_at(["b", "a"], LABELS) == pytest.approx((1 + 3 / math.log2(3)) / ideal)
    assert ndcg_at(["x", "a"], LABELS) == pytest.approx((3 / math.log2(3)) / ideal)
    assert ndcg_at(["x"], LABELS) == 0.0
    assert ndcg_at(["a"], {}) == 0.0  # no-answer query: nothing to gain


def test_paired_bootstrap_brackets_the_mean_difference():
    a = [0, 1, 0, 1, 0, 1, 0, 1]
    assert paired_bootstrap(a, a) == (0.0, 0.0, 0.0)
    mean, low, high = paired_bootstrap([0] * 8, [1] * 8)
    assert (mean, low, high) == (1.0, 1.0, 1.0)
    mean, low, high = paired_bootstrap(a, [1] * 8)
    assert mean == 0.5 and 0.0 <= low < 0.5 < high <= 1.0
    assert paired_bootstrap([], []) == (0.0, 0.0, 0.0)


def test_rrf_sums_reciprocal_ranks_scaled_to_one():
    fused = rrf_fuse({1: 0.9, 2: 0.5}, {2: 7.0, 3: 1.0, 4: 0.0}, k=60)
    top = 2 / 61
    assert fused[0] == (2, pytest.approx((1 / 62 + 1 / 61) / top))
    assert dict(fused) == pytest.approx({1: (1 / 61) / top, 2: (1 / 62 + 1 / 61) / top, 3: (1 / 62) / top})
    assert rrf_fuse({5: 1.0}, {5: 2.0})[0] == (5, pytest.approx(1.0))


def _memory(row, created_ms, attrs=None):
    return SimpleNamespace(row_id=row, uri=f"at://x/m/{row}", rkey=f"r{row}", created_ms=created_ms,
                           attrs=attrs or {}, text=f"memory {row}")  # fmt: skip


def _unit(*xs):
    v = np.asarray(xs, dtype=np.float32)
    return v / np.linalg.norm(v)


def test_newer_restatement_moves_before_the_older_and_marks_it():
    memories = {1: _memory(1, 100), 2: _memory(2, 50), 3: _memory(3, 300)}
    vectors = {1: _unit(1, 0.1), 2: _unit(0, 1), 3: _unit(1, 0.2)}
    ranked = [(1, 0.9), (2, 0.8), (3, 0.85)]
    order, replaced = newer_first(ranked, memories, vectors, Restatements(0.9, 0.8))
    assert order == [3, 1, 2] and replaced == {1: 3}
    # too little relevance to the query: not a restatement of it
    order, replaced = newer_first([(1, 0.9), (2, 0.8), (3, 0.3)], memories, vectors, Restatements(0.9, 0.8))
    assert order == [1, 2, 3] and replaced == {}


def test_explicit_supersedes_wins_without_similarity_and_chains_resolve_to_the_newest():
    memories = {
        1: _memory(1, 100),
        2: _memory(2, 200, {"supersedes": "r1"}),
        3: _memory(3, 300, {"supersedes": ["at://x/m/2"]}),
    }
    vectors = {1: _unit(1, 0), 2: _unit(0, 1), 3: _unit(-1, 0)}
    order, replaced = newer_first([(1, 0.9), (2, 0.5), (3, 0.1)], memories, vectors, Restatements(0.99, 0.99))
    # 2 replaces 1 too, so it is placed before 1 although 3 is the newest: no memory above its successor
    assert order == [3, 2, 1] and replaced == {1: 3, 2: 3}


def test_the_pair_prefilter_keeps_explicit_names_and_dated_events_as_the_rule_judges_them():
    """supersession._suspects prunes pairs by the numbers before the word tests: an explicit name must
    still pass without any vector, and an older memory reporting a dated event is replaced only by name."""
    memories = {1: _memory(1, 100), 2: _memory(2, 200, {"supersedes": "r1"})}
    order, replaced = newer_first([(1, 0.9), (2, 0.1)], memories, {}, Restatements(0.5, 0.5))
    assert order == [2, 1] and replaced == {1: 2}
    event = SimpleNamespace(row_id=1, uri="at://x/m/1", rkey="r1", created_ms=100, attrs={},
                            text="the backup job failed yesterday")  # fmt: skip
    same = _unit(1, 0)
    plain = {1: event, 2: _memory(2, 200)}
    order, replaced = newer_first([(1, 0.9), (2, 0.9)], plain, {1: same, 2: same}, Restatements(0.5, 0.5))
    assert order == [1, 2] and replaced == {}
    named = {1: event, 2: _memory(2, 200, {"supersedes": "r1"})}
    order, replaced = newer_first([(1, 0.9), (2, 0.9)], named, {1: same, 2: same}, Restatements(0.5, 0.5))
    assert order == [2, 1] and replaced == {1: 2}
    # and the same pair without the event passes on the numbers alone
    order, replaced = newer_first([(1, 0.9), (2, 0.9)], {1: _memory(1, 100), 2: _memory(2, 200)},
                                  {1: same, 2: same}, Restatements(0.5, 0.5))  # fmt: skip
    assert order == [2, 1] and replaced == {1: 2}


def test_every_explicit_successor_ranks_above_what_it_replaces_not_only_the_newest():
    """1 is named by 2 and by 4; 4 does not name 2; 3 is unrelated. Before, only the one replacing 1 was
    moved before it and the other kept its place below it (the eval's ops-updated-29 with
    --explicit-updates). Of the two explicit successors the more relevant (2) is the one replacing 1."""
    memories = {
        1: _memory(1, 100),
        2: _memory(2, 200, {"supersedes": "r1"}),
        3: _memory(3, 250),
        4: _memory(4, 300, {"supersedes": "r1"}),
    }
    vectors = {1: _unit(1, 0), 2: _unit(0, 1), 3: _unit(1, 1), 4: _unit(-1, 0)}
    ranked = [(1, 0.9), (3, 0.6), (2, 0.5), (4, 0.4)]
    order, replaced = newer_first(ranked, memories, vectors, Restatements(0.99, 0.99))
    assert order == [2, 4, 1, 3] and replaced == {1: 2}


def test_chat_guards_keep_an_answering_turn_in_place():
    """A later, similar turn does not replace the one holding the question's words, nor a turn reporting a
    dated event, whatever the cosine (engram/service/supersession.py); an explicit supersedes still does."""
    memories = {1: _memory(1, 100), 2: _memory(2, 300)}
    vectors = {1: _unit(1, 0.1), 2: _unit(1, 0.12)}
    ranked = [(1, 0.9), (2, 0.85)]
    rule = Restatements(0.9, 0.8, 0.5)
    assert newer_first(ranked, memories, vectors, rule, {1: 0.6, 2: 0.5})[0] == [2, 1]  # a restatement
    assert newer_first(ranked, memories, vectors, rule, {1: 0.6, 2: 0.1})[0] == [1, 2]  # lacks the words
    memories[1] = SimpleNamespace(
        **{**vars(memories[1]), "text": "Caroline: I went to the support group yesterday."}
    )
    assert newer_first(ranked, memories, vectors, rule, {1: 0.6, 2: 0.5})[0] == [1, 2]  # a dated event
    memories[2] = _memory(2, 300, {"supersedes": "r1"})
    assert newer_first(ranked, memories, vectors, rule, {1: 0.6, 2: 0.0})[0] == [2, 1]  # the writer said so


def test_of_several_restatements_the_most_relevant_replaces_unless_one_names_it():
    """Two later memories both restate 1 (near-duplicates, relevant enough): the one the query wants more
    is placed before it, not merely the newest; one that names 1 in attrs.supersedes wins over both."""
    memories = {1: _memory(1, 100), 2: _memory(2, 200), 3: _memory(3, 300)}
    # 2 and 3 each near 1 (cosine 0.93), not near each other (0.74): no chain from 2 to 3
    vectors = {1: _unit(1, 0.3, 0.3), 2: _unit(1, 0.6, 0), 3: _unit(1, 0, 0.6)}
    ranked = [(1, 0.9), (2, 0.85), (3, 0.6)]
    order, replaced = newer_first(ranked, memories, vectors, Restatements(0.9, 0.5))
    # 3 is newer but less relevant: 2 replaces 1; 3 restates 1 too, so it is placed before 1 as well
    assert order == [2, 3, 1] and replaced == {1: 2}
    memories[3] = _memory(3, 300, {"supersedes": "r1"})
    order, replaced = newer_first(ranked, memories, vectors, Restatements(0.9, 0.5))
    assert order[0] == 3 and replaced[1] == 3


def _cosine_pair(cosine):
    """Two unit vectors whose cosine is `cosine`."""
    return _unit(1, 0), _unit(cosine, math.sqrt(1 - cosine * cosine))


def test_an_update_restates_at_a_lower_similarity_than_a_plain_statement():
    """At cosine 0.6 (below min_similarity 0.65, above change_similarity 0.55) a newer memory replaces the
    older one only when it reports a change of state."""
    old, new = _cosine_pair(0.6)
    rule = Restatements(0.65, 0.5, 0.0, change_similarity=0.55)
    for text, replaces in [
        ("Kwame now receives storage pages first", True),
        ("the winter tyres were fitted on 2026-11-07", True),
        ("Kwame receives storage pages first", False),
    ]:
        memories = {1: _memory(1, 100), 2: SimpleNamespace(**{**vars(_memory(2, 200)), "text": text})}
        order, replaced = newer_first([(1, 0.9), (2, 0.8)], memories, {1: old, 2: new}, rule)
        assert (replaced == {1: 2}) is replaces, text
        assert order == ([2, 1] if replaces else [1, 2])
    # no lower bar without change_similarity (the multilingual model's policy)
    memories = {1: _memory(1, 100), 2: SimpleNamespace(**{**vars(_memory(2, 200)), "text": "now"})}
    _, replaced = newer_first(
        [(1, 0.9), (2, 0.8)], memories, {1: old, 2: new}, Restatements(0.65, 0.5, 0.0, None)
    )
    assert replaced == {}


def test_every_restater_ranks_above_what_it_restates_not_only_the_one_replacing_it():
    """2 and 3 both restate 1 (heuristic); 3 is the more relevant, so it replaces 1, and 2 is placed before
    1 as well instead of keeping its place below it."""
    memories = {1: _memory(1, 100), 2: _memory(2, 200), 3: _memory(3, 300), 4: _memory(4, 50)}
    vectors = {1: _unit(1, 0, 0), 2: _unit(1, 0.05, 0), 3: _unit(1, 0, 0.05), 4: _unit(0, 1, 1)}
    ranked = [(1, 0.9), (4, 0.85), (3, 0.8), (2, 0.75)]
    order, replaced = newer_first(ranked, memories, vectors, Restatements(0.9, 0.5, 0.0))
    assert replaced[1] == 3 and order.index(2) < order.index(1) and order.index(3) < order.index(1)
    assert order[-1] == 4


def _convex_reference(similarity, keyword, weight):
    """The convex fusion written out per candidate (docs/compat.md "Scores"): the oracle for fusion.fuse."""
    fused = []
    for row in similarity.keys() | keyword.keys():
        sim = min(max(similarity.get(row, 0.0), 0.0), 1.0)
        kw = min(max(keyword.get(row, 0.0), 0.0), 1.0)
        fused.append((row, weight * sim + (1.0 - weight) * kw))
    return sorted(fused, key=lambda item: (-item[1], item[0]))


@settings(max_examples=300, deadline=None)
@given(
    rows=st.lists(st.integers(1, 10_000), unique=True, max_size=120),
    values=st.lists(
        st.sampled_from([0.0, 0.25, 0.5, 1.0, -0.3, 1.4, 0.123456789, 0.7000000476837158]),
        min_size=240,
        max_size=240,
    ),
    weight=st.sampled_from([0.0, 0.3, 0.5, 0.9, 1.0, 1 / 3]),
)
def test_convex_fusion_equals_the_per_candidate_formula_bit_for_bit(rows, values, weight):
    """fusion.fuse (numpy over the candidates) gives exactly the scores and order of the formula applied
    candidate by candidate, ties (many, with these few values) to the lower row id."""
    similarity = {r: values[i] for i, r in enumerate(rows) if i % 3}
    keyword = {r: values[120 + i] for i, r in enumerate(rows) if i % 2}
    got = fuse(similarity, keyword, weight)
    assert got == _convex_reference(similarity, keyword, weight)
    assert all(type(row) is int and type(score) is float for row, score in got)
