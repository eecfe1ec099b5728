"""The labelled set in eval/ loads (every answer names exactly one memory) and splits deterministically."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import orjson
import pytest

from engram.errors import InvalidInput
from engram.evaluation.labels import CATEGORIES, load_set

SET = Path(__file__).resolve().parents[2] / "eval" / "set.json"


def test_the_repo_set_is_large_balanced_and_split_per_category():
    query_set = load_set(SET)
    assert len(query_set.queries) >= 120
    per_category = Counter((q.category, q.split) for q in query_set.queries)
    for category in CATEGORIES:
        tuning, heldout = per_category[(category, "tuning")], per_category[(category, "heldout")]
        assert tuning >= 6 and abs(tuning - heldout) <= 2, category  # each file is halved on its own
    assert {q.corpus for q in query_set.queries} == {"examples", "ops"}
    for q in query_set.queries:
        assert (q.category == "no-answer") == (not q.labels)
        assert q.category == "no-answer" or max(q.labels.values()) == 2


def test_the_split_does_not_depend_on_line_order(tmp_path):
    lines = (SET.parent / "queries.jsonl").read_bytes().splitlines()
    (tmp_path / "queries.jsonl").write_bytes(b"\n".join(reversed(lines)) + b"\n")
    corpora = {"examples": str(SET.parent.parent / "examples" / "memories.jsonl"),
               "ops": str(SET.parent / "corpus2.jsonl")}  # fmt: skip
    (tmp_path / "set.json").write_bytes(orjson.dumps({"corpora": corpora, "queries": "queries.jsonl"}))
    reordered = {q.id: q.split for q in load_set(tmp_path / "set.json").queries}
    splits = {q.id: q.split for q in load_set(SET).queries if q.id in reordered}  # SET lists more files
    assert reordered == splits and len(reordered) == len(lines)


def test_a_query_whose_answer_matches_no_memory_is_rejected(tmp_path):
    (tmp_path / "c.jsonl").write_bytes(b'{"text": "one"}\n{"text": "two"}\n')
    (tmp_path / "q.jsonl").write_bytes(
        orjson.dumps({"corpus": "c", "category": "vague", "query": "q", "answer": "three"}) + b"\n"
    )
    (tmp_path / "s.json").write_bytes(orjson.dumps({"corpora": {"c": "c.jsonl"}, "queries": "q.jsonl"}))
    with pytest.raises(InvalidInput, match="occurs in 0 memories"):
        load_set(tmp_path / "s.json")
