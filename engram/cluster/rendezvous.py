"""Rendezvous (highest-random-weight) hashing: which live node should own a space.

Every node scores `sha256(space + "\\0" + node_id)`, read as a big-endian integer from its first 8 bytes;
the highest score owns the space and a tie goes to the lower id. Each node computes the same answer from
the same list of live nodes with no coordination, and when a node joins or leaves only the spaces it wins or
held move (about 1/N of them), unlike `hash % N` (docs/scale-out.md#nodes-and-ownership).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable


def score(space: str, node_id: str) -> int:
    digest = hashlib.sha256(f"{space}\0{node_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big")


def owner(space: str, node_ids: Iterable[str]) -> str | None:
    """The node that should own `space` among `node_ids`, or None when there is none."""
    best: tuple[int, str] | None = None
    for node_id in node_ids:
        s = score(space, node_id)
        if best is None or s > best[0] or (s == best[0] and node_id < best[1]):
            best = (s, node_id)
    return best[1] if best is not None else None
