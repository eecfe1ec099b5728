"""Turn a configuration string (ENGRAM_EMBEDDER) into an embedder.

builtin                        all-MiniLM-L6-v2 int8 ONNX shipped with engram (the default)
onnx:<dir>                     model.onnx + tokenizer.json + embedder.json in a local folder
sentence-transformers:<dir>    a local sentence-transformers folder (needs engram[st])
hashing[:<dims>]               deterministic bag-of-words vectors, for tests (default 256 dims)
none                           text search disabled: returns None
"""

from __future__ import annotations

from engram.embed.base import Embedder, EmbedderLoadError

SPEC_FORMS = "builtin, onnx:<dir>, sentence-transformers:<dir>, hashing[:<dims>], none"


def load_embedder(spec: str) -> Embedder | None:
    if not isinstance(spec, str):
        raise EmbedderLoadError(f"embedder spec must be a string, got {type(spec).__name__}")
    kind, sep, arg = spec.strip().partition(":")
    if kind == "none" and not sep:
        return None
    if kind == "builtin" and not sep:
        from engram.embed.builtin import load_builtin

        return load_builtin()
    if kind == "hashing":
        from engram.embed.hashing import DEFAULT_DIMS, HashingEmbedder

        if sep and not arg.isdigit():
            raise EmbedderLoadError(f"hashing:<dims> needs a positive integer, got {arg!r}")
        try:
            return HashingEmbedder(int(arg) if sep else DEFAULT_DIMS)
        except ValueError as e:
            raise EmbedderLoadError(str(e)) from e
    if kind in ("onnx", "sentence-transformers") and sep:
        if not arg:
            raise EmbedderLoadError(f"{kind}:<dir> needs a directory")
        if kind == "onnx":
            from engram.embed.onnx_dir import load_onnx_dir

            return load_onnx_dir(arg)
        from engram.embed.sentence_transformers import SentenceTransformersEmbedder

        return SentenceTransformersEmbedder(arg)
    raise EmbedderLoadError(f"unknown embedder spec {spec!r}; expected one of: {SPEC_FORMS}")
