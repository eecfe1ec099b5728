"""One exact scan of a float16 index for several queries at once (docs/architecture.md#batched-scans).

FAISS's float16 scalar-quantiser scan is compute-bound: it decodes and multiplies each stored row once per
query (70-90 ns per 384-dim row on the benchmark machine), and a batch of queries costs the same per query.
A matrix product does the same arithmetic for a block of rows and a block of queries at BLAS speed, but
needs the rows as float32, and both numpy's and FAISS's own float16 -> float32 decoders run one element at a
time (~2 ns per element, slower than the scan they would replace). onnxruntime's `Cast` uses the CPU's
F16C instructions (~0.14 ns per element), and its `Gemm` is MLAS's SGEMM, so a two-node graph gives the
batched product; that graph is the only thing here no installed library provides ready-made.

Rows go through in blocks of `BLOCK_ROWS`: the float32 copy of a block stays in the core's cache, and the
whole index is never expanded (at 100k x 384, a float32 copy would be 154 MB next to the 77 MB index).
The candidates are the top `want` raw float32 scores per query; `SpaceIndex` re-scores them exactly, as it
does FAISS's candidates, so a batched search and a lone one return the same hits.
"""

from __future__ import annotations

import threading

import faiss
import numpy as np

# Measured at 100k x 384, 16 queries, whole index: 1024 rows per product 34.8 ms, 512 36.6, 2048 44.4, 4096 51.8.
BLOCK_ROWS = 1024

_session = None
_session_lock = threading.Lock()


def _graph_bytes() -> bytes:
    """scores[b, r] = queries[b] . float32(rows[r]) + bias[r]: Cast, then Gemm with the rows transposed. The
    bias is 0 for a live row and -inf for a dead one, so tombstones never reach the heap (masking the scores
    in numpy instead cost ~30 us per block at 16 queries)."""
    from onnx import TensorProto, helper

    rows = helper.make_tensor_value_info("rows", TensorProto.FLOAT16, ["n", "d"])
    queries = helper.make_tensor_value_info("queries", TensorProto.FLOAT, ["b", "d"])
    bias = helper.make_tensor_value_info("bias", TensorProto.FLOAT, ["n"])
    scores = helper.make_tensor_value_info("scores", TensorProto.FLOAT, ["b", "n"])
    nodes = [
        helper.make_node("Cast", ["rows"], ["rows32"], to=TensorProto.FLOAT),
        helper.make_node("Gemm", ["queries", "rows32", "bias"], ["scores"], transB=1),
    ]
    graph = helper.make_graph(nodes, "engram_fp16_scan", [queries, rows, bias], [scores])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8  # what onnxruntime >= 1.18 (the dependency floor) reads
    return model.SerializeToString()


def _scan_session():
    """One session per process, shared by the search workers (`InferenceSession.run` is thread-safe). One
    intra-op thread and no spinning: concurrency comes from the worker pool (docs/architecture.md#concurrency)."""
    global _session
    if _session is None:
        with _session_lock:
            if _session is None:
                import onnxruntime as ort

                options = ort.SessionOptions()
                options.intra_op_num_threads = 1
                options.inter_op_num_threads = 1
                options.add_session_config_entry("session.intra_op.allow_spinning", "0")
                _session = ort.InferenceSession(_graph_bytes(), options, providers=["CPUExecutionProvider"])
    return _session


def stored_rows(store: faiss.IndexScalarQuantizer, dims: int) -> np.ndarray:
    """The float16 index's codes as an (n, dims) float16 view, without a copy. Valid only while nothing is
    added to `store` (the caller holds the index's read share)."""
    n = store.ntotal
    if n == 0:
        return np.zeros((0, dims), dtype=np.float16)
    raw = faiss.rev_swig_ptr(store.codes.data(), n * dims * 2)
    return np.frombuffer(raw, dtype=np.float16).reshape(n, dims)


def scan_candidates(
    rows: np.ndarray, queries: np.ndarray, want: int, live: np.ndarray | None
) -> list[np.ndarray]:
    """Per query, the positions of its `want` best rows by float32 inner product, best first; rows whose
    `live` entry is False are never returned (fewer than `want` come back when fewer are alive)."""
    n, batch = rows.shape[0], queries.shape[0]
    want = min(want, n)
    if want <= 0:
        return [np.zeros(0, dtype=np.int64) for _ in range(batch)]
    session = _scan_session()
    queries = np.ascontiguousarray(queries, dtype=np.float32)
    bias = np.zeros(n, dtype=np.float32)
    if live is not None:
        bias[~live] = -np.inf
    heap = faiss.ResultHeap(batch, want, keep_max=True)
    for start in range(0, n, BLOCK_ROWS):
        block = rows[start : start + BLOCK_ROWS]
        feed = {"queries": queries, "rows": block, "bias": bias[start : start + block.shape[0]]}
        (scores,) = session.run(None, feed)
        # heaps.addn: the ids of this block's columns are start, start + 1, ... (no id array needed)
        heap.heaps.addn(block.shape[0], faiss.swig_ptr(scores), start, 0, batch)
    heap.finalize()
    return [found[(found >= 0) & np.isfinite(score)] for found, score in zip(heap.I, heap.D, strict=True)]
