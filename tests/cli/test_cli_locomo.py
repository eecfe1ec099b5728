"""`engram eval --bench locomo --data <file>` on a tiny conversation in LoCoMo's format, generated here (the
real data is never shipped or committed: docs/benchmarks.md#locomo)."""

from __future__ import annotations

import orjson


def _locomo(tmp_path):
    turns = [
        ("Caroline", "Hey Mel! Good to see you! How have you been?"),
        ("Melanie", "Hey Caroline! Busy with the kids and work. What's new with you?"),
        ("Caroline", "I went to a LGBTQ support group yesterday and it was so powerful."),
        ("Melanie", "That's great! I painted a lake sunrise last year, it was so calming."),
        ("Caroline", "I'm planning to study counseling and mental health next month."),
    ]
    later = [
        ("Melanie", "I ran a charity race for mental health last Saturday."),
        ("Caroline", "The support group people gave me so much courage."),
    ]
    session = [{"speaker": s, "dia_id": f"D1:{i}", "text": t} for i, (s, t) in enumerate(turns, start=1)]
    session2 = [{"speaker": s, "dia_id": f"D2:{i}", "text": t} for i, (s, t) in enumerate(later, start=1)]
    sample = {
        "sample_id": "synthetic-1",
        "conversation": {
            "speaker_a": "Caroline", "speaker_b": "Melanie",
            "session_1_date_time": "1:56 pm on 8 May, 2023", "session_1": session,
            "session_2_date_time": "1:14 pm on 25 May, 2023", "session_2": session2,
        },
        "qa": [
            {"question": "When did Caroline go to the LGBTQ support group?", "answer": "7 May 2023",
             "evidence": ["D1:3"], "category": 2},
            {"question": "What did Melanie paint?", "answer": "a lake sunrise", "evidence": ["D1:4"], "category": 4},
            {"question": "What fields would Caroline study?", "answer": "counseling", "evidence": ["D1:5; D1:3"],
             "category": 1},
            {"question": "What race did Caroline run?", "adversarial_answer": "charity race",
             "evidence": ["D2:1"], "category": 5},
            {"question": "A question without evidence", "answer": "x", "evidence": [], "category": 3},
        ],
    }  # fmt: skip
    path = tmp_path / "locomo10.json"
    path.write_bytes(orjson.dumps([sample]))
    return path


def test_locomo_reports_evidence_metrics_per_category_and_latency_per_path(engram, monkeypatch, tmp_path):
    monkeypatch.setenv("ENGRAM_EMBEDDER", "builtin")
    result = engram("eval", "--bench", "locomo", "--data", _locomo(tmp_path), "--split", "all", "--json")
    assert result.code == 0, result.err
    report = result.json()
    assert report["questions"] == 4  # the one without evidence turns is left out
    assert {"vector", "keyword", "hybrid", "hybrid-plain", "vector+", "hybrid@0.5"} <= set(report["metrics"])
    hybrid = report["metrics"]["hybrid"]
    assert hybrid["answerable"]["n"] == 3 and hybrid["adversarial"]["n"] == 1 and "open-domain" not in hybrid
    assert hybrid["temporal"]["recall@1"] == 1.0  # "yesterday" resolved to the question's turn
    assert hybrid["multi-hop"]["recall@5"] == 1.0  # both evidence turns ("D1:5; D1:3") in the top 5
    for groups in report["metrics"].values():
        for row in groups.values():
            assert all(0.0 <= row[k] <= 1.0 for k in ("recall@1", "recall@20", "hit@10", "mrr@10", "ndcg@10"))
            assert row["recall@1"] <= row["recall@5"] <= row["recall@10"] <= row["recall@20"]
    assert all(t["p50_ms"] > 0 for t in report["latency"].values())
    table = engram("eval", "--bench", "locomo", "--data", _locomo(tmp_path), "--split", "tuning")
    assert table.code == 0 and "| hybrid | temporal | 1 |" in table.out
    held = engram("eval", "--bench", "locomo", "--data", _locomo(tmp_path))  # heldout: odd conversations
    assert held.code == 2 and "no questions in the heldout half" in held.err


def test_locomo_needs_a_readable_file(engram, tmp_path):
    missing = engram("eval", "--bench", "locomo")
    assert missing.code == 2 and "--data" in missing.err
    bad = tmp_path / "bad.json"
    bad.write_text('[{"conversation": {}}]')
    refused = engram("eval", "--bench", "locomo", "--data", bad)
    assert refused.code == 2 and "qa" in refused.err
