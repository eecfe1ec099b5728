"""Write the batched scan's ONNX graph, engram/search/data/int8_scan.onnx (docs/internals.md#batched-scans).

The graph: scores[b, r] = (rows[r] - 128) . queries[:, b] in int32 (MatMulInteger), as float32 times the
query's scale, transposed to one row per query, plus bias[b or 0, r] (one bias row for every
query or one row for all). engram ships the generated file, so serving needs onnxruntime only, not the `onnx`
package (~10 MiB of RSS per serving process); `onnx` is in the test extra, and
tests/search/test_batch_scan.py checks that the shipped file is what this script builds.

    .venv/bin/python scripts/make_scan_graph.py          # rewrite the file after changing the graph
"""

from __future__ import annotations

from pathlib import Path

GRAPH_FILE = Path(__file__).resolve().parents[1] / "engram" / "search" / "data" / "int8_scan.onnx"


def graph_bytes() -> bytes:
    from onnx import TensorProto, helper

    value = helper.make_tensor_value_info
    inputs = [
        value("rows", TensorProto.UINT8, ["n", "d"]),  # int8 codes + 128
        value("queries", TensorProto.INT8, ["d", "b"]),
        value("zero", TensorProto.UINT8, []),  # the rows' zero point: 128
        value("query_scale", TensorProto.FLOAT, [1, "b"]),
        value("bias", TensorProto.FLOAT, ["bias_rows", "n"]),
    ]
    scores = value("scores", TensorProto.FLOAT, ["b", "n"])
    nodes = [
        helper.make_node("MatMulInteger", ["rows", "queries", "zero"], ["dots"]),
        helper.make_node("Cast", ["dots"], ["dots32"], to=TensorProto.FLOAT),
        helper.make_node("Mul", ["dots32", "query_scale"], ["by_query"]),
        helper.make_node("Transpose", ["by_query"], ["per_query"], perm=[1, 0]),
        helper.make_node("Add", ["per_query", "bias"], ["scores"]),
    ]
    graph = helper.make_graph(nodes, "engram_int8_scan", inputs, [scores])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="engram")
    model.ir_version = 8  # what onnxruntime >= 1.18 (the dependency floor) reads
    return model.SerializeToString()


if __name__ == "__main__":
    import argparse

    argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    ).parse_args()
    GRAPH_FILE.write_bytes(graph_bytes())
    print(f"wrote {GRAPH_FILE} ({GRAPH_FILE.stat().st_size} bytes)")
