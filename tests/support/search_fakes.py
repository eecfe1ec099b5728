"""An in-memory `IndexSource` (a real implementation of the protocol over numpy arrays) and a numpy oracle.

Row ids grow; an update is delete + add with a new id; every write bumps the space generation, exactly the
contract in engram/search/rows.py. `delay_s` makes `delta` slow, to exercise loading timeouts.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

import numpy as np
from hypothesis import strategies as st

from engram.search.filters import Filters
from engram.search.rows import DeltaUnavailable, IndexDelta, IndexRows

MODEL = "minilm@test"


@dataclass
class _Row:
    row_id: int
    vector: np.ndarray  # float16 [d]
    author: str
    created_at: int
    tags: tuple[str, ...]
    model_key: str


@dataclass
class _Space:
    generation: int = 0
    rows: dict[int, _Row] = field(default_factory=dict)
    deleted: list[tuple[int, int]] = field(default_factory=list)  # (generation, row id)
    pruned_through: int = 0


class MemorySource:
    def __init__(self, delay_s: float = 0.0):
        self.spaces: dict[str, _Space] = {}
        self.next_id = 1
        self.delay_s = delay_s
        self.delta_calls = 0
        self.full_deltas = 0
        self.prunes: list[tuple[str, int]] = []

    def add(
        self, space: str, vectors, authors=None, created_at=None, tags=None, model_key: str = MODEL
    ) -> np.ndarray:
        state = self.spaces.setdefault(space, _Space())
        vectors = np.asarray(vectors, dtype=np.float16)
        n = vectors.shape[0]
        ids = np.arange(self.next_id, self.next_id + n, dtype=np.int64)
        self.next_id += n
        for i, row_id in enumerate(ids):
            state.rows[int(row_id)] = _Row(
                int(row_id),
                vectors[i],
                authors[i] if authors is not None else "did:plc:alice",
                int(created_at[i]) if created_at is not None else 1_700_000_000_000 + int(row_id),
                tuple(tags[i]) if tags is not None else (),
                model_key,
            )
        state.generation += 1
        return ids

    def delete(self, space: str, row_ids) -> None:
        state = self.spaces[space]
        state.generation += 1
        for row_id in row_ids:
            if state.rows.pop(int(row_id), None) is not None:
                state.deleted.append((state.generation, int(row_id)))

    def update(self, space: str, row_id: int, vector) -> int:
        old = self.spaces[space].rows[int(row_id)]
        self.delete(space, [row_id])
        return int(
            self.add(
                space, np.asarray(vector)[None, :], [old.author], [old.created_at], [old.tags], old.model_key
            )[0]
        )

    async def generation(self, space: str) -> int:
        return self.spaces.setdefault(space, _Space()).generation

    async def delta(self, space: str, model_key: str, after_row_id: int, since_generation: int) -> IndexDelta:
        self.delta_calls += 1
        if after_row_id == 0 and since_generation == 0:
            self.full_deltas += 1
        state = self.spaces.setdefault(space, _Space())
        # Snapshot on the loop (cheap copies, like a read transaction), then do the O(n) work on a thread,
        # as the real store does on its reader threads: the fake must not be what blocks the event loop.
        generation, snapshot, log = state.generation, list(state.rows.values()), list(state.deleted)
        if 0 < since_generation < state.pruned_through:  # as the store does: only a delta needs them
            raise DeltaUnavailable(f"deletions up to generation {state.pruned_through} were pruned")

        def collect() -> IndexDelta:
            rows = sorted(
                (r for r in snapshot if r.row_id > after_row_id and r.model_key == model_key),
                key=lambda r: r.row_id,
            )
            deleted = np.array([rid for gen, rid in log if gen > since_generation], dtype=np.int64)
            return IndexDelta(generation, rows_of(rows), deleted)

        delta = await asyncio.to_thread(collect)
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        return delta

    async def prune_tombstones(self, space: str, through_generation: int) -> int:
        state = self.spaces.setdefault(space, _Space())
        self.prunes.append((space, through_generation))
        kept = [(gen, rid) for gen, rid in state.deleted if gen > through_generation]
        dropped, state.deleted = len(state.deleted) - len(kept), kept
        state.pruned_through = max(state.pruned_through, through_generation)
        return dropped

    def live_rows(self, space: str, model_key: str = MODEL) -> IndexRows:
        return rows_of(
            [
                r
                for r in sorted(self.spaces[space].rows.values(), key=lambda r: r.row_id)
                if r.model_key == model_key
            ]
        )


def rows_of(rows: list[_Row]) -> IndexRows:
    if not rows:
        return IndexRows(np.zeros(0, np.int64), np.zeros((0, 0), np.float16), [], np.zeros(0, np.int64), [])
    return IndexRows(
        np.array([r.row_id for r in rows], dtype=np.int64),
        np.stack([r.vector for r in rows]).astype(np.float16),
        [r.author for r in rows],
        np.array([r.created_at for r in rows], dtype=np.int64),
        [r.tags for r in rows],
    )


def clustered(n: int, d: int, seed: int = 0, centres: int | None = None, centre_seed: int = 99) -> np.ndarray:
    """Unit vectors around n/500 shared centres (noise as large as the centre); queries use the same centres."""
    rng = np.random.default_rng(seed)
    c = (
        np.random.default_rng(centre_seed)
        .standard_normal((centres or max(1, n // 500), d))
        .astype(np.float32)
    )
    x = c[rng.integers(0, c.shape[0], n)] + rng.standard_normal((n, d)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def oracle(
    rows: IndexRows, query: np.ndarray, k: int, filters: Filters | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Brute force over the fp16-rounded unit vectors: (row ids, scores), score desc then row id asc."""
    if not len(rows):
        return np.zeros(0, np.int64), np.zeros(0, np.float32)
    x = rows.vectors.astype(np.float32)
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    norms[norms == 0] = 1
    unit = (x / norms).astype(np.float16).astype(np.float32)
    scores = (unit.astype(np.float64) @ query.astype(np.float64)).astype(np.float32)
    mask = np.ones(len(rows), dtype=bool)
    if filters is not None:
        attrs = rows.attrs or [None] * len(rows)
        tags = rows.tags or [()] * len(rows)
        mask = np.array(
            [
                passes(filters, rows.authors[i], int(rows.created_at[i]), tags[i], attrs[i])
                for i in range(len(rows))
            ],
            dtype=bool,
        )
    ids, scores = rows.row_ids[mask], scores[mask]
    order = np.lexsort((ids, -scores))[:k]
    return ids[order], scores[order]


def unit(v: np.ndarray) -> np.ndarray:
    v = np.asarray(v, dtype=np.float32)
    return v / np.linalg.norm(v)


def spaces_with_rows(count: int, rows: int = 20, dims: int = 16) -> tuple[MemorySource, list[str]]:
    """`count` spaces of `rows` clustered rows each in one source, and their names."""
    source = MemorySource()
    names = [f"at://did:plc:alice/garden.engram.space/s{i}" for i in range(count)]
    for i, name in enumerate(names):
        source.add(name, clustered(rows, dims, seed=i, centres=3))
    return source, names


def passes(filters: Filters, author: str, created_ms: int, tags, attrs) -> bool:
    """The filter semantics of docs/internals.md#search, one row at a time in plain Python: the
    oracle the columnar evaluation (engram/search/filters.py) is checked against."""
    if filters.author is not None and author != filters.author:
        return False
    if filters.since_ms is not None and created_ms < filters.since_ms:
        return False
    if filters.until_ms is not None and created_ms > filters.until_ms:
        return False
    if not all(t in tags for t in filters.tags):
        return False
    if filters.tags_any and not any(t in tags for t in filters.tags_any):
        return False
    if any(t in tags for t in filters.tags_none):
        return False
    return all(_attr_holds(p, (attrs or {}).get(p.field, _MISSING)) for p in filters.attrs)


_MISSING = object()


def _attr_holds(p, value) -> bool:
    from datetime import UTC, datetime

    items = value if isinstance(value, list) else [value]

    def same(a, b):
        if isinstance(a, bool) or isinstance(b, bool):
            return type(a) is type(b) and a == b
        if isinstance(a, int | float) and isinstance(b, int | float):
            return float(a) == float(b)
        return isinstance(a, str) and isinstance(b, str) and a == b

    def number(x):
        return None if isinstance(x, bool) or not isinstance(x, int | float) else float(x)

    def when(x):
        if not isinstance(x, str):
            return None
        try:
            d = datetime.fromisoformat(x)
        except ValueError:
            return None
        if d.tzinfo is None:
            if len(x) != 10:
                return None
            d = d.replace(tzinfo=UTC)
        return d.timestamp() * 1000

    def any_item(test):
        return any(test(x) for x in items if x is not _MISSING and not isinstance(x, dict | list))

    if p.eq is not None and not any_item(lambda x: same(x, p.eq)):
        return False
    if p.in_ is not None and not any_item(lambda x: any(same(x, v) for v in p.in_)):
        return False
    if p.prefix is not None and not any_item(lambda x: isinstance(x, str) and x.startswith(p.prefix)):
        return False
    if (p.gte is not None or p.lte is not None) and not any_item(
        lambda x: (
            number(x) is not None
            and (p.gte is None or number(x) >= p.gte)
            and (p.lte is None or number(x) <= p.lte)
        )
    ):
        return False
    if p.after_ms is None and p.before_ms is None:
        return True
    return any_item(
        lambda x: (
            when(x) is not None
            and (p.after_ms is None or when(x) >= p.after_ms)
            and (p.before_ms is None or when(x) <= p.before_ms)
        )
    )


# Shared by the search tests (each imports these from here, never from another test module).
SPACE = "at://did:plc:alice/garden.engram.space/main"
D = 16


def seeded(n=500, d=D, space=SPACE, seed=0, source=None):
    source = source or MemorySource()
    vectors = clustered(n, d, seed=seed, centres=10)
    source.add(
        space,
        vectors,
        authors=[f"did:plc:{i % 4}" for i in range(n)],
        tags=[("even",) if i % 2 == 0 else () for i in range(n)],
    )
    return source, vectors


async def check_oracle(manager, source, queries, k=10, filters=None, space=SPACE, d=D):
    for q in queries:
        got = await manager.search(space, MODEL, d, q, k, filters)
        want, scores = oracle(source.live_rows(space), q, k, filters)
        assert got.row_ids.tolist() == want.tolist()
        np.testing.assert_allclose(got.scores, scores, atol=2e-6)


async def until(condition, what: str) -> None:
    for _ in range(2000):  # a generous bound on a busy machine; the condition is what is asserted
        if condition():
            return
        await asyncio.sleep(0.005)
    raise AssertionError(f"never: {what}")


AUTHORS = ["did:plc:a", "did:plc:b", "did:plc:c"]
TAGS = ["red", "green", "blue"]


def make_rows(n: int, d: int, seed: int) -> IndexRows:
    rng = np.random.default_rng(seed)
    vectors = rng.standard_normal((n, d)).astype(np.float16)
    if n > 3:
        vectors[3] = vectors[1]  # an exact duplicate: ties must break by row id
    return IndexRows(
        np.cumsum(rng.integers(1, 4, n)).astype(np.int64),
        vectors,
        [AUTHORS[i] for i in rng.integers(0, len(AUTHORS), n)],
        rng.integers(0, 1000, n).astype(np.int64),
        [tuple(t for t in TAGS if rng.random() < 0.4) for _ in range(n)],
    )


filters_strategy = st.one_of(
    st.none(),
    st.builds(
        Filters,
        author=st.one_of(st.none(), st.sampled_from(AUTHORS + ["did:plc:nobody"])),
        tags=st.lists(st.sampled_from(TAGS + ["absent"]), max_size=3).map(tuple),
        since_ms=st.one_of(st.none(), st.integers(-5, 1005)),
    ),
)
