"""`engram eval` end to end on a tiny labelled set with the built-in embedder (scratch data dir)."""

from __future__ import annotations

import orjson

MEMORIES = [
    {"text": "Staging runs Postgres 15.4 on pg-staging-01.internal.", "createdAt": "2026-01-01T00:00:00Z"},
    {
        "text": "Staging runs Postgres 16.2 on pg-staging-01.internal since the upgrade.",
        "createdAt": "2026-05-01T00:00:00Z",
    },
    {
        "text": "ENG-1502: the login loop in Safari came from a cookie without Secure.",
        "createdAt": "2026-02-01T00:00:00Z",
    },
    {"text": "Dana drinks her coffee with oat milk.", "createdAt": "2026-03-01T00:00:00Z"},
    {"text": "The weekly sync is on Thursdays at 15:00.", "createdAt": "2026-03-02T00:00:00Z"},
]
QUERIES = [
    {"id": "i1", "corpus": "c", "category": "identifier", "query": "ENG-1502", "answer": "ENG-1502"},
    {"id": "i2", "corpus": "c", "category": "identifier", "query": "eng-1502 safari", "answer": "ENG-1502"},
    {"id": "u1", "corpus": "c", "category": "updated", "query": "Which Postgres version does staging run?",
     "answer": "Postgres 16.2", "related": ["Staging runs Postgres 15.4"]},
    {"id": "v1", "corpus": "c", "category": "vague", "query": "coffee", "answer": "oat milk"},
    {"id": "n1", "corpus": "c", "category": "no-answer", "query": "What is the CFO's name?"},
    {"id": "n2", "corpus": "c", "category": "no-answer", "query": "Which Kafka version do we run?"},
]  # fmt: skip


def _write_set(tmp_path, queries=QUERIES):
    (tmp_path / "c.jsonl").write_bytes(b"".join(orjson.dumps(m) + b"\n" for m in MEMORIES))
    (tmp_path / "q.jsonl").write_bytes(b"".join(orjson.dumps(q) + b"\n" for q in queries))
    path = tmp_path / "set.json"
    path.write_bytes(orjson.dumps({"corpora": {"c": "c.jsonl"}, "queries": "q.jsonl"}))
    return path


def test_eval_runs_every_system_and_reports_metrics_cis_and_no_answer(engram, monkeypatch, tmp_path):
    monkeypatch.setenv("ENGRAM_EMBEDDER", "builtin")
    result = engram("eval", _write_set(tmp_path), "--split", "all", "--json", "--tune")
    assert result.code == 0, result.err
    report = result.json()
    metrics = report["metrics"]
    assert {"vector", "keyword", "rrf", "engram", "convex@0.5"} <= set(metrics)
    assert metrics["vector"]["all"]["n"] == 4 and metrics["vector"]["identifier"]["n"] == 2
    assert metrics["keyword"]["identifier"]["hit@1"] == 1.0
    assert metrics["engram"]["updated"]["hit@1"] == 1.0  # the newer statement first
    for row in metrics["engram"].values():
        assert all(0.0 <= row[m] <= 1.0 for m in ("hit@1", "recall@5", "mrr@10", "ndcg@10"))
    mean, low, high = report["vs_vector"]["engram"]["all"]["hit@1"]
    assert low <= mean <= high
    assert report["no_answer"]["no_answer_queries"] == 2 and report["no_answer"]["answerable_queries"] == 4
    assert set(report["tuned"]) >= {
        "fusion",
        "weight",
        "restatements",
        "answer_similarity",
        "answer_coverage",
    }


def test_eval_markdown_table_and_bad_sets(engram, monkeypatch, tmp_path):
    monkeypatch.setenv("ENGRAM_EMBEDDER", "builtin")
    result = engram("eval", _write_set(tmp_path), "--split", "heldout")
    assert result.code == 0, result.err
    assert "| system | category | n | hit@1 | recall@5 | MRR@10 | nDCG@10 |" in result.out
    assert "false positives" in result.out

    ambiguous = [{"id": "x", "corpus": "c", "category": "vague", "query": "pg", "answer": "pg-staging-01"}]
    bad = engram("eval", _write_set(tmp_path, ambiguous))
    assert bad.code == 2 and "occurs in 2 memories" in bad.err
    assert engram("eval", tmp_path / "missing.json").code != 0
    both = engram("eval", _write_set(tmp_path), "--set", tmp_path / "other.json")
    assert both.code == 2 and "give the query set once" in both.err


def test_eval_takes_the_set_as_an_option(engram, monkeypatch, tmp_path):
    monkeypatch.setenv("ENGRAM_EMBEDDER", "builtin")
    result = engram("eval", "--set", _write_set(tmp_path), "--split", "all", "--json")
    assert result.code == 0, result.err
    assert result.json()["metrics"]["vector"]["all"]["n"] == 4  # this set's queries, not eval/set.json's


def test_eval_reports_stale_leaks_heuristic_and_explicit(engram, monkeypatch, tmp_path):
    monkeypatch.setenv("ENGRAM_EMBEDDER", "builtin")
    # the older statement shares the query's words better than the newer one: only a rule can save it
    queries = [{"id": "u1", "corpus": "c", "category": "updated", "query": "Which Postgres version does staging run?",
                "answer": "Staging runs Postgres 16.2", "related": ["Staging runs Postgres 15.4"]}]  # fmt: skip
    for flags, returned in (((), None), (("--explicit-updates",), 0.0)):
        result = engram("eval", _write_set(tmp_path, queries), "--split", "all", "--json", *flags)
        assert result.code == 0, result.err
        leaks = result.json()["stale_leaks"]
        assert leaks["queries"] == 1 and leaks["ranked_above_rate"] == 0.0
        if returned is not None:  # explicit: the older one is marked whatever the rule says, and dropped
            assert leaks["returned_with_current_rate"] == returned
        assert leaks["answerable_queries"] == 1 and leaks["answer_dropped_with_current_rate"] == 0.0


def test_eval_counts_an_answer_that_current_drops_as_a_false_supersession(engram, monkeypatch, tmp_path):
    """A query whose answer is the older statement (history): once the update names it in
    attrs.supersedes, `current` drops that answer, and the eval counts it against the rule."""
    monkeypatch.setenv("ENGRAM_EMBEDDER", "builtin")
    queries = [{"id": "u1", "corpus": "c", "category": "updated", "query": "Which Postgres version does staging run?",
                "answer": "Staging runs Postgres 16.2", "related": ["Staging runs Postgres 15.4"]},
               {"id": "p1", "corpus": "c", "category": "paraphrase", "query": "staging Postgres 15.4",
                "answer": "Staging runs Postgres 15.4"}]  # fmt: skip
    result = engram("eval", _write_set(tmp_path, queries), "--split", "all", "--json", "--explicit-updates")
    assert result.code == 0, result.err
    leaks = result.json()["stale_leaks"]
    assert leaks["answerable_queries"] == 2 and leaks["answer_dropped_with_current_rate"] == 0.5
    result = engram("eval", _write_set(tmp_path, queries), "--split", "all")
    assert result.code == 0, result.err
    assert "an answer dropped with current on" in result.out
