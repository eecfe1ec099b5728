"""Write the batched scan's ONNX graph, engram/search/data/fp16_scan.onnx (docs/internals.md#batched-scans).

The graph is two nodes: scores[b, r] = queries[b] . float32(rows[r]) + bias[b or 0, r] (Cast, then Gemm
with the rows transposed; the bias has one row for every query or one row for all). engram ships the generated file, so serving needs onnxruntime only, not the `onnx`
package (~10 MiB of RSS per serving process); `onnx` is in the test extra, and
tests/search/test_batch_scan.py checks that the shipped file is what this script builds.

    .venv/bin/python scripts/make_scan_graph.py          # rewrite the file after changing the graph
"""

from __future__ import annotations

from pathlib import Path

GRAPH_FILE = Path(__file__).resolve().parents[1] / "engram" / "search" / "data" / "fp16_scan.onnx"


def graph_bytes() -> bytes:
    from onnx import TensorProto, helper

    rows = helper.make_tensor_value_info("rows", TensorProto.FLOAT16, ["n", "d"])
    queries = helper.make_tensor_value_info("queries", TensorProto.FLOAT, ["b", "d"])
    bias = helper.make_tensor_value_info("bias", TensorProto.FLOAT, ["bias_rows", "n"])
    scores = helper.make_tensor_value_info("scores", TensorProto.FLOAT, ["b", "n"])
    nodes = [
        helper.make_node("Cast", ["rows"], ["rows32"], to=TensorProto.FLOAT),
        helper.make_node("Gemm", ["queries", "rows32", "bias"], ["scores"], transB=1),
    ]
    graph = helper.make_graph(nodes, "engram_fp16_scan", [queries, rows, bias], [scores])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="engram")
    model.ir_version = 8  # what onnxruntime >= 1.18 (the dependency floor) reads
    return model.SerializeToString()


if __name__ == "__main__":
    GRAPH_FILE.write_bytes(graph_bytes())
    print(f"wrote {GRAPH_FILE} ({GRAPH_FILE.stat().st_size} bytes)")
