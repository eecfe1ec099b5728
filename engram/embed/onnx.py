"""ONNX backend: onnxruntime for the transformer, `tokenizers` for the word pieces, numpy for pooling.

Used by the built-in MiniLM (builtin.py) and by operator-supplied `onnx:<dir>` folders (onnx_dir.py).
Both files are hashed at load and, when the caller pins hashes, a swapped file fails loudly.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

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

Pooling = Literal["mean", "cls"]
# Inputs a BERT-style graph may declare; anything else we cannot feed.
_KNOWN_INPUTS = {"input_ids", "attention_mask", "token_type_ids"}


@dataclass(frozen=True)
class OnnxSpec:
    """Everything that determines the vectors, plus where the files are."""

    name: str
    model_path: Path
    tokenizer_path: Path
    dims: int
    pooling: Pooling = "mean"
    normalize: bool = True
    max_tokens: int = 256
    query_prefix: str = ""
    document_prefix: str = ""
    output_name: str | None = None  # None: the graph's first output
    expected_weights_sha256: str | None = None
    expected_tokenizer_sha256: str | None = None


def _verified_hash(path: Path, expected: str | None, what: str) -> str:
    if not path.is_file():
        raise EmbedderLoadError(f"{what} not found: {path}")
    actual = sha256_file(path)
    if expected is not None and actual != expected.lower():
        raise EmbedderLoadError(
            f"{what} {path} has the wrong sha256: expected {expected.lower()}, actual {actual}; "
            "the file was changed or swapped, refusing to load it"
        )
    return actual


class OnnxEmbedder(ManifestEmbedder):
    backend = "onnx"

    def __init__(self, spec: OnnxSpec, *, batch_size: int = 32, threads: int = 1):
        if spec.pooling not in ("mean", "cls"):
            raise EmbedderLoadError(f"pooling must be 'mean' or 'cls', got {spec.pooling!r}")
        if spec.dims <= 0 or spec.max_tokens <= 0:
            raise EmbedderLoadError("dims and max_tokens must be positive")
        self.name = spec.name
        self.dims = spec.dims
        self.max_tokens = spec.max_tokens
        self.query_prefix = spec.query_prefix
        self.document_prefix = spec.document_prefix
        self._spec = spec
        self._batch_size = batch_size
        weights_sha = _verified_hash(spec.model_path, spec.expected_weights_sha256, "model file")
        tokenizer_sha = _verified_hash(spec.tokenizer_path, spec.expected_tokenizer_sha256, "tokenizer file")
        self._manifest = {
            "format": MANIFEST_FORMAT,
            "weights_sha256": weights_sha,
            "tokenizer_sha256": tokenizer_sha,
            "pooling": spec.pooling,
            "normalize": spec.normalize,
            "max_tokens": spec.max_tokens,
            "query_prefix": spec.query_prefix,
            "document_prefix": spec.document_prefix,
            "dim": spec.dims,
        }
        self.digest = manifest_digest(self._manifest)
        self._tokenizer = self._load_tokenizer(spec)
        self._session, self._inputs, self._output = self._load_session(spec, threads)
        # The one-sentence warm-up checks the graph's width against the declared dims at load, not on
        # the first user query, and pays onnxruntime's first-run allocation cost up front.
        try:
            self.embed(["warm-up"], "query")
        except EmbedderLoadError:
            raise
        except Exception as e:  # onnxruntime reports graph/feed problems as its own exception types
            raise EmbedderLoadError(f"warm-up run of {spec.model_path} failed: {e}") from e

    @staticmethod
    def _load_tokenizer(spec: OnnxSpec):
        from tokenizers import Tokenizer

        try:
            tok = Tokenizer.from_file(str(spec.tokenizer_path))
        except Exception as e:  # tokenizers raises a bare Exception on malformed JSON
            raise EmbedderLoadError(f"cannot read tokenizer {spec.tokenizer_path}: {e}") from e
        # The MiniLM tokenizer.json as published pads every input to 128 tokens and truncates at 128
        # (docs/embedders.md#what-text-is-embedded).
        # Replace both: pad to the longest text in the batch (a short query costs a few tokens, not 128)
        # and truncate at the model's max_tokens (256, what sentence-transformers uses).
        old = tok.padding or {}
        pad_token = old.get("pad_token") or ("[PAD]" if tok.token_to_id("[PAD]") is not None else "<pad>")
        pad_id = old.get("pad_id", tok.token_to_id(pad_token) or 0)
        tok.enable_padding(pad_id=pad_id, pad_token=pad_token)
        tok.enable_truncation(max_length=spec.max_tokens)
        return tok

    @staticmethod
    def _load_session(spec: OnnxSpec, threads: int):
        import onnxruntime as ort

        so = ort.SessionOptions()
        # One intra-op thread: on a busy 2-core box a single query is ~2x faster than with two
        # (docs/embedders.md#backends); concurrency comes from several WorkerPool threads sharing this
        # session, whose run() is thread-safe.
        so.intra_op_num_threads = threads
        so.inter_op_num_threads = 1
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        try:
            sess = ort.InferenceSession(str(spec.model_path), so, providers=["CPUExecutionProvider"])
        except Exception as e:
            raise EmbedderLoadError(f"onnxruntime cannot load {spec.model_path}: {e}") from e
        inputs = [i.name for i in sess.get_inputs()]
        unknown = set(inputs) - _KNOWN_INPUTS
        if unknown or "input_ids" not in inputs:
            raise EmbedderLoadError(
                f"{spec.model_path} wants inputs {inputs}; only {sorted(_KNOWN_INPUTS)} can be fed"
            )
        outputs = [o.name for o in sess.get_outputs()]
        output = spec.output_name or outputs[0]
        if output not in outputs:
            raise EmbedderLoadError(f"{spec.model_path} has no output {output!r} (has {outputs})")
        return sess, inputs, output

    def token_ids(self, texts: Sequence[str]) -> list[list[int]]:
        """Token ids as the model sees them (padded to the longest of `texts`); for tests and diagnostics."""
        return [e.ids for e in self._tokenizer.encode_batch(list(texts))]

    def _forward(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        feed = {"input_ids": ids}
        if "attention_mask" in self._inputs:
            feed["attention_mask"] = mask
        if "token_type_ids" in self._inputs:
            feed["token_type_ids"] = np.zeros_like(ids)  # single-segment input
        (hidden,) = self._session.run([self._output], feed)
        if hidden.ndim != 3 or hidden.shape[2] != self.dims:
            raise EmbedderLoadError(
                f"{self._spec.model_path} output {self._output!r} has shape {hidden.shape}; expected token "
                f"states [batch, tokens, {self.dims}] (does not produce {self.dims}-dim vectors)"
            )
        if self._spec.pooling == "cls":
            pooled = hidden[:, 0, :]
        else:
            m = mask[..., None].astype(np.float32)
            pooled = (hidden * m).sum(axis=1) / np.maximum(m.sum(axis=1), 1e-9)
        return pooled.astype(np.float32, copy=False)

    def embed(self, texts: Sequence[str], kind: Kind) -> np.ndarray:
        items = check_embed_args(texts, kind)
        out = np.empty((len(items), self.dims), dtype=np.float32)
        if not items:
            return out
        prefix = self.query_prefix if kind == "query" else self.document_prefix
        # Tokenize everything once (padded to the overall longest), then run batches of similar length,
        # each cut back to its own longest text: padding costs as much as real tokens, so one 256-token
        # document in a batch of short ones would otherwise make the whole batch ~10x slower.
        enc = self._tokenizer.encode_batch([prefix + t for t in items])
        ids = np.array([e.ids for e in enc], dtype=np.int64)
        mask = np.array([e.attention_mask for e in enc], dtype=np.int64)
        lengths = mask.sum(axis=1)
        for batch in plan_batches(lengths.tolist(), self._batch_size):
            width = int(lengths[batch].max())
            out[batch] = self._forward(ids[batch, :width], mask[batch, :width])
        # Rows are unit length whatever the manifest says: the Embedder contract (and cosine = dot
        # product in the index) needs it. `normalize` stays in the manifest because it is part of the
        # model's identity (docs/embedders.md#the-model-digest).
        return l2_normalize(out)

    def engines(self) -> dict[str, str]:
        import onnxruntime
        import tokenizers

        return {
            "onnxruntime": onnxruntime.__version__,
            "tokenizers": tokenizers.__version__,
            "numpy": np.__version__,
        }


def plan_batches(
    lengths: list[int], batch_size: int, max_batch_tokens: int = 4096, free_padding: int = 32
) -> list[list[int]]:
    """Group item indices into batches of similar token length, longest first.

    A text joins the current batch while the batch has room (`batch_size` items, `max_batch_tokens`
    padded tokens, which bounds a worker's attention memory) and it is either short (everything padded
    to at most `free_padding` tokens costs little) or at least 3/4 of the batch's longest.
    """
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    batches: list[list[int]] = []
    for i in order:
        if batches:
            batch = batches[-1]
            longest = lengths[batch[0]]
            fits = len(batch) < batch_size and (len(batch) + 1) * longest <= max_batch_tokens
            similar = longest <= free_padding or 4 * lengths[i] >= 3 * longest
            if fits and similar:
                batch.append(i)
                continue
        batches.append([i])
    return batches
