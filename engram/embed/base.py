"""The `Embedder` protocol every backend implements, plus the pieces they share.

An embedder turns texts into L2-normalised float32 rows. `embed` is synchronous and CPU-bound: callers run
it in the shared `engram.workers.WorkerPool`, never on the event loop, and several workers may call the
same instance at once, so implementations must be thread-safe.

`digest` identifies what determines the vectors (weights, tokenizer, pooling, prefixes, dims), not how the
model happens to be packaged (docs/embedders.md#the-model-digest). Engine
versions are diagnostics in `info()`, never part of the digest.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

import numpy as np

Kind = Literal["query", "document"]
KINDS: tuple[str, ...] = ("query", "document")
MANIFEST_FORMAT = "embedder-manifest/1"


class EmbedderError(Exception):
    """Base class for embedder problems (configuration, loading, bad input)."""


class EmbedderLoadError(EmbedderError):
    """The embedder could not be loaded: missing file, hash mismatch, bad manifest, missing package."""


@runtime_checkable
class Embedder(Protocol):
    name: str
    dims: int
    digest: str  # "sha256:<hex>" of the canonical manifest
    max_tokens: int
    query_prefix: str
    document_prefix: str

    def embed(self, texts: Sequence[str], kind: Kind) -> np.ndarray:
        """float32 [len(texts), dims], every row L2-normalised. The embedder adds its own per-kind prefix."""
        ...

    def manifest(self) -> dict[str, Any]:
        """The canonical manifest the digest is computed from."""
        ...

    def info(self) -> dict[str, Any]:
        """name, digest, dims, max_tokens, backend, plus engine versions as diagnostics."""
        ...


class ManifestEmbedder:
    """What every built-in backend shares: `manifest()` from the manifest it built when it loaded (what its
    digest is computed from), and `info()` from its identity plus `engines()`, the versions of what computes
    its vectors (diagnostics only)."""

    name: str
    dims: int
    digest: str
    max_tokens: int
    backend: str
    _manifest: dict[str, Any]

    def manifest(self) -> dict[str, Any]:
        return dict(self._manifest)

    def engines(self) -> dict[str, str]:
        raise NotImplementedError

    def info(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "digest": self.digest,
            "dims": self.dims,
            "max_tokens": self.max_tokens,
            "backend": self.backend,
            "engines": self.engines(),
        }


def sha256_file(path: Path) -> str:
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def manifest_digest(manifest: dict[str, Any]) -> str:
    """sha256 over the canonical JSON serialisation (sorted keys, no whitespace)."""
    canonical = json.dumps(manifest, sort_keys=True, separators=(",", ":"))
    return "sha256:" + hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def check_embed_args(texts: Sequence[str], kind: str) -> list[str]:
    """Validate `embed` arguments so bad input gives a clear error rather than a crash deep in an engine."""
    if kind not in KINDS:
        raise ValueError(f"kind must be 'query' or 'document', got {kind!r}")
    if isinstance(texts, (str, bytes)):
        # A bare string is a sequence of characters: embedding each letter is never what the caller meant.
        raise TypeError("texts must be a sequence of strings, not a single string")
    out = list(texts)
    for i, t in enumerate(out):
        if not isinstance(t, str):
            raise TypeError(f"texts[{i}] is {type(t).__name__}, expected str")
    return out


def l2_normalize(rows: np.ndarray) -> np.ndarray:
    rows = np.asarray(rows, dtype=np.float32)
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    return (rows / np.maximum(norms, 1e-12)).astype(np.float32, copy=False)
