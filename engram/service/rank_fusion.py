"""Reciprocal rank fusion (RRF) of the vector and keyword candidate lists, next to convex fusion (fusion.py).

    score = sum over the lists a candidate is in of 1 / (K + rank),  rank counted from 1

divided by 2 / (K + 1), the score of a candidate first in both lists, so it lies in [0, 1] like the convex
score. RRF ignores score scales entirely, which is its appeal and its cost: a memory far ahead on one side
gains no more than one just ahead. K = 60 as in the original paper (Cormack et al., SIGIR 2009).
"""

from __future__ import annotations

from collections.abc import Mapping

K = 60


def ranks(scores: Mapping[int, float]) -> dict[int, int]:
    """1-based rank of each row, best score first, ties to the lower row id (the order fuse() uses)."""
    order = sorted(scores.items(), key=lambda item: (-item[1], item[0]))
    return {row_id: rank for rank, (row_id, _) in enumerate(order, start=1)}


def rrf_fuse(
    similarity: Mapping[int, float], keyword: Mapping[int, float], k: int = K
) -> list[tuple[int, float]]:
    """(row id, fused score in [0, 1]) of every candidate in either map, best first."""
    top = 2.0 / (k + 1)
    fused: dict[int, float] = {}
    for side in (similarity, {r: s for r, s in keyword.items() if s > 0}):
        for row_id, rank in ranks(side).items():
            fused[row_id] = fused.get(row_id, 0.0) + 1.0 / (k + rank)
    return sorted(((r, s / top) for r, s in fused.items()), key=lambda item: (-item[1], item[0]))
