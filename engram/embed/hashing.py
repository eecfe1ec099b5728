"""`hashing[:<dims>]`: a deterministic bag-of-words embedder for tests and for running without a model.

Each lower-cased word is hashed (blake2b) to a bucket and a sign; counts are summed and the row is
L2-normalised. Texts sharing words get a positive cosine, so search tests can reason about rankings
without loading a neural model. No files, no randomness, same vectors on every machine.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

import numpy as np

from engram.embed.base import (
    MANIFEST_FORMAT,
    Kind,
    ManifestEmbedder,
    check_embed_args,
    l2_normalize,
    manifest_digest,
)

DEFAULT_DIMS = 256
MIN_DIMS, MAX_DIMS = 8, 4096
_WORD = re.compile(r"\w+")
# An empty text has no words; giving it a fixed token keeps its row unit-length as the contract demands.
_EMPTY_TOKEN = "\x00empty"


class HashingEmbedder(ManifestEmbedder):
    backend = "hashing"
    max_tokens = 1_000_000  # no model window; the text rule's 24000-byte cut is the only limit

    def __init__(self, dims: int = DEFAULT_DIMS, query_prefix: str = "", document_prefix: str = ""):
        if isinstance(dims, bool) or not isinstance(dims, int) or not MIN_DIMS <= dims <= MAX_DIMS:
            raise ValueError(f"hashing dims must be an integer in [{MIN_DIMS}, {MAX_DIMS}], got {dims!r}")
        self.dims = dims
        self.name = f"hashing-{dims}"
        self.query_prefix = query_prefix
        self.document_prefix = document_prefix
        self._manifest = {
            "format": MANIFEST_FORMAT,
            "hashing": "blake2b-8/lower-words/signed-counts",
            "normalize": True,
            "query_prefix": query_prefix,
            "document_prefix": document_prefix,
            "dim": dims,
        }
        self.digest = manifest_digest(self._manifest)

    def _row(self, text: str) -> np.ndarray:
        row = np.zeros(self.dims, dtype=np.float32)
        for word in _WORD.findall(text.lower()) or [_EMPTY_TOKEN]:
            h = hashlib.blake2b(word.encode("utf-8"), digest_size=8).digest()
            bucket = int.from_bytes(h[:4], "little") % self.dims
            row[bucket] += 1.0 if h[4] & 1 else -1.0
        if not row.any():  # words cancelled each other out exactly; rare but must still be unit length
            row[0] = 1.0
        return row

    def embed(self, texts: Sequence[str], kind: Kind) -> np.ndarray:
        items = check_embed_args(texts, kind)
        prefix = self.query_prefix if kind == "query" else self.document_prefix
        rows = np.zeros((len(items), self.dims), dtype=np.float32)
        for i, text in enumerate(items):
            rows[i] = self._row(prefix + text)
        return l2_normalize(rows)

    def engines(self) -> dict[str, str]:
        return {"numpy": np.__version__}
