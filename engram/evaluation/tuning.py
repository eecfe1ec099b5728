"""Grid search, over one run's collected candidates, for the ranking policy's settings (`engram eval
--tune` on the tuning half; the chosen values become DEFAULT_POLICY in engram/service/ranking.py)."""

from __future__ import annotations

import dataclasses

import numpy as np

from ..service.ranking import RankingPolicy
from ..service.supersession import Restatements
from .metrics import hit_at_1, mrr_at
from .runner import Run
from .systems import ALPHAS

SIMILARITIES = (0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.88, 0.9, 0.92, 0.95)  # e5's cosines sit high
RELEVANCES = (0.5, 0.6, 0.7, 0.8, 0.9)
KEYWORDS = (0.0, 0.25, 0.5, 0.75, 1.0)  # Restatements.min_keyword; 0 is the rule without it


def _objective(run: Run, outcomes) -> float:
    """Mean hit@1 plus a tenth of mean MRR@10 over the answerable queries (MRR breaks hit@1 ties)."""
    pairs = [(o, q) for o, q in zip(outcomes, run.queries, strict=True) if q.category != "no-answer"]
    return float(
        np.mean([hit_at_1(o.ranking, q.labels) + 0.1 * mrr_at(o.ranking, q.labels) for o, q in pairs])
    )


def tune(run: Run) -> dict:
    fusions = [RankingPolicy("convex", a, None) for a in ALPHAS] + [RankingPolicy("rrf", 0.0, None)]
    best_fusion = max(fusions, key=lambda p: _objective(run, run.rerank("_tune", p)))
    grid = [
        dataclasses.replace(best_fusion, restatements=Restatements(s, r, w))
        for s in SIMILARITIES
        for r in RELEVANCES
        for w in KEYWORDS
    ]
    best = max([best_fusion, *grid], key=lambda p: _objective(run, run.rerank("_tune", p)))
    # The weight once more, with the chosen restatements on: the two interact (restatements reorder what
    # the fusion ranked), so the weight best alone need not be best in the whole pipeline.
    if best.fusion == "convex":
        weights = [dataclasses.replace(best, weight=a) for a in ALPHAS]
        best = max([best, *weights], key=lambda p: _objective(run, run.rerank("_tune", p)))
    objective = _objective(run, run.rerank("_tune", best))
    run.outcomes.pop("_tune", None)
    threshold_similarity, threshold_coverage = _empty_result_rule(run, best)
    return {
        "fusion": best.fusion,
        "weight": best.weight,
        "restatements": dataclasses.asdict(best.restatements) if best.restatements else None,
        "answer_similarity": threshold_similarity,
        "answer_coverage": threshold_coverage,
        "objective": objective,
    }


def _empty_result_rule(run: Run, policy: RankingPolicy) -> tuple[float, float]:
    """The (top cosine, coverage) thresholds maximising balanced accuracy of "confidence >= 0.5 iff the
    query has an answer" (balanced: there are far fewer no-answer queries than answerable ones)."""
    outcomes = run.rerank("_tune", policy)
    run.outcomes.pop("_tune", None)
    has_answer = np.array([q.category != "no-answer" for q in run.queries])
    tops = np.array([o.top_similarity for o in outcomes])
    covered = np.array([o.coverage for o in outcomes])
    if has_answer.all() or not has_answer.any():
        return policy.answer_similarity, policy.answer_coverage
    best, best_score = (policy.answer_similarity, policy.answer_coverage), -1.0
    for s in np.arange(0.3, 0.95, 0.02):
        for c in np.arange(0.1, 1.0, 0.02):
            said = (tops >= s) | (covered >= c)
            score = 0.5 * said[has_answer].mean() + 0.5 * (~said[~has_answer]).mean()
            if score > best_score + 1e-9:
                best, best_score = (round(float(s), 2), round(float(c), 2)), score
    return best
