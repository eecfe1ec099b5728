"""FAISS search parameters for an index's scans: an HNSW walk's breadth, and the id selectors that keep a scan
to the rows a search may return (a bitmap of allowed positions, a range of positions, or both)."""

from __future__ import annotations

import faiss
import numpy as np


def hnsw_params(ef_search: int, selector: faiss.IDSelector | None = None) -> faiss.SearchParameters:
    # FAISS 1.15's type stubs lack SearchParametersHNSW, which exists at run time; its keyword constructor
    # only assigns the attributes (docs/internals.md#search).
    hnsw = faiss.SearchParametersHNSW  # type: ignore[attr-defined]
    params: faiss.SearchParameters = hnsw(efSearch=ef_search)
    if selector is not None:
        params.sel = selector
    return params


def bitmap_selector(mask: np.ndarray) -> tuple[faiss.IDSelector, np.ndarray]:
    bits = np.packbits(mask, bitorder="little")
    # The selector holds a raw pointer into `bits`: return both so the caller keeps the array alive.
    return faiss.IDSelectorBitmap(mask.shape[0], faiss.swig_ptr(bits)), bits


def scan_params(
    mask: np.ndarray | None, rows: tuple[int, int] | None
) -> tuple[faiss.SearchParameters | None, list[object]]:
    """A flat scan's parameters for the rows `mask` allows within positions [start, stop) of `rows` (None:
    no limit), and the objects its selectors point into, which the caller keeps alive while it scans."""
    alive: list[object] = []
    if mask is not None:
        alive.extend(bitmap_selector(mask))
    if rows is not None:
        alive.append(faiss.IDSelectorRange(rows[0], rows[1], True))
    selectors = [part for part in alive if isinstance(part, faiss.IDSelector)]
    if not selectors:
        return None, alive
    params = faiss.SearchParameters()
    params.sel = selectors[0] if len(selectors) == 1 else faiss.IDSelectorAnd(*selectors)
    alive.append(params.sel)
    return params, alive
