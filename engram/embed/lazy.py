"""`LazyEmbedder`: the built-in embedder, loaded the first time something is embedded.

Loading it (hashing the weights, building the ONNX session, a warm-up run) costs the CLI's local commands
~1 s of CPU, and most of them never embed: a re-import of unchanged lines finds them before anything is
embedded (engram/service/imports.py), listing, export and space commands embed nothing. Whether engram
hosts a space's model is decided from the model's identity (name, digest, dims), which for the built-in
model is a constant (engram/embed/builtin.py), so the identity is known without loading anything. The
server loads its embedder at start-up as before: a broken model file must stop it there, not fail the
first request.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from engram.embed import builtin
from engram.embed.base import Embedder, EmbedderLoadError, Kind


class LazyEmbedder:
    backend = "onnx"

    def __init__(self) -> None:
        self.name, self.digest, self.dims = builtin.NAME, builtin.DIGEST, builtin.DIMS
        self.max_tokens = builtin.MAX_TOKENS
        self.query_prefix = self.document_prefix = ""
        self._loaded: Embedder | None = None
        self._lock = threading.Lock()  # several workers may embed first at once: one load

    @property
    def loaded(self) -> bool:
        return self._loaded is not None

    def _embedder(self) -> Embedder:
        with self._lock:
            if self._loaded is None:
                embedder = builtin.load_builtin()
                if (embedder.name, embedder.digest, embedder.dims) != (self.name, self.digest, self.dims):
                    raise EmbedderLoadError("the built-in model does not match its declared digest")
                self._loaded = embedder
            return self._loaded

    def embed(self, texts: Sequence[str], kind: Kind) -> np.ndarray:
        return self._embedder().embed(texts, kind)

    def manifest(self) -> dict[str, Any]:
        return self._embedder().manifest()

    def info(self) -> dict[str, Any]:
        return self._embedder().info()
