"""`SpaceIndex`: one space's vectors for one model slot, searchable exactly or approximately.

Layout (positions 0..n-1 are the internal ids, in row-id order, so FAISS needs no IDMap):
- `store`: FAISS `IndexScalarQuantizer(QT_fp16, inner product)` holding every unit vector as float16: the
  values every score is computed from (the exact re-score), and the scan of an HNSW index's filtered
  subsets (bitmap selector: distances only for allowed rows).
- `int8`: an exact index's rows in int8 (engram/search/int8_rows.py), which its scans read to pick
  candidates, lone ones through FAISS and batches through onnxruntime; the exact re-score of the candidates,
  and of any row the int8 rounding cannot rule out, decides.
- `coarse`: only above `exact_max` rows, an HNSW graph over 8-bit scalar-quantised codes (a quarter of
  fp32's bytes). Its candidates are re-ranked exactly against `store` under the deadline.
- `live`: tombstone mask (HNSW cannot delete; FAISS selectors skip dead positions).
- `columns`: filter columns, evaluated before ranking (never post-filtering a short list).

Not thread-safe for mutation: the manager runs `add`/`delete` exclusively of searches.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import faiss
import numpy as np

from engram.search.batch_scan import scan_candidates, stored_rows
from engram.search.filters import FilterColumns, Filters
from engram.search.int8_rows import Candidates, Int8Rows
from engram.search.rows import IndexRows
from engram.search.selectors import bitmap_selector, hnsw_params, scan_params
from engram.search.vectors import unit_rows

_IP = faiss.METRIC_INNER_PRODUCT
# A filtered search shares a batched scan only if it allows at least this fraction of the rows. Measured at
# 100k (bench_batched_scan.py --allowed): alone, a search allowing half the rows costs half a full scan; in
# a shared scan its share is ~0.15 of one, so it pays there once the scan runs anyway.
SHARED_SCAN_MIN_FRACTION = 0.5
_TIE_MARGIN = 16  # extra candidates fetched so the exact re-score decides the k-th place, not the rounding


def _want(k: int) -> int:
    """Candidates a scan fetches for k hits: twice k and the margin, so that the int8 bound (~0.017 on real
    text) nearly always rules out every row left out (at k=100 on 100k rows, k + 16 candidates never did,
    2k + 16 always did; docs/benchmarks.md#int8-lone-scans)."""
    return 2 * k + _TIE_MARGIN


# (query, want, mask) -> candidates: `SpaceIndex.scan`, or a split scan (engram/search/split_scan.py)
Scan = Callable[[np.ndarray, int, np.ndarray | None], Candidates]


@dataclass(frozen=True)
class IndexTuning:
    exact_max: (
        int  # above this many rows, build the HNSW coarse index (ENGRAM_EXACT_MAX: config's, no default)
    )
    hnsw_m: int = 32
    ef_construction: int = 80
    ef_search: int = 200  # bench_index --data latent, 100k: recall@10 0.982 at ef 160; 200 leaves a margin
    pool_factor: int = 8  # coarse candidates per requested hit
    min_pool: int = 100
    # A filter allowing at most max(selective_min, min(fraction * n, selective_max)) rows scans them exactly
    # (bitmap selector). Measured at 100k x 384: exact over 10 % of rows 1.9 ms vs filtered HNSW 2.5 ms on
    # hard data, and the HNSW walk loses recall as the allowed set shrinks. The selector scan
    # still visits all n ids, so at 1M an exact 10 % scan costs 23 ms: cap the exact side by count.
    selective_min: int = 2_000
    selective_fraction: float = 0.10
    selective_max: int = 20_000
    gather_max: int = (
        128  # measured: gather + dot wins below ~150 allowed rows (0.08 vs 0.19 ms at 100k), loses above
    )
    rerank_chunk: int = 512  # re-rank in chunks so a passed deadline is noticed between them


@dataclass
class SearchResult:
    row_ids: np.ndarray  # int64, best first
    scores: np.ndarray  # float32 cosine
    approximate: bool = False
    # The index that answered, for a search's `then` (IndexManager.search), which runs under the same read
    # share: `SpaceIndex.cosines` of further rows there costs no store read and no thread hop. Never read
    # it after `then` returns (a delta may change the index in place once the share is given back).
    index: SpaceIndex | None = field(default=None, repr=False, compare=False)

    @classmethod
    def empty(cls) -> SearchResult:
        return cls(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32), False)


def _new_store(dims: int) -> faiss.IndexScalarQuantizer:
    return faiss.IndexScalarQuantizer(dims, faiss.ScalarQuantizer.QT_fp16, _IP)


def _exact_scores(vectors: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Dot products accumulated in float64, then rounded to float32 (`vectors`: the stored float16 values,
    as float16 or float32; both convert to float64 exactly).

    float32 BLAS may round identical rows differently depending on where they sit in the block (seen in
    tests: duplicate memories tied in exact math came back in either order); float64 accumulation makes
    the float32 score a function of the row's values only, so ties really tie and break by row id."""
    return (vectors.astype(np.float64) @ q.astype(np.float64)).astype(np.float32)


def _order(positions: np.ndarray, scores: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Best k by score desc, ties by position asc (= row id asc): deterministic across paths."""
    order = np.lexsort((positions, -scores))[:k]
    return positions[order], scores[order]


class SpaceIndex:
    _live: np.ndarray
    _live_count: int | None  # count of True in `_live`, cached; the `live` setter resets it

    def __init__(self, dims: int, tuning: IndexTuning):
        self.dims = dims
        self.tuning = tuning
        self.store = _new_store(dims)
        self.coarse: faiss.Index | None = None
        self.row_ids = np.zeros(0, dtype=np.int64)
        self.live = np.zeros(0, dtype=bool)  # through the setter below: it resets the cached count
        self.columns = FilterColumns()
        self.generation = 0
        self.high_water = 0  # largest row id ever added (deleted or not): the delta cursor
        # the scans' int8 copy of the rows (`int8_rows`), caught up with the store when a scan needs it
        self._int8 = Int8Rows(dims)
        self._int8_lock = threading.Lock()  # two workers' scans may both catch it up under the read share
        self._rows_view: np.ndarray | None = None  # `rows()`, until the store grows

    # ----- building and changing -------------------------------------------------------------------

    @classmethod
    def build(cls, rows: IndexRows, dims: int, generation: int, tuning: IndexTuning) -> SpaceIndex:
        index = cls(dims, tuning)
        index._append(rows, unit_rows(rows.vectors) if len(rows) else np.zeros((0, dims), np.float32))
        if len(rows) > index.tuning.exact_max:
            index._build_coarse()
        else:  # the scans' int8 rows, quantised on the loading pool now rather than by the first scan
            index.int8_rows()  # (a snapshot's index is: docs/internals.md#int8-scans)
        index.generation = generation
        return index

    def add(self, rows: IndexRows) -> None:
        """Append rows with ids above the high-water mark (cheap for small deltas; see needs_rebuild)."""
        if not len(rows):
            return
        if rows.vectors.shape[1] != self.dims:
            raise ValueError(f"rows have {rows.vectors.shape[1]} dims, index has {self.dims}")
        if int(rows.row_ids[0]) <= self.high_water:
            raise ValueError("added rows must have ids above the index high-water mark")
        unit = unit_rows(rows.vectors)
        self._append(rows, unit)
        if self.coarse is not None:
            self.coarse.add(unit)

    def delete(self, row_ids: np.ndarray) -> int:
        """Tombstone the given row ids (unknown ids are ignored); returns how many live rows died."""
        ids = np.asarray(row_ids, dtype=np.int64)
        if not ids.size or not self.row_ids.size:
            return 0
        pos = np.searchsorted(self.row_ids, ids)  # row ids are ascending by construction
        inside = pos < self.row_ids.shape[0]
        pos, ids = pos[inside], ids[inside]
        pos = pos[self.row_ids[pos] == ids]
        before = int(self.live[pos].sum())
        self._live[pos] = False
        self._live_count = None
        return before

    def _append(self, rows: IndexRows, unit: np.ndarray) -> None:
        # Round to f16 here (IEEE round-half-even, as numpy and every client does) rather than letting FAISS
        # encode: its fp16 conversion breaks exact ties differently, and the stored values must be canonical.
        unit[:] = unit.astype(np.float16)
        self.store.add(unit)
        self._rows_view = None  # the store's codes may have moved
        self.row_ids = np.concatenate([self.row_ids, np.asarray(rows.row_ids, dtype=np.int64)])
        self.live = np.concatenate([self.live, np.ones(len(rows), dtype=bool)])
        tags = rows.tags if rows.tags else [()] * len(rows)
        self.columns.extend(list(rows.authors), rows.created_at, list(tags), rows.attrs)
        if len(rows):
            self.high_water = max(self.high_water, int(rows.row_ids[-1]))

    def _build_coarse(self) -> None:
        t = self.tuning
        # the stubs type the second argument as a ScalarQuantizer; the constructor takes its QuantizerType
        coarse = faiss.IndexHNSWSQ(self.dims, faiss.ScalarQuantizer.QT_8bit, t.hnsw_m, _IP)  # type: ignore[arg-type]
        coarse.hnsw.efConstruction = t.ef_construction
        vectors = self.vectors(np.arange(len(self), dtype=np.int64))
        # QT_8bit learns a per-dimension range; later deltas outside it are clipped, which only coarsens
        # the candidate scores (the exact re-rank is unaffected).
        coarse.train(vectors[:: max(1, len(vectors) // 100_000)])
        coarse.add(vectors)
        self.coarse = coarse

    @property
    def live(self) -> np.ndarray:
        """Tombstone mask by position. Assign a new array rather than writing into it (`delete` is the one
        in-place writer): the live count is cached, since summing the mask on every search was a visible
        share of a search's CPU (docs/benchmarks.md#throughput)."""
        return self._live

    @live.setter
    def live(self, mask: np.ndarray) -> None:
        self._live = mask
        self._live_count = None

    @property
    def tombstones(self) -> int:
        return int(self._live.shape[0]) - self.live_count

    @property
    def live_count(self) -> int:
        if self._live_count is None:
            self._live_count = int(np.count_nonzero(self._live))
        return self._live_count

    def needs_rebuild(self, incoming: int, deleting: int = 0) -> bool:
        """True when a delta (`incoming` new rows, up to `deleting` deletions) is better served by a fresh index."""
        n = len(self)
        live_after = self.live_count - deleting + incoming
        if (self.coarse is None) != (live_after <= self.tuning.exact_max):
            return True  # crossing exact_max in either direction switches the index kind
        if self.tombstones + deleting > 0.2 * max(n + incoming, 1):
            return True
        if self.coarse is not None:
            return incoming > 256  # HNSW inserts cost ~0.5 ms each and hold off searches meanwhile
        return False

    def apply(self, added: IndexRows, deleted: np.ndarray, generation: int) -> None:
        """Apply a store delta in place (deletions first: an updated memory's old row dies, its new row is added)."""
        self.delete(deleted)
        self.add(added)
        self.generation = generation

    def compacted(
        self, extra: IndexRows | None, generation: int, deleted: np.ndarray | None = None
    ) -> SpaceIndex:
        """A fresh index of the live rows minus `deleted` plus `extra` (drops tombstones, re-chooses exact vs HNSW).

        Read-only on `self`, so searches may keep using it while the replacement is built."""
        live = self.live
        if deleted is not None and len(deleted):
            live = live & ~np.isin(self.row_ids, np.asarray(deleted, dtype=np.int64))
        keep = np.flatnonzero(live)
        authors, created, tags, attrs = self.columns.take(keep)
        vectors = self.vectors(keep).astype(np.float16)
        rows = IndexRows(self.row_ids[keep].copy(), vectors, authors, created, tags, attrs)
        if extra is not None and len(extra):
            rows = IndexRows(
                np.concatenate([rows.row_ids, extra.row_ids]),
                np.concatenate([rows.vectors, np.asarray(extra.vectors, dtype=np.float16)]),
                rows.authors + list(extra.authors),
                np.concatenate([rows.created_at, extra.created_at]),
                rows.tags + (list(extra.tags) if extra.tags else [()] * len(extra)),
                rows.attrs + (list(extra.attrs) if extra.attrs else [None] * len(extra)),
            )
        fresh = SpaceIndex.build(rows, self.dims, generation, self.tuning)
        fresh.high_water = max(self.high_water, fresh.high_water)
        return fresh

    # ----- reading ---------------------------------------------------------------------------------

    def __len__(self) -> int:
        return int(self.row_ids.shape[0])

    def vectors(self, positions: np.ndarray) -> np.ndarray:
        """Stored unit vectors (f16 values) of the given positions, as float32 (FAISS decodes them straight
        into one float32 array: no float16 copy of a whole index on the way, for builds and compaction)."""
        if not len(positions):
            return np.zeros((0, self.dims), dtype=np.float32)
        found: np.ndarray = self.store.reconstruct_batch(np.ascontiguousarray(positions, dtype=np.int64))
        return found

    def stored(self, positions: np.ndarray) -> np.ndarray:
        """The float16 rows of the given positions, gathered from the index's own codes (`stored_rows`):
        the values FAISS's reconstruct_batch would decode, without that call, which cost over half of a
        re-score at k + 16 candidates (docs/benchmarks.md#where-a-10k-search-spends-its-cpu). The caller
        holds the index's read share or owns it."""
        return self.rows()[np.asarray(positions, dtype=np.int64)]

    def rows(self) -> np.ndarray:
        """Every stored float16 row (`stored_rows`), the view kept until the store grows. The caller holds
        the index's read share or owns it."""
        view = self._rows_view
        if view is None or view.shape[0] != self.store.ntotal:
            view = self._rows_view = stored_rows(self.store, self.dims)
        return view

    def cosines(self, row_ids: np.ndarray, query: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(row ids, cosines) of those live rows of the index with the float32 unit `query`, scored exactly
        as a search scores its hits (`_exact_scores` of the stored float16 rows), so a row's cosine is the
        same whichever path found it; row ids not in the index (or dead) are left out. The caller holds the
        index's read share (a search's `then`)."""
        ids, positions = self._positions(row_ids)
        q = np.ascontiguousarray(query, dtype=np.float32).reshape(-1)
        return ids, _exact_scores(self.stored(positions), q)

    def unit_vectors(self, row_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(row ids, their stored unit vectors as float32) of those live rows of the index, as `cosines`."""
        ids, positions = self._positions(row_ids)
        return ids, self.stored(positions).astype(np.float32)

    def unit_vectors_and_cosines(
        self, row_ids: np.ndarray, query: np.ndarray, scored: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """`unit_vectors` of `row_ids` and, from the same gathered rows, the `cosines` of those `scored`
        marks (a boolean per row id): (row ids, their unit vectors, the marked ones, their cosines), as
        `unit_vectors` and `cosines` give them (a float16 value is exact in float32 and float64, so the
        scores are the same bit for bit). One gather for a hybrid search's `then`, not two."""
        ids, positions, known = self._known(row_ids)
        matrix = self.stored(positions).astype(np.float32)
        marked = np.asarray(scored, dtype=bool)[known] if known is not None else np.zeros(0, dtype=bool)
        q = np.ascontiguousarray(query, dtype=np.float32).reshape(-1)
        return ids, matrix, ids[marked], _exact_scores(matrix[marked], q)

    def _positions(self, row_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        ids, positions, _ = self._known(row_ids)
        return ids, positions

    def _known(self, row_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """(the live row ids of the index among `row_ids`, their positions, the mask over `row_ids`; None
        when there is nothing to look up)."""
        ids = np.asarray(row_ids, dtype=np.int64)
        if not ids.size or not len(self):
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), None
        at = np.minimum(np.searchsorted(self.row_ids, ids), len(self) - 1)  # row ids ascend by position
        known = (self.row_ids[at] == ids) & self._live[at]
        return ids[known], at[known], known

    def int8_rows(self) -> Int8Rows:
        """The scans' int8 copy of every stored row, quantised as far as the store reaches now (rows appended
        since the last call are quantised here, by the first scan to need them: the store cannot grow under
        the read share, so once one caller has caught up no scan sees the copy change). The caller holds the
        index's read share or owns it."""
        with self._int8_lock:
            if self._int8.count < len(self):
                self._int8.extend(self.rows())
            return self._int8

    def nbytes(self) -> int:
        size = self.store.sa_code_size() * len(self) if len(self) else 0
        if self.coarse is None:  # the int8 copy as it is once caught up, so a lazy catch-up does not move it
            size += len(self) * self.dims + self._int8.scales.nbytes
        if self.coarse is not None:
            size += len(self) * (self.dims + self.tuning.hnsw_m * 2 * 4 + 16)
        return size + self.row_ids.nbytes + self.live.nbytes + self.columns.nbytes() + 4096

    def search(
        self, query: np.ndarray, k: int, filters: Filters | None, deadline: float, scan: Scan | None = None
    ) -> SearchResult:
        """Top-k by cosine. `query` must be a float32 unit vector; `deadline` is a time.monotonic() value.
        `scan` replaces `SpaceIndex.scan` for the exact path's FAISS scan (a split scan, run over two workers:
        engram/search/split_scan.py); it must return the same candidates or more."""
        q = np.ascontiguousarray(query, dtype=np.float32).reshape(-1)
        if q.shape[0] != self.dims:
            raise ValueError(f"query has {q.shape[0]} dims, index has {self.dims}")
        n = len(self)
        if k <= 0 or n == 0:
            return SearchResult.empty()
        filtered = filters if filters is not None and not filters.is_empty() else None
        mask = (
            self.columns.allowed(filtered, self.live)
            if filtered is not None
            else (self.live if self.tombstones else None)
        )
        allowed = n if mask is None else int(mask.sum())
        if allowed == 0:
            return SearchResult.empty()
        t = self.tuning
        if self.coarse is None or allowed <= max(
            t.selective_min, min(t.selective_fraction * n, t.selective_max)
        ):
            return self._finish(*self._exact(q, k, mask, allowed, scan or self.scan))
        return self._approximate(q, k, mask, allowed, deadline)

    def scan_mask(self, filters: Filters | None) -> tuple[float, np.ndarray | None]:
        """For a batched scan (engram/search/search_job.py): the fraction of the rows a search with these
        filters may return (1.0 unfiltered), and those rows (None: every row). The shared scan computes every
        row for every query, FAISS's bitmap scan only the allowed ones, so a search shares a scan only when
        its filters leave at least SHARED_SCAN_MIN_FRACTION of the rows (docs/benchmarks.md#batched-scans)."""
        if filters is None or filters.is_empty():
            return 1.0, (self.live if self.tombstones else None)
        mask = self.columns.allowed(filters, self.live)
        return int(np.count_nonzero(mask)) / max(len(self), 1), mask

    def search_many(
        self, queries: np.ndarray, ks: list[int], masks: list[np.ndarray | None] | None = None
    ) -> list[SearchResult]:
        """Exact top-k for several float32 unit queries in one scan (engram/search/batch_scan.py): per query
        the hits `search` returns. `masks`: per query the rows it may return (`scan_mask`), None for all
        live rows. Only for an exact index (no HNSW graph)."""
        if self.coarse is not None:
            raise ValueError("search_many scans exact indexes only")
        queries = np.ascontiguousarray(queries, dtype=np.float32).reshape(len(ks), -1)
        if queries.shape[1] != self.dims:
            raise ValueError(f"queries have {queries.shape[1]} dims, index has {self.dims}")
        if not len(self) or max(ks, default=0) <= 0:
            return [SearchResult.empty() for _ in ks]
        live = self.live if self.tombstones else None
        allowed = live
        if masks is not None and any(mask is not None for mask in masks):
            every = live if live is not None else np.ones(len(self), dtype=bool)
            allowed = np.stack([every if mask is None else mask for mask in masks])
        rows = self.rows()
        scan = scan_candidates(self.int8_rows(), queries, _want(max(ks)), allowed)
        results = []
        for member, (q, positions, k) in enumerate(zip(queries, scan.candidates, ks, strict=True)):
            if k <= 0:
                results.append(SearchResult.empty())
                continue
            exact = _exact_scores(rows[positions], q)
            near = scan.certify(member, positions, exact, k)  # rows the int8 scores cannot rule out
            if near.shape[0]:
                positions = np.concatenate([positions, near])
                exact = np.concatenate([exact, _exact_scores(rows[near], q)])
            results.append(self._finish(*_order(positions, exact, k)))
        return results

    def _finish(self, positions: np.ndarray, scores: np.ndarray, approximate: bool = False) -> SearchResult:
        return SearchResult(self.row_ids[positions], np.asarray(scores, dtype=np.float32), approximate, self)

    def _exact(
        self, q: np.ndarray, k: int, mask: np.ndarray | None, allowed: int, scan: Scan | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        if mask is not None and allowed <= self.tuning.gather_max:
            positions = np.flatnonzero(mask)
            return self._rescore(q, positions, k)
        scan = scan or self.scan
        want = min(_want(k), allowed)
        while True:
            found = scan(q, want, mask)
            positions = found.positions
            exact = _exact_scores(self.stored(positions), q)
            order = np.lexsort((positions, -exact))
            if not k <= positions.shape[0] < allowed or found.ruled_out(float(exact[order[k - 1]])):
                break
            # a row left out might still reach the top k: scan again for more candidates (rare: 0-4 % of
            # searches at k=10, docs/internals.md#int8-scans), until the bound rules the rest out
            want = min(4 * want, allowed)
        order = order[:k]
        return positions[order], exact[order]

    def scan(
        self, q: np.ndarray, want: int, mask: np.ndarray | None, rows: tuple[int, int] | None = None
    ) -> Candidates:
        """The `want` best positions among the rows `mask` allows (None: every row), only from positions
        [start, stop) when `rows` is given (part of a split scan): an exact index's by int8 score (its
        `floor` and `bound` tell what the rows left out could score), an HNSW index's filtered subset by
        FAISS's float32 product of the float16 rows (trusted as exact)."""
        params, _alive = scan_params(
            mask, rows
        )  # _alive: what the selectors point into, until the scan returns
        if self.coarse is None:
            return self.int8_rows().search(q, want, params)
        _, found = self.store.search(q[None, :], want, params=params)
        return Candidates(found[0][found[0] >= 0])

    def _rescore(self, q: np.ndarray, positions: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        return _order(positions, _exact_scores(self.stored(positions), q), k)

    def _approximate(
        self, q: np.ndarray, k: int, mask: np.ndarray | None, allowed: int, deadline: float
    ) -> SearchResult:
        assert self.coarse is not None  # search() takes this path only with an HNSW graph
        t = self.tuning
        pool = min(max(t.pool_factor * k, t.min_pool), allowed)
        ef = max(t.ef_search, pool)
        if mask is None:
            params = hnsw_params(ef)
        else:
            # A filter hides part of the graph; widen the walk roughly with 1/sqrt(allowed fraction), up to 4x.
            widen = min(4.0, math.sqrt(len(self) / allowed))
            selector, _bits = bitmap_selector(mask)
            params = hnsw_params(int(ef * widen), selector)
        coarse_scores, found = self.coarse.search(q[None, :], pool, params=params)
        valid = found[0] >= 0
        candidates, coarse_scores = found[0][valid], coarse_scores[0][valid]
        if candidates.shape[0] < min(k, allowed):
            return self._finish(
                *self._exact(q, k, mask, allowed)
            )  # the walk could not reach enough allowed rows
        if time.monotonic() >= deadline:
            return self._finish(*_order(candidates, coarse_scores, k), approximate=True)
        exact = np.empty(candidates.shape[0], dtype=np.float32)
        for start in range(0, candidates.shape[0], t.rerank_chunk):
            if start and time.monotonic() >= deadline:
                return self._finish(*_order(candidates, coarse_scores, k), approximate=True)
            chunk = candidates[start : start + t.rerank_chunk]
            exact[start : start + chunk.shape[0]] = _exact_scores(self.stored(chunk), q)
        return self._finish(*_order(candidates, exact, k))
