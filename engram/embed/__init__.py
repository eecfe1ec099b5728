"""Embedding models: the `Embedder` protocol and its backends (see registry.load_embedder)."""

from engram.embed.base import Embedder, EmbedderError, EmbedderLoadError
from engram.embed.registry import load_embedder

__all__ = ["Embedder", "EmbedderError", "EmbedderLoadError", "load_embedder"]
