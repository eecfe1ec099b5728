"""The labelled set in eval/ loads (every answer names exactly one memory) and splits deterministically."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import orjson
import pytest

from engram.errors import InvalidInput
from engram.evaluation.labels import CATEGORIES, load_set

SET = Path(__file__).resolve().parents[2] / "eval" / "set.json"
MULTILINGUAL = SET.parent / "multilingual.json"


def test_the_repo_set_is_large_balanced_and_split_per_category():
    query_set = load_set(SET)
    assert len(query_set.queries) >= 120
    per_category = Counter((q.category, q.split) for q in query_set.queries)
    for category in (c for c in CATEGORIES if c != "cross-lingual"):  # that one is the multilingual set's
        tuning, heldout = per_category[(category, "tuning")], per_category[(category, "heldout")]
        assert tuning >= 6 and abs(tuning - heldout) <= 2, category  # each file is halved on its own
    assert {q.corpus for q in query_set.queries} == {"examples", "ops"}
    for q in query_set.queries:
        assert (q.category == "no-answer") == (not q.labels)
        assert q.category == "no-answer" or max(q.labels.values()) == 2


def test_the_multilingual_set_loads_with_valid_labels_in_five_languages():
    query_set = load_set(MULTILINGUAL)
    assert len(query_set.queries) >= 100 and len(query_set.corpora["multi"].texts) >= 100
    raw = (SET.parent / "multilingual.queries.jsonl").read_bytes()
    lines = [orjson.loads(line) for line in raw.splitlines()]
    assert Counter(line["lang"] for line in lines).keys() == {"ja", "ko", "es", "zh", "en"}
    per_category = Counter((q.category, q.split) for q in query_set.queries)
    for category in (c for c in CATEGORIES if c != "vague"):  # every category but vague, in both halves
        tuning, heldout = per_category[(category, "tuning")], per_category[(category, "heldout")]
        assert tuning >= 5 and abs(tuning - heldout) <= 1, category
    for q in query_set.queries:
        assert (q.category == "no-answer") == (not q.labels)
        assert q.category == "no-answer" or sorted(q.labels.values())[-1:] == [2]
        if q.category == "updated":  # an older statement (grade 1) and its newer replacement (grade 2)
            older = [int(k.split("#")[1]) for k, g in q.labels.items() if g == 1]
            newer = [int(k.split("#")[1]) for k, g in q.labels.items() if g == 2]
            assert older and max(older) < min(newer), q.id  # the corpus is in createdAt order
    for line in lines:  # a cross-lingual query is in another language than its answer
        answered_in = line.get("answer_lang", line["lang"])  # no-answer queries have none
        assert (line["category"] == "cross-lingual") <= (line["lang"] != answered_in), line["id"]


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
