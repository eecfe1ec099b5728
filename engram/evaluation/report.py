"""Tables of an evaluation run: metrics per system and category, paired bootstrap CIs against the
baseline, the no-answer score distribution and the empty-result rule's error rates (Markdown or JSON)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .labels import CATEGORIES
from .metrics import METRICS, paired_bootstrap
from .runner import Run

ANSWERABLE = [c for c in CATEGORIES if c != "no-answer"]
BASELINE = "vector"


def scores(run: Run, system: str, metric: str, category: str | None) -> list[float]:
    """Per-query metric of the answerable queries (of one category, or all of them when None)."""
    return [
        METRICS[metric](outcome.ranking, query.labels)
        for query, outcome in zip(run.queries, run.outcomes[system], strict=True)
        if query.category != "no-answer" and category in (None, query.category)
    ]


def summary(run: Run) -> dict:
    table = {}
    # the set's own categories: only eval/multilingual.json has cross-lingual queries
    present = {q.category for q in run.queries}
    categories = [c for c in ANSWERABLE if c in present]
    for system in run.outcomes:
        table[system] = {
            category or "all": {metric: _mean(scores(run, system, metric, category)) for metric in METRICS}
            | {"n": len(scores(run, system, "hit@1", category))}
            for category in (*categories, None)
        }
    diffs = {}
    for system in run.outcomes:
        if system == BASELINE:
            continue
        diffs[system] = {
            category or "all": {
                metric: paired_bootstrap(
                    scores(run, BASELINE, metric, category), scores(run, system, metric, category)
                )
                for metric in ("hit@1", "ndcg@10")
            }
            for category in (*categories, None)
        }
    return {
        "metrics": table,
        "vs_vector": diffs,
        "no_answer": no_answer(run),
        "stale_leaks": stale_leaks(run),
    }


def stale_leaks(run: Run, system: str = "engram", depth: int = 10) -> dict:
    """On the updated-fact queries (the answer is the current statement, grade 2; the related memories
    are the older statements it replaced, grade 1): the share where an older statement ranks above the
    current one in the first `depth` (`current` off), and the share where one is returned at all with
    `current` on. And the other side of the rule, over every answerable query: the share whose answer is
    in the first `depth` with `current` off but dropped with it on, a false supersession by the labels
    (docs/benchmarks.md#stale-leaks)."""
    updated = above = returned = answerable = dropped = 0
    for query, outcome in zip(run.queries, run.outcomes.get(system, []), strict=False):
        answers = {key for key, grade in query.labels.items() if grade == 2}
        if answers:
            answerable += 1
            kept = set((outcome.current or [])[:depth])
            dropped += any(key in answers and key not in kept for key in outcome.ranking[:depth])
        if query.category != "updated":
            continue
        stale = {key for key, grade in query.labels.items() if grade == 1}
        if not stale:
            continue
        updated += 1
        ranking = outcome.ranking[:depth]
        first_answer = next((i for i, key in enumerate(ranking) if key in answers), depth)
        above += any(key in stale for key in ranking[:first_answer])
        returned += any(key in stale for key in (outcome.current or [])[:depth])
    return {
        "queries": updated,
        "ranked_above_rate": above / updated if updated else 0.0,
        "returned_with_current_rate": returned / updated if updated else 0.0,
        "answerable_queries": answerable,
        "answer_dropped_with_current_rate": dropped / answerable if answerable else 0.0,
    }


def no_answer(run: Run, system: str = "engram", threshold: float = 0.5) -> dict:
    """Top cosine of no-answer vs answerable queries, and the confidence rule's error rates:
    false positive = a no-answer query given confidence >= 0.5; false negative = an answerable one below."""
    tops: dict[str, list[float]] = {"no-answer": [], "answerable": []}
    fp = fn = none = answerable = 0
    for query, outcome in zip(run.queries, run.outcomes[system], strict=True):
        kind = "no-answer" if query.category == "no-answer" else "answerable"
        tops[kind].append(outcome.top_similarity)
        confident = (outcome.confidence or 0.0) >= threshold
        if kind == "no-answer":
            none += 1
            fp += confident
        else:
            answerable += 1
            fn += not confident
    return {
        "top_similarity": {kind: _quantiles(values) for kind, values in tops.items()},
        "false_positive_rate": fp / none if none else 0.0,
        "false_negative_rate": fn / answerable if answerable else 0.0,
        "no_answer_queries": none,
        "answerable_queries": answerable,
    }


def markdown(result: dict, systems: Sequence[str] | None = None) -> str:
    metrics, diffs = result["metrics"], result["vs_vector"]
    systems = list(systems or metrics)
    lines = [
        "| system | category | n | hit@1 | recall@5 | MRR@10 | nDCG@10 |",
        "|---|---|---|---|---|---|---|",
    ]
    for system in systems:
        for category, row in metrics[system].items():
            lines.append(
                f"| {system} | {category} | {row['n']} | {row['hit@1']:.3f} | {row['recall@5']:.3f} "
                f"| {row['mrr@10']:.3f} | {row['ndcg@10']:.3f} |"
            )
    lines += ["", "Difference from vector (mean, paired bootstrap 95% CI):", "",
              "| system | category | Δ hit@1 | Δ nDCG@10 |", "|---|---|---|---|"]  # fmt: skip
    for system in systems:
        for category, row in diffs.get(system, {}).items():
            lines.append(f"| {system} | {category} | {_ci(row['hit@1'])} | {_ci(row['ndcg@10'])} |")
    na = result["no_answer"]
    lines += ["", "Top cosine (min / p25 / median / p75 / max):", ""]
    for kind, q in na["top_similarity"].items():
        lines.append(f"- {kind}: " + " / ".join(f"{v:.3f}" for v in q))
    lines.append(
        f"- confidence < 0.5 as 'no answer': false positives {na['false_positive_rate']:.2f} of "
        f"{na['no_answer_queries']} no-answer queries, false negatives {na['false_negative_rate']:.2f} of "
        f"{na['answerable_queries']} answerable ones"
    )
    leaks = result.get("stale_leaks")
    if leaks:
        lines.append(
            f"- stale leaks on {leaks['queries']} updated-fact queries (engram): an older statement above the "
            f"current one {leaks['ranked_above_rate']:.3f}, returned with current on "
            f"{leaks['returned_with_current_rate']:.3f}; an answer dropped with current on "
            f"{leaks['answer_dropped_with_current_rate']:.3f} of {leaks['answerable_queries']} answerable queries"
        )
    return "\n".join(lines)


def _ci(triple) -> str:
    mean, low, high = triple
    return f"{mean:+.3f} [{low:+.3f}, {high:+.3f}]"


def _mean(values: list[float]) -> float:
    return float(np.mean(values)) if values else 0.0


def _quantiles(values: list[float]) -> list[float]:
    return np.percentile(values, [0, 25, 50, 75, 100]).tolist() if values else [0.0] * 5
