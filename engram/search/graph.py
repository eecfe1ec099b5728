"""Nearest neighbours among a space's newest memories (getMemoryGraph): exact, pairwise, small N."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from engram.search.index import SpaceIndex


@dataclass
class Neighbors:
    row_ids: np.ndarray  # int64 [m]: the newest live rows, newest first
    neighbor_ids: np.ndarray  # int64 [m, k]: each row's nearest others, best first (-1 pads when m <= k)
    scores: np.ndarray  # float32 [m, k] cosine (-inf pads)


def newest_neighbors(index: SpaceIndex, limit: int, k: int) -> Neighbors:
    """Exact kNN among the newest `limit` live rows (limit is small: one m x m fp32 product)."""
    positions = np.flatnonzero(index.live)[::-1][: max(limit, 0)]
    m = positions.shape[0]
    width = max(k, 0)
    if m == 0 or width == 0:
        return Neighbors(
            index.row_ids[positions],
            np.full((m, width), -1, np.int64),
            np.full((m, width), -np.inf, np.float32),
        )
    vectors = index.vectors(positions).astype(
        np.float64
    )  # float64: equal pairs score equal (see index._exact_scores)
    sims = (vectors @ vectors.T).astype(np.float32)
    np.fill_diagonal(sims, -np.inf)  # a memory is not its own neighbour
    ids = index.row_ids[positions]
    # Sort each row by score desc, ties by row id asc (deterministic), then cut to k.
    order = np.lexsort((np.broadcast_to(ids, sims.shape), -sims), axis=1)[:, : min(width, m - 1)]
    out_ids = np.full((m, width), -1, np.int64)
    out_scores = np.full((m, width), -np.inf, np.float32)
    out_ids[:, : order.shape[1]] = ids[order]
    out_scores[:, : order.shape[1]] = np.take_along_axis(sims, order, axis=1)
    return Neighbors(ids, out_ids, out_scores)
