"""The client side of a vector query: embed locally when the local embedder is the space's model, or read
a vector file; either way the wire form is base64url little-endian float16 (searchMemories' `vector`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import orjson

from ..embed import EmbedderError, load_embedder
from ..embed.text import query_text
from ..search.vectors import encode_query_vector
from .errors import CliError


@dataclass(frozen=True)
class QueryModel:
    model: str
    digest: str
    dims: int
    query_prefix: str = ""


def _could_be(spec: str, model: QueryModel) -> bool:
    """Cheap pre-check so a space of another model never pays for loading ONNX."""
    if spec.strip() == "multilingual":
        from ..embed.multilingual import DIMS, NAME

        return (model.model, model.dims) == (NAME, DIMS)
    if spec.strip() == "builtin":
        from ..embed.builtin import DIMS, NAME

        return (model.model, model.dims) == (NAME, DIMS)
    return spec.strip() != "none"


def local_query_vector(embedder_spec: str, model: QueryModel, text: str) -> str | None:
    """The query embedded by the first local embedder (ENGRAM_EMBEDDER, then the built-in one) whose name,
    digest and dims are the space's; None when none is, and the service should embed `q` itself."""
    specs = [part.strip() for part in embedder_spec.split(",")]  # each of a list (engram/embed/hosted.py)
    for spec in dict.fromkeys((*specs, "builtin")):
        if not _could_be(spec, model):
            continue
        try:
            embedder = load_embedder(spec)
        except EmbedderError:
            continue  # a local embedder we cannot load just means the service embeds the text
        if embedder is None or (embedder.name, embedder.digest, embedder.dims) != (
            model.model,
            model.digest,
            model.dims,
        ):
            continue
        vector = embedder.embed([query_text(text, model.query_prefix)], "query")[0]
        return encode_query_vector(vector)
    return None


def encode_vector_file(path: Path, dims: int) -> str:
    try:
        values = orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError) as exc:
        raise CliError(f"cannot read the vector file {path}: {exc}") from None
    if (
        not isinstance(values, list)
        or not values
        or not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)
    ):
        raise CliError(f"{path} must hold a JSON array of numbers")
    if len(values) != dims:
        raise CliError(f"{path} has {len(values)} numbers; the space's model has {dims} dimensions")
    return encode_query_vector(np.asarray(values, dtype=np.float32))
