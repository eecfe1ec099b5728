"""Ranking metrics over graded relevance, and a paired bootstrap for differences between systems.

A query's labels map memory keys to grades: 2 for the answer, 1 for a memory that helps (an older
statement of an updated fact, say); no labels means the query has no answer in the corpus. hit@1, recall@k
and MRR@k count only the answers (the highest grade); nDCG@k uses every grade with gain 2^g - 1.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np

BOOTSTRAP_SAMPLES = 2000


def answers(labels: Mapping[str, int]) -> set[str]:
    best = max(labels.values(), default=0)
    return {key for key, grade in labels.items() if grade == best and grade > 0}


def hit_at_1(ranking: Sequence[str], labels: Mapping[str, int]) -> float:
    return float(bool(ranking) and ranking[0] in answers(labels))


def recall_at(ranking: Sequence[str], labels: Mapping[str, int], k: int = 5) -> float:
    wanted = answers(labels)
    return len(wanted & set(ranking[:k])) / len(wanted) if wanted else 0.0


def mrr_at(ranking: Sequence[str], labels: Mapping[str, int], k: int = 10) -> float:
    wanted = answers(labels)
    for rank, key in enumerate(ranking[:k], start=1):
        if key in wanted:
            return 1.0 / rank
    return 0.0


def ndcg_at(ranking: Sequence[str], labels: Mapping[str, int], k: int = 10) -> float:
    def dcg(grades: Sequence[int]) -> float:
        return sum((2**g - 1) / math.log2(rank + 1) for rank, g in enumerate(grades, start=1))

    ideal = dcg(sorted(labels.values(), reverse=True)[:k])
    return dcg([labels.get(key, 0) for key in ranking[:k]]) / ideal if ideal > 0 else 0.0


METRICS = {"hit@1": hit_at_1, "recall@5": recall_at, "mrr@10": mrr_at, "ndcg@10": ndcg_at}


def paired_bootstrap(a: Sequence[float], b: Sequence[float], *, seed: int = 0) -> tuple[float, float, float]:
    """(mean of b - a, 2.5th and 97.5th percentile of the resampled mean): queries are resampled with
    replacement and both systems keep their own score for the same query, so the pairing is preserved."""
    diff = np.asarray(b, dtype=np.float64) - np.asarray(a, dtype=np.float64)
    if diff.shape[0] == 0:
        return 0.0, 0.0, 0.0
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, diff.shape[0], size=(BOOTSTRAP_SAMPLES, diff.shape[0]))
    means = diff[picks].mean(axis=1)
    low, high = np.percentile(means, [2.5, 97.5])
    return float(diff.mean()), float(low), float(high)
