"""Convex fusion of vector and keyword scores into one relevance in [0, 1] (docs/compat.md "Scores").

    score = w * similarity + (1 - w) * bm25 / max_bm25

- `similarity` is the cosine similarity clipped to [0, 1], kept absolute (not min-max normalised over
  the candidates, unlike the convex fusion it follows): a minimum score such as GPTBots' doc_correlation
  must still reject a result set that is uniformly poor, and at w = 1 the score is exactly the similarity
  a vector search reports.
- `bm25 / max_bm25` divides by the best keyword score among the candidates, so keyword evidence is
  relative to the best keyword match (BM25 has no absolute scale); at w = 0 the best keyword match
  scores 1.
- A candidate missing one score (no vector under the space's model, or no query word) counts 0 for it.
Ties go to the lower row id (the older memory), so the order is deterministic.
"""

from __future__ import annotations

from collections.abc import Mapping


def fuse(
    similarity: Mapping[int, float], keyword: Mapping[int, float], weight: float
) -> list[tuple[int, float]]:
    """(row id, fused score) of every candidate in either map, best first."""
    if not 0.0 <= weight <= 1.0:
        raise ValueError(f"weight must be in [0, 1], got {weight}")
    best_keyword = max((s for s in keyword.values() if s > 0), default=0.0)
    fused = []
    for row_id in similarity.keys() | keyword.keys():
        sim = min(max(similarity.get(row_id, 0.0), 0.0), 1.0)
        kw = keyword.get(row_id, 0.0) / best_keyword if best_keyword > 0 else 0.0
        fused.append((row_id, weight * sim + (1.0 - weight) * max(kw, 0.0)))
    fused.sort(key=lambda item: (-item[1], item[0]))
    return fused
