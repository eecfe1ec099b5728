"""`LazyEmbedder`: a packaged model (the built-in MiniLM, the multilingual e5), loaded the first time
something is embedded.

Loading one (hashing the weights, building the session, a warm-up run) costs the CLI's local commands
~1 s of CPU per model, and most of them never embed: a re-import of unchanged lines finds them before
anything is embedded (engram/service/imports.py), listing, export and space commands embed nothing. Whether
engram hosts a space's model is decided from the model's identity (name, digest, dims), which for a
packaged model is a constant of its module (engram/embed/builtin.py, engram/embed/multilingual.py), so the
identity is known without loading anything. The server loads its embedders at start-up as before: a broken
model file must stop it there, not fail the first request.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from engram.embed import builtin, multilingual
from engram.embed.base import Embedder, EmbedderLoadError, Kind
from engram.embed.hosted import HostedEmbedders

# spec -> (the module whose constants are the model's identity, its loader, its backend's name)
PACKAGED: dict[str, tuple[Any, Callable[[], Embedder], str]] = {
    "builtin": (builtin, builtin.load_builtin, "onnx"),
    "multilingual": (
        multilingual,
        multilingual.load_multilingual,
        multilingual.MultilingualE5Embedder.backend,
    ),
}


class LazyEmbedder:
    def __init__(self, spec: str = "builtin") -> None:
        module, self._load, self.backend = PACKAGED[spec]
        self.name, self.digest, self.dims = module.NAME, module.DIGEST, module.DIMS
        self.max_tokens = module.MAX_TOKENS
        self.query_prefix = self.document_prefix = ""  # both engines add their own (their modules say why)
        self._loaded: Embedder | None = None
        self._lock = threading.Lock()  # several workers may embed first at once: one load

    @property
    def loaded(self) -> bool:
        return self._loaded is not None

    def _embedder(self) -> Embedder:
        with self._lock:
            if self._loaded is None:
                embedder = self._load()
                if (embedder.name, embedder.digest, embedder.dims) != (self.name, self.digest, self.dims):
                    raise EmbedderLoadError(
                        f"the packaged model {self.name} does not match its declared digest"
                    )
                self._loaded = embedder
            return self._loaded

    def embed(self, texts: Sequence[str], kind: Kind) -> np.ndarray:
        return self._embedder().embed(texts, kind)

    def manifest(self) -> dict[str, Any]:
        return self._embedder().manifest()

    def info(self) -> dict[str, Any]:
        return self._embedder().info()


def lazy_embedder(spec: str) -> LazyEmbedder | HostedEmbedders | None:
    """Lazy stand-ins for an `ENGRAM_EMBEDDER` value naming only packaged models (`builtin`,
    `builtin,multilingual`, ...); None when it names anything else (which then loads as usual)."""
    parts = [part.strip() for part in spec.split(",")]
    if not all(part in PACKAGED for part in parts) or len(set(parts)) != len(parts):
        return None
    embedders = [LazyEmbedder(part) for part in parts]
    return embedders[0] if len(embedders) == 1 else HostedEmbedders(embedders)
