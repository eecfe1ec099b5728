"""Convex fusion of vector and keyword scores into one relevance in [0, 1] (docs/compat.md "Scores").

    score = w * similarity + (1 - w) * keyword

- `similarity` is the cosine similarity clipped to [0, 1], kept absolute (not min-max normalised over
  the candidates, unlike the convex fusion it follows): a minimum score such as GPTBots' doc_correlation
  must still reject a result set that is uniformly poor, and at w = 1 the score is exactly the similarity
  a vector search reports.
- `keyword` is the BM25 score as a share of the most the query can attain (engram/search/keyword_index.py),
  in [0, 1], also absolute: a memory sharing only a common word of the query earns little, however weak
  the other candidates are (an earlier version divided by the best candidate's BM25, so any memory
  sharing "what" or "my" got the whole keyword share when nothing better matched). Measured against
  powers of the share (which would favour full matches) and RRF: the plain share ranks best
  (docs/benchmarks.md#retrieval-quality-engram-eval).
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
    fused = []
    for row_id in similarity.keys() | keyword.keys():
        sim = min(max(similarity.get(row_id, 0.0), 0.0), 1.0)
        kw = min(max(keyword.get(row_id, 0.0), 0.0), 1.0)
        fused.append((row_id, weight * sim + (1.0 - weight) * kw))
    fused.sort(key=lambda item: (-item[1], item[0]))
    return fused
