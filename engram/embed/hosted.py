"""Several embedders in one service (`ENGRAM_EMBEDDER=builtin,multilingual`): a space picks its model.

Each space declares one model (name, digest, dims); engram embeds for it when one of the loaded embedders
is exactly that model (`for_space`). The first embedder listed is the default: a new hosted space gets its
model unless another is named (`engram space create --model <name>`), and it answers for the whole set
wherever one embedder is shown (describeService, `engram model info`). docs/embedders.md#several-models.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from engram.embed.base import Embedder, EmbedderLoadError, Kind


class HostedEmbedders:
    def __init__(self, embedders: Sequence[Embedder]):
        if not embedders:
            raise EmbedderLoadError("no embedder given")
        names = [e.name for e in embedders]
        if len(set(names)) != len(names):
            raise EmbedderLoadError(f"each model may be listed once, got {', '.join(names)}")
        self.all = tuple(embedders)
        self.default = embedders[0]
        d = self.default
        self.name, self.dims, self.digest = d.name, d.dims, d.digest
        self.max_tokens, self.query_prefix, self.document_prefix = (
            d.max_tokens,
            d.query_prefix,
            d.document_prefix,
        )

    def embed(self, texts: Sequence[str], kind: Kind) -> np.ndarray:
        return self.default.embed(texts, kind)

    def manifest(self) -> dict[str, Any]:
        return self.default.manifest()

    def info(self) -> dict[str, Any]:
        return self.default.info() | {"also": [e.info() for e in self.all[1:]]}

    def named(self, name: str) -> Embedder | None:
        return next((e for e in self.all if e.name == name), None)


def members(embedder: Embedder | HostedEmbedders | None) -> tuple[Embedder, ...]:
    """Every embedder a configured embedder stands for (one, or each of a HostedEmbedders)."""
    if embedder is None:
        return ()
    return embedder.all if isinstance(embedder, HostedEmbedders) else (embedder,)


def for_model(
    embedder: Embedder | HostedEmbedders | None, name: str, digest: str, dims: int
) -> Embedder | None:
    """The loaded embedder that is exactly this model (same name, digest and dims), if any."""
    return next((e for e in members(embedder) if (e.name, e.digest, e.dims) == (name, digest, dims)), None)
