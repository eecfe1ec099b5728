"""An exact index's rows in int8: the copy both of its scans read to pick candidates (docs/internals.md#int8-scans).

A lone search scans it through FAISS's `QT_8bit_direct_signed` scalar quantiser, whose scan of 8-bit codes
is an integer dot product per row (FAISS quantises the query too): at 10k x 384 one query costs ~170 us
against ~340 for the float16 store, and it reads half the bytes (docs/benchmarks.md#int8-lone-scans). A
batch of searches reads the same codes through onnxruntime's `MatMulInteger` (engram/search/batch_scan.py).
One copy, a quarter of float32's bytes.

Each dimension j has one scale s_j for every row (the largest |x_j| among the rows, over 127), so a row is
`codes_i * s + r_i`, its codes in [-127, 127]. A query q is scaled the same way and rounded to int8 too
(`q * s = tau * u + f`; FAISS's scan of 8-bit codes quantises the query itself, so it is handed the
integers `u`), and scores `tau * (u . codes_i)`, an exact integer product. For every row
`|q . x_i - tau * u . codes_i| <= |q| max_i |r_i| + |f| max_i |codes_i|` (Cauchy-Schwarz on the two
roundings): `queries`' bound. The int8 scores only pick candidates; the exact re-score of the float16 rows
decides, and `Candidates.floor` says what the rows left out could score, so the caller scans again for more
candidates while a row left out might still reach the top k (`SpaceIndex._exact`). On LoCoMo's 5,882 turns under MiniLM a score's int8
error is at most 0.0034, the bound 0.017 at the median, and 2 of 1,986 questions' lone scans of k + 16
candidates cannot rule every row left out
(shared scales fit these rows better than one scale per row: the rows' part of the bound 0.0088 against
0.0121).

Rows appended later are quantised with the scales they find; a value past a scale's range is clipped, which
only widens that row's error. When the widest error has grown by REQUANTIZE_GROWTH since the last full
quantisation, every row is quantised again with fresh scales (a space that grows one row at a time would
otherwise keep the scales of its first rows).
"""

from __future__ import annotations

from dataclasses import dataclass

import faiss
import numpy as np

# Rows are quantised this many at a time (a float32 copy of a chunk, not of the whole index).
QUANTIZE_CHUNK = 8192
REQUANTIZE_GROWTH = 1.25
# A float32 score's rounding (tau times the integer product), and the float64 re-score's: kept out of the
# certificate's margin.
SLACK = 1e-5
_F32_EPS = float(np.finfo(np.float32).eps)


def _new_index(dims: int) -> faiss.IndexScalarQuantizer:
    return faiss.IndexScalarQuantizer(
        dims, faiss.ScalarQuantizer.QT_8bit_direct_signed, faiss.METRIC_INNER_PRODUCT
    )


@dataclass(frozen=True)
class Candidates:
    """A scan's picks: `positions` (distinct), the highest approximate score any row left out may have
    (`floor`; -inf when the scan left no allowed row out, or scored exactly), and the query's bound on
    |exact - approximate| (`bound`)."""

    positions: np.ndarray
    floor: float = -np.inf
    bound: float = 0.0

    @classmethod
    def union(cls, parts: list[Candidates]) -> Candidates:
        """The candidates of scans over disjoint ranges of rows, as one scan's."""
        if len(parts) == 1:
            return parts[0]
        return cls(
            np.concatenate([part.positions for part in parts]),
            max(part.floor for part in parts),
            max(part.bound for part in parts),
        )

    def ruled_out(self, kth: float) -> bool:
        """True when no row left out can reach `kth`, the k-th best exact score among the positions."""
        return self.floor < kth - self.bound


class Int8Rows:
    """The int8 copy of an index's float16 rows, in position order, grown as rows are appended (`extend`).
    `error` and `reach` bound the rounding over every row quantised since the last full quantisation (a
    deleted row's share only loosens the bound)."""

    __slots__ = ("_fresh_error", "dims", "error", "index", "reach", "scales")

    def __init__(self, dims: int):
        self.dims = dims
        self.index = _new_index(dims)
        self.scales = np.ones(dims, dtype=np.float32)
        self.error = 0.0  # max_i |rows_i - scales * codes_i|
        self.reach = 0.0  # max_i |codes_i|
        self._fresh_error = 0.0  # `error` right after the last full quantisation

    @property
    def count(self) -> int:
        return int(self.index.ntotal)

    def extend(self, rows: np.ndarray) -> None:
        """Quantise the float16 rows past `count` (`rows`: every stored row, in position order)."""
        if rows.shape[0] <= self.count:
            return
        if self.count == 0:
            self._quantize_all(rows)
            return
        clipped = self._add(rows[self.count :])
        if clipped and self.error > REQUANTIZE_GROWTH * self._fresh_error:
            self._quantize_all(rows)

    def _quantize_all(self, rows: np.ndarray) -> None:
        peak = np.zeros(self.dims, dtype=np.float32)
        for start in range(0, rows.shape[0], QUANTIZE_CHUNK):
            np.maximum(peak, np.abs(rows[start : start + QUANTIZE_CHUNK]).max(axis=0), out=peak)
        self.scales = peak / np.float32(127)
        self.scales[self.scales == 0] = 1
        self.index.reset()
        self.error = self.reach = 0.0
        self._add(rows)
        self._fresh_error = self.error

    def _add(self, rows: np.ndarray) -> bool:
        """Quantise and append `rows`; True if a value fell outside the scales' range and was clipped."""
        clipped = False
        for start in range(0, rows.shape[0], QUANTIZE_CHUNK):
            x = rows[start : start + QUANTIZE_CHUNK].astype(np.float32)
            codes = x / self.scales
            np.rint(codes, out=codes)
            if np.abs(codes).max(initial=0) > 127:
                clipped = True
                np.clip(codes, -127, 127, out=codes)
            self.reach = max(self.reach, float(np.sqrt(np.einsum("ij,ij->i", codes, codes).max(initial=0))))
            x -= codes * self.scales  # x is now the rounding error
            self.error = max(self.error, float(np.sqrt(np.einsum("ij,ij->i", x, x).max(initial=0))))
            codes += 128
            self.index.add_sa_codes(codes.astype(np.uint8))
        return clipped

    def codes(self) -> np.ndarray:
        """The (count, dims) uint8 codes (code + 128), a view of the FAISS index's own array: valid only
        while nothing is appended (the caller holds the index's read share)."""
        n = self.count
        if n == 0:
            return np.zeros((0, self.dims), dtype=np.uint8)
        raw = faiss.rev_swig_ptr(self.index.codes.data(), n * self.dims)
        return np.frombuffer(raw, dtype=np.uint8).reshape(n, self.dims)

    def queries(self, queries: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The float32 unit queries (batch x dims) as the codes score them: the scaled query `q * scales`
        rounded to int8 units times its own scale `tau` (`q * scales = tau * units + f`). Returns (units as
        float32 integers in [-127, 127], tau, each query's bound on |exact - tau * units . codes_i| over
        every row: |q| max_i |r_i| + |f| max_i |codes_i|, by Cauchy-Schwarz on the two roundings)."""
        queries = np.asarray(queries, dtype=np.float32)
        scaled = queries * self.scales
        tau = np.abs(scaled).max(axis=1) / np.float32(127)
        tau[tau == 0] = 1
        units = np.rint(scaled / tau[:, None])
        rounding = np.linalg.norm(scaled - units * tau[:, None], axis=1).astype(np.float64)
        # ... and the products' float32 sum where it is not exact (FAISS sums in float32 when the dimension is
        # not a multiple of 16; past ~1,040 dimensions integer sums outgrow float32's 24 bits): dims * eps *
        # tau * |units| |codes|, a generous bound for any summation order
        sums = self.dims * _F32_EPS * tau * np.linalg.norm(units, axis=1) * self.reach
        bound = np.linalg.norm(queries, axis=1) * self.error + rounding * self.reach + sums + SLACK
        return units, tau, bound

    def search(self, q: np.ndarray, want: int, params: faiss.SearchParameters | None) -> Candidates:
        """The `want` best rows by int8 score among those `params`' selector allows."""
        units, tau, bound = self.queries(q[None, :])
        scores, found = self.index.search(units, want, params=params)
        positions: np.ndarray = found[0]
        if positions[-1] >= 0:  # FAISS fills the list from the front: a full list may have left rows out
            return Candidates(positions, float(scores[0, -1]) * float(tau[0]), float(bound[0]))
        # fewer than `want` came back: every allowed row is among them, nothing was left out
        return Candidates(positions[positions >= 0], -np.inf, float(bound[0]))
