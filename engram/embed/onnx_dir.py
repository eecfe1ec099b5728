"""`onnx:<dir>`: an operator-supplied ONNX model folder.

The folder holds `model.onnx`, `tokenizer.json` and an `embedder.json` manifest, e.g.

    {"name": "bge-small-en-v1.5", "dims": 384, "pooling": "cls", "normalize": true, "max_tokens": 512,
     "query_prefix": "Represent this sentence for searching relevant passages: ", "document_prefix": ""}

Optional keys: "output" (graph output name, default the first), "weights_sha256" / "tokenizer_sha256"
(pin the files; a mismatch refuses to load). File hashes are always computed at load for the digest.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from engram.embed.base import EmbedderLoadError
from engram.embed.onnx import OnnxEmbedder, OnnxSpec

MANIFEST_FILE = "embedder.json"
_TYPES: dict[str, type | tuple[type, ...]] = {
    "name": str,
    "dims": int,
    "pooling": str,
    "normalize": bool,
    "max_tokens": int,
    "query_prefix": str,
    "document_prefix": str,
    "output": str,
    "weights_sha256": str,
    "tokenizer_sha256": str,
}
_REQUIRED = ("name", "dims")


def read_manifest(directory: Path) -> dict[str, Any]:
    path = directory / MANIFEST_FILE
    if not path.is_file():
        raise EmbedderLoadError(f"{path} not found: an onnx:<dir> folder needs {MANIFEST_FILE}")
    try:
        raw = json.loads(path.read_text("utf-8"))
    except (ValueError, UnicodeDecodeError) as e:
        raise EmbedderLoadError(f"{path} is not valid JSON: {e}") from e
    if not isinstance(raw, dict):
        raise EmbedderLoadError(f"{path} must hold a JSON object")
    if "dim" in raw and "dims" not in raw:  # embedders.md spells it "dim"; accept both spellings
        raw["dims"] = raw.pop("dim")
    # Unknown keys are refused rather than ignored: a typo like "poling" would otherwise silently
    # change the vectors' meaning (mean instead of cls) without changing anything visible.
    unknown = sorted(set(raw) - set(_TYPES))
    if unknown:
        raise EmbedderLoadError(f"{path}: unknown keys {unknown}; allowed: {sorted(_TYPES)}")
    for key in _REQUIRED:
        if key not in raw:
            raise EmbedderLoadError(f"{path}: missing required key {key!r}")
    for key, value in raw.items():
        want = _TYPES[key]
        # bool is a subclass of int in Python; `"dims": true` must not pass as 1.
        if not isinstance(value, want) or (want is int and isinstance(value, bool)):
            raise EmbedderLoadError(f"{path}: {key!r} must be {getattr(want, '__name__', want)}")
    return raw


def load_onnx_dir(directory: str | Path) -> OnnxEmbedder:
    d = Path(directory)
    if not d.is_dir():
        raise EmbedderLoadError(f"onnx:<dir> needs an existing local directory, got {str(directory)!r}")
    m = read_manifest(d)
    spec = OnnxSpec(
        name=m["name"],
        model_path=d / "model.onnx",
        tokenizer_path=d / "tokenizer.json",
        dims=m["dims"],
        pooling=m.get("pooling", "mean"),
        normalize=m.get("normalize", True),
        max_tokens=m.get("max_tokens", 256),
        query_prefix=m.get("query_prefix", ""),
        document_prefix=m.get("document_prefix", ""),
        output_name=m.get("output"),
        expected_weights_sha256=m.get("weights_sha256"),
        expected_tokenizer_sha256=m.get("tokenizer_sha256"),
    )
    return OnnxEmbedder(spec)
