"""Search filters (author, tags all-of, since) evaluated over in-memory columns, before any ranking.

Columns are indexed by *position* (0..n-1, the order rows were added, which is also row-id order).
Evaluating a filter is a few vectorised passes over n values, so it costs microseconds at 100k rows and
lets the planner count the allowed rows before it chooses exact or approximate search.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Filters:
    author: str | None = None  # exact DID
    tags: tuple[str, ...] = ()  # every tag must be present
    since_ms: int | None = None  # created_at >= since_ms
    until_ms: int | None = None  # created_at <= until_ms (the Memory Bank shim's inclusive end_date)

    def is_empty(self) -> bool:
        return self.author is None and not self.tags and self.since_ms is None and self.until_ms is None


class FilterColumns:
    """Author codes (int32), created_at (int64 ms) and tag -> sorted positions, grown by `extend`."""

    def __init__(self) -> None:
        self.author_codes = np.zeros(0, dtype=np.int32)
        self.author_vocab: dict[str, int] = {}
        self.created_at = np.zeros(0, dtype=np.int64)
        self.tag_postings: dict[str, np.ndarray] = {}

    def __len__(self) -> int:
        return int(self.created_at.shape[0])

    def extend(self, authors: list[str], created_at: np.ndarray, tags: list[tuple[str, ...]]) -> None:
        start = len(self)
        codes = np.fromiter(
            (self.author_vocab.setdefault(a, len(self.author_vocab)) for a in authors),
            dtype=np.int32,
            count=len(authors),
        )
        self.author_codes = np.concatenate([self.author_codes, codes])
        self.created_at = np.concatenate([self.created_at, np.asarray(created_at, dtype=np.int64)])
        new: dict[str, list[int]] = {}
        for offset, row_tags in enumerate(tags):
            for tag in set(row_tags):
                new.setdefault(tag, []).append(start + offset)
        for tag, positions in new.items():
            # New positions are all larger than existing ones, so appending keeps each posting list sorted.
            added = np.asarray(positions, dtype=np.int64)
            old = self.tag_postings.get(tag)
            self.tag_postings[tag] = added if old is None else np.concatenate([old, added])

    def allowed(self, filters: Filters, live: np.ndarray) -> np.ndarray:
        """Boolean mask over positions: live rows that pass every filter."""
        mask = live.copy()
        if filters.author is not None:
            code = self.author_vocab.get(filters.author)
            if code is None:
                return np.zeros_like(mask)
            mask &= self.author_codes == code
        if filters.since_ms is not None:
            mask &= self.created_at >= filters.since_ms
        if filters.until_ms is not None:
            mask &= self.created_at <= filters.until_ms
        for tag in dict.fromkeys(filters.tags):
            postings = self.tag_postings.get(tag)
            if postings is None:
                return np.zeros_like(mask)
            has_tag = np.zeros_like(mask)
            has_tag[postings] = True
            mask &= has_tag
        return mask

    def take(self, positions: np.ndarray) -> tuple[list[str], np.ndarray, list[tuple[str, ...]]]:
        """Columns of the given positions as IndexRows-style lists (used to compact away tombstones)."""
        names = np.empty(len(self.author_vocab), dtype=object)
        for name, code in self.author_vocab.items():
            names[code] = name
        authors = names[self.author_codes[positions]].tolist() if len(positions) else []
        row_tags: list[list[str]] = [[] for _ in range(len(positions))]
        lookup = {int(p): i for i, p in enumerate(positions)}
        for tag, postings in self.tag_postings.items():
            for p in postings[np.isin(postings, positions)]:
                row_tags[lookup[int(p)]].append(tag)
        return authors, self.created_at[positions].copy(), [tuple(t) for t in row_tags]

    def nbytes(self) -> int:
        postings = sum(p.nbytes for p in self.tag_postings.values())
        return (
            self.author_codes.nbytes
            + self.created_at.nbytes
            + postings
            + 64 * (len(self.author_vocab) + len(self.tag_postings))
        )
