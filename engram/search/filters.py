"""Search filters evaluated over in-memory columns, before any ranking (docs/internals.md#search).

A filter is author, tags (all-of, any-of, none-of), a createdAt window (`since`, `until`, inclusive) and
typed predicates on `attrs` (`AttrPredicate`: string equality and prefix, number ranges, datetime ranges,
membership in a list of values). Every path that ranks (the vector index, exact and HNSW, the keyword
index, the hybrid ranking built on both) evaluates the same `Filters` over the same `FilterColumns` into
a mask of allowed positions before it scores anything, so a filter never shortens a list after ranking.

Columns are indexed by *position* (0..n-1, the order rows were added, which is also row-id order).
Evaluating a filter is a few vectorised passes over n values, so it costs microseconds at 100k rows and
lets the planner count the allowed rows before it chooses exact or approximate search.

`attrs` columns: each top-level field whose value is a string, number or boolean, or a list of them, is
indexed as postings of (field, value) -> positions, like tags (a list's elements each get the position:
a predicate on a list field matches when any element matches, as Qdrant and mem0 read arrays). Numbers
and datetimes (strings in RFC 3339 form) also get a sorted value column per field for ranges. Nested
objects and strings over MAX_ATTR_STRING characters are not indexed: no predicate matches them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import numpy as np
import orjson

MAX_ATTR_STRING = 512
ATTR_OPS = ("eq", "prefix", "in", "gte", "lte", "after", "before")
Scalar = str | float | bool
_Column = tuple[np.ndarray, np.ndarray]  # (sorted values, their positions)


@dataclass(frozen=True)
class AttrPredicate:
    """One condition on `attrs[field]`; every given bound must hold (a range gives both ends).

    `eq` / `in_`: the value (or, for a list field, an element) equals it / one of them; `prefix`: a string
    value starts with it; `gte` / `lte`: a number value within; `after_ms` / `before_ms`: a datetime
    value within (inclusive, milliseconds since the epoch)."""

    field: str
    eq: Scalar | None = None
    prefix: str | None = None
    in_: tuple[Scalar, ...] | None = None
    gte: float | None = None
    lte: float | None = None
    after_ms: int | None = None
    before_ms: int | None = None


@dataclass(frozen=True)
class Filters:
    author: str | None = None  # exact DID
    tags: tuple[str, ...] = ()  # every tag must be present
    since_ms: int | None = None  # created_at >= since_ms
    until_ms: int | None = None  # created_at <= until_ms
    tags_any: tuple[str, ...] = ()  # at least one of these tags (when given)
    tags_none: tuple[str, ...] = ()  # none of these tags
    attrs: tuple[AttrPredicate, ...] = field(default=())

    def is_empty(self) -> bool:
        return (
            self.author is None
            and not self.tags
            and self.since_ms is None
            and self.until_ms is None
            and not self.tags_any
            and not self.tags_none
            and not self.attrs
        )


def attr_token(name: str, value: Scalar) -> str:
    """The postings key of one (field, scalar): JSON keeps "1", 1 and true apart; an integral number is
    written as an integer so 1 and 1.0 meet."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return orjson.dumps([name, value]).decode()


def datetime_ms(text: str) -> int | None:
    """An RFC 3339 datetime (a `Z` or offset; a bare date counts as midnight UTC) in ms, else None."""
    if not 10 <= len(text) <= 40 or not text[:4].isdigit() or text[4:5] != "-":
        return None
    try:
        parsed = datetime.fromisoformat(text.replace("z", "Z"))
    except ValueError:
        return None
    if parsed.tzinfo is None:
        if len(text) != 10:
            return None  # a time without a zone means nothing across machines
        parsed = parsed.replace(tzinfo=UTC)
    return int(parsed.timestamp() * 1000)


def _scalars(value: Any) -> list[Scalar]:
    items = value if isinstance(value, list) else [value]
    out: list[Scalar] = []
    for item in items:
        if isinstance(item, bool | str):
            if not isinstance(item, str) or len(item) <= MAX_ATTR_STRING:
                out.append(item)
        elif isinstance(item, int | float) and math.isfinite(item):
            out.append(float(item))
    return out


class AttrColumns:
    """(field, value) -> sorted positions, plus per field a sorted (value, position) column of its numbers
    and of its datetimes, derived from the postings on first use after a change."""

    def __init__(self) -> None:
        self.postings: dict[str, np.ndarray] = {}
        self._ranges: dict[str, tuple[_Column, _Column]] | None = None
        self._by_field: dict[str, list[tuple[Scalar, np.ndarray]]] | None = None

    def extend(self, start: int, attrs: Sequence[Mapping[str, Any] | None]) -> None:
        new: dict[str, list[int]] = {}
        for offset, row in enumerate(attrs):
            if not row:
                continue
            for name, value in row.items():
                for scalar in dict.fromkeys(_scalars(value)):
                    new.setdefault(attr_token(name, scalar), []).append(start + offset)
        for token, positions in new.items():
            added = np.asarray(positions, dtype=np.int64)
            old = self.postings.get(token)
            self.postings[token] = added if old is None else np.concatenate([old, added])
        if new:
            self._ranges = self._by_field = None

    def take(self, positions: np.ndarray) -> list[dict[str, list[Any]] | None]:
        """The indexed projection of the given positions' attrs ({field: [scalars]}): extending with it
        gives the same columns, which is all a compaction needs."""
        out: list[dict[str, list[Any]] | None] = [None] * len(positions)
        lookup = {int(p): i for i, p in enumerate(positions)}
        for token, postings in self.postings.items():
            name, value = orjson.loads(token)
            for p in postings[np.isin(postings, positions)]:
                row = out[lookup[int(p)]]
                if row is None:
                    row = out[lookup[int(p)]] = {}
                row.setdefault(name, []).append(value)
        return out

    def values(self, name: str) -> list[tuple[Scalar, np.ndarray]]:
        """Each scalar value of the field with its positions (cached until attrs change)."""
        return self._fields().get(name, [])

    def _fields(self) -> dict[str, list[tuple[Scalar, np.ndarray]]]:
        if self._by_field is None:
            by_field: dict[str, list[tuple[Scalar, np.ndarray]]] = {}
            for token, postings in self.postings.items():
                name, value = orjson.loads(token)
                by_field.setdefault(name, []).append((value, postings))
            self._by_field = by_field
        return self._by_field

    def _range_columns(
        self, name: str
    ) -> tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]:
        """((numbers, positions), (datetimes ms, positions)) of a field, each sorted by value."""
        if self._ranges is None:
            self._ranges = {}
        if name not in self._ranges:
            columns: list[_Column] = []
            for convert in (_number_of, _datetime_of):
                values, positions = [], []
                for value, postings in self._fields().get(name, []):
                    converted = convert(value)
                    if converted is not None:
                        values.append(np.full(postings.shape[0], converted, dtype=np.float64))
                        positions.append(postings)
                v = np.concatenate(values) if values else np.zeros(0, np.float64)
                p = np.concatenate(positions) if positions else np.zeros(0, np.int64)
                order = np.argsort(v, kind="stable")
                columns.append((v[order], p[order]))
            self._ranges[name] = (columns[0], columns[1])
        numbers, dates = self._ranges[name]
        return numbers, dates

    def allowed(self, predicate: AttrPredicate, n: int) -> np.ndarray:
        """Boolean mask over n positions of the rows the predicate holds for."""
        mask = np.ones(n, dtype=bool)
        if predicate.eq is not None:
            mask &= self._mask_of([predicate.eq], predicate.field, n)
        if predicate.in_ is not None:
            mask &= self._mask_of(predicate.in_, predicate.field, n)
        if predicate.prefix is not None:
            prefix = predicate.prefix
            hits = np.zeros(n, dtype=bool)
            for value, postings in self._fields().get(predicate.field, []):
                if isinstance(value, str) and value.startswith(prefix):
                    hits[postings] = True
            mask &= hits
        if predicate.gte is not None or predicate.lte is not None:
            (values, positions), _ = self._range_columns(predicate.field)
            mask &= _within(values, positions, predicate.gte, predicate.lte, n)
        if predicate.after_ms is not None or predicate.before_ms is not None:
            _, (values, positions) = self._range_columns(predicate.field)
            mask &= _within(values, positions, predicate.after_ms, predicate.before_ms, n)
        return mask

    def _mask_of(self, values: Sequence[Scalar], name: str, n: int) -> np.ndarray:
        hits = np.zeros(n, dtype=bool)
        for value in values:
            scalar = float(value) if isinstance(value, int) and not isinstance(value, bool) else value
            postings = self.postings.get(attr_token(name, scalar))
            if postings is not None:
                hits[postings] = True
        return hits

    def nbytes(self) -> int:
        return sum(p.nbytes + 64 + len(t) for t, p in self.postings.items())


def _number_of(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _datetime_of(value: Any) -> float | None:
    if not isinstance(value, str):
        return None
    ms = datetime_ms(value)
    return None if ms is None else float(ms)


def _within(
    values: np.ndarray, positions: np.ndarray, low: float | None, high: float | None, n: int
) -> np.ndarray:
    start = 0 if low is None else int(np.searchsorted(values, low, side="left"))
    end = values.shape[0] if high is None else int(np.searchsorted(values, high, side="right"))
    hits = np.zeros(n, dtype=bool)
    hits[positions[start:end]] = True
    return hits


class FilterColumns:
    """Author codes (int32), created_at (int64 ms), tag -> sorted positions and the attrs columns, grown
    by `extend`."""

    def __init__(self) -> None:
        self.author_codes = np.zeros(0, dtype=np.int32)
        self.author_vocab: dict[str, int] = {}
        self.created_at = np.zeros(0, dtype=np.int64)
        self.tag_postings: dict[str, np.ndarray] = {}
        self.attrs = AttrColumns()

    def __len__(self) -> int:
        return int(self.created_at.shape[0])

    def extend(
        self,
        authors: list[str],
        created_at: np.ndarray,
        tags: list[tuple[str, ...]],
        attrs: Sequence[Mapping[str, Any] | None] = (),
    ) -> None:
        start = len(self)
        self.attrs.extend(start, attrs)
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
        if filters.tags_any:
            mask &= self._any_tag(filters.tags_any, mask.shape[0])
        if filters.tags_none:
            mask &= ~self._any_tag(filters.tags_none, mask.shape[0])
        for predicate in filters.attrs:
            mask &= self.attrs.allowed(predicate, mask.shape[0])
        return mask

    def _any_tag(self, tags: Sequence[str], n: int) -> np.ndarray:
        hits = np.zeros(n, dtype=bool)
        for tag in tags:
            postings = self.tag_postings.get(tag)
            if postings is not None:
                hits[postings] = True
        return hits

    def take(
        self, positions: np.ndarray
    ) -> tuple[list[str], np.ndarray, list[tuple[str, ...]], list[dict[str, list[Any]] | None]]:
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
        return (
            authors,
            self.created_at[positions].copy(),
            [tuple(t) for t in row_tags],
            self.attrs.take(positions),
        )

    def nbytes(self) -> int:
        postings = sum(p.nbytes for p in self.tag_postings.values())
        return (
            self.author_codes.nbytes
            + self.created_at.nbytes
            + postings
            + 64 * (len(self.author_vocab) + len(self.tag_postings))
            + self.attrs.nbytes()
        )
