"""`sentence-transformers:<dir>`: an optional backend for a local sentence-transformers model folder.

Needs the extra `pip install 'engram[st]'` (torch + sentence-transformers), imported lazily so the default
install never pays for torch. Only an existing local directory is accepted, and the hub is switched off
before the import, so a typo in the path can never turn into a download attempt.

The digest is computed from the folder's files and configs (weights, tokenizer, pooling, Normalize,
max_seq_length, prompts), not from torch, so it is the same on every engine version.
"""

from __future__ import annotations

import json
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
    ManifestEmbedder,
    check_embed_args,
    l2_normalize,
    manifest_digest,
    sha256_file,
)

_WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")
_INSTALL_HINT = "pip install 'engram[st]'"


def _read_json(path: Path, default: Any = None) -> Any:
    if not path.is_file():
        return default
    try:
        return json.loads(path.read_text("utf-8"))
    except (ValueError, UnicodeDecodeError) as e:
        raise EmbedderLoadError(f"{path} is not valid JSON: {e}") from e


def st_folder_manifest(directory: Path) -> dict[str, Any]:
    """The canonical manifest of a sentence-transformers folder, read from its files alone."""
    weights = next((directory / f for f in _WEIGHT_FILES if (directory / f).is_file()), None)
    if weights is None:
        raise EmbedderLoadError(f"{directory} has no {' or '.join(_WEIGHT_FILES)}")
    tokenizer = directory / "tokenizer.json"
    if not tokenizer.is_file():
        raise EmbedderLoadError(f"{directory} has no tokenizer.json")
    modules = _read_json(directory / "modules.json", [])
    types = {m.get("type", "").rsplit(".", 1)[-1]: m.get("path", "") for m in modules}
    if "Pooling" not in types:
        raise EmbedderLoadError(f"{directory}/modules.json declares no Pooling module")
    pooling_cfg = _read_json(directory / types["Pooling"] / "config.json", {})
    modes = [
        k.removeprefix("pooling_mode_")
        for k, v in pooling_cfg.items()
        if k.startswith("pooling_mode_") and v is True
    ]
    names = [{"mean_tokens": "mean", "cls_token": "cls"}.get(m, m) for m in modes]
    pooling = "+".join(names) or "none"
    st_cfg = _read_json(directory / "sentence_bert_config.json", {})
    prompts = (_read_json(directory / "config_sentence_transformers.json", {}) or {}).get("prompts") or {}
    return {
        "format": MANIFEST_FORMAT,
        "weights_sha256": sha256_file(weights),
        "tokenizer_sha256": sha256_file(tokenizer),
        "pooling": pooling,
        "normalize": "Normalize" in types,
        "max_tokens": st_cfg.get("max_seq_length", 512),
        "query_prefix": prompts.get("query", ""),
        "document_prefix": prompts.get("document", prompts.get("passage", "")),
        "dim": pooling_cfg.get("word_embedding_dimension"),
    }


class SentenceTransformersEmbedder(ManifestEmbedder):
    backend = "sentence-transformers"

    def __init__(self, directory: str | Path, threads: int = 1):
        d = Path(directory)
        if not str(directory) or not d.is_dir():
            raise EmbedderLoadError(
                f"sentence-transformers:<dir> needs an existing local directory, got {str(directory)!r} "
                "(model ids are refused: engram never downloads models)"
            )
        self._manifest = st_folder_manifest(d)
        # Set before the import: huggingface_hub reads these once, at import time.
        os.environ["HF_HUB_OFFLINE"] = "1"
        os.environ["TRANSFORMERS_OFFLINE"] = "1"
        try:
            import torch
            from sentence_transformers import SentenceTransformer
        except ImportError as e:
            raise EmbedderLoadError(
                "the sentence-transformers backend needs torch and sentence-transformers: "
                f"{_INSTALL_HINT} ({e})"
            ) from e
        torch.set_num_threads(threads)  # one thread per call; see engram/workers.py
        try:
            self._model = SentenceTransformer(str(d), device="cpu", local_files_only=True)
        except Exception as e:
            raise EmbedderLoadError(f"sentence-transformers cannot load {d}: {e}") from e
        self.name = d.name
        self.dims = int(self._model.get_sentence_embedding_dimension())
        self.max_tokens = int(self._model.max_seq_length)
        self.query_prefix = self._manifest["query_prefix"]
        self.document_prefix = self._manifest["document_prefix"]
        if self._manifest["dim"] is None:
            self._manifest["dim"] = self.dims
        self.digest = manifest_digest(self._manifest)
        self._versions = {"torch": torch.__version__, "sentence_transformers": _st_version()}
        # HF fast tokenizers raise "Already borrowed" when one instance is used from two threads at once,
        # so calls are serialised; run several workers only with the ONNX backend.
        self._lock = threading.Lock()

    def embed(self, texts: Sequence[str], kind: Kind) -> np.ndarray:
        items = check_embed_args(texts, kind)
        if not items:
            return np.zeros((0, self.dims), dtype=np.float32)
        prefix = self.query_prefix if kind == "query" else self.document_prefix
        with self._lock:
            # prompt="" stops sentence-transformers adding its default_prompt_name on top of our prefix.
            rows = self._model.encode(
                [prefix + t for t in items],
                prompt="",
                batch_size=32,
                convert_to_numpy=True,
                normalize_embeddings=True,
                show_progress_bar=False,
            )
        return l2_normalize(rows)

    def engines(self) -> dict[str, str]:
        return dict(self._versions)


def _st_version() -> str:
    import sentence_transformers

    return sentence_transformers.__version__
