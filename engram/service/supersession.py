"""Newer statements before the ones they replace, in the rankings engram chooses (docs/compat.md).

A memory B restates (supersedes) an older memory A, for a given query, when
- B's `attrs.supersedes` names A (its at:// URI or its rkey): the writer said so; or
- B is newer, the two are near-duplicates in meaning (cosine of their vectors >= `min_similarity`), and B
  is nearly as relevant to the query as A (fused score >= `min_relevance` x A's): both answer the same
  question, so they are about the same subject, and the later one is the current state.
Only the order changes: B is moved to just before A, A keeps its place after it and is marked
`superseded_by` B; nothing is dropped (a user may be asking about history). Chains resolve to the newest.
The thresholds are tuned on the tuning half of the labelled set (`engram eval`, docs/benchmarks.md).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ..store import Memory


@dataclass(frozen=True)
class Restatements:
    min_similarity: float = 0.55
    min_relevance: float = 0.8


def explicitly_supersedes(newer: Memory, older: Memory) -> bool:
    named = newer.attrs.get("supersedes") if isinstance(newer.attrs, dict) else None
    names = named if isinstance(named, list) else [named]
    return any(isinstance(n, str) and n in (older.uri, older.rkey) for n in names)


def newer_first(
    ranked: Sequence[tuple[int, float]],
    memories: Mapping[int, Memory],
    vectors: Mapping[int, np.ndarray],
    rule: Restatements,
) -> tuple[list[int], dict[int, int]]:
    """(row ids in their new order, {older row: the newest row restating it}) over the hydrated rows of
    `ranked` (best first); `vectors` are unit vectors of those rows that have one."""
    pool = [row for row, _ in ranked if row in memories]
    score = dict(ranked)
    cosine = _cosines(pool, vectors)
    replaced_by: dict[int, int] = {}
    for older in pool:
        newest = None
        for newer in pool:
            if memories[newer].created_ms <= memories[older].created_ms:
                continue
            if _restates(memories[newer], memories[older], cosine.get((older, newer)), score, rule) and (
                newest is None or memories[newer].created_ms > memories[newest].created_ms
            ):
                newest = newer
        if newest is not None:
            replaced_by[older] = newest
    current = {row: _follow(row, replaced_by) for row in replaced_by}
    order: list[int] = []
    placed: set[int] = set()
    for row in pool:
        if row in placed:
            continue
        head = current.get(row)
        if head is not None and head not in placed:
            order.append(head)
            placed.add(head)
        order.append(row)
        placed.add(row)
    return order, current


def _cosines(pool: Sequence[int], vectors: Mapping[int, np.ndarray]) -> dict[tuple[int, int], float]:
    """Cosine of every pair of pool rows that have vectors, from one matrix product."""
    rows = [row for row in pool if row in vectors]
    if not rows:
        return {}
    matrix = np.stack([vectors[row] for row in rows])
    products = (matrix @ matrix.T).tolist()
    return {(a, b): products[i][j] for i, a in enumerate(rows) for j, b in enumerate(rows)}


def _restates(newer: Memory, older: Memory, cosine: float | None, score, rule: Restatements) -> bool:
    if explicitly_supersedes(newer, older):
        return True
    if cosine is None:
        return False
    return cosine >= rule.min_similarity and score[newer.row_id] >= rule.min_relevance * score[older.row_id]


def _follow(row: int, replaced_by: Mapping[int, int]) -> int:
    seen = {row}
    while row in replaced_by and replaced_by[row] not in seen:
        row = replaced_by[row]
        seen.add(row)
    return row
