"""Which spaces engram can embed for, and embedding documents for hosted writes that lack a vector.

`embed_missing` is the one embed-before-write step every door's writes go through (XRPC and MCP via
MemoryService, imports, the Sim and Memory Bank shims): vectors are computed before the store transaction
opens, so a write that fails to embed has changed nothing."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import replace

import numpy as np

from ..embed.hosted import for_model
from ..embed.text import document_text
from ..store import Embedding, MemoryWrite, Space
from ..store.reserved_tags import content_tags
from ..workers import WorkerPool
from .embed_batches import embed_batched

DOCUMENT_BATCH = 64  # texts per worker call: big enough to amortise ONNX overhead, small enough to interleave


def space_embedder(embedder, space: Space):
    """The loaded embedder that runs the space's model (same name, digest and dims; docs/internals.md#search),
    among the service's embedders (engram/embed/hosted.py), or None."""
    if space.config is None:
        return None
    active = space.config.active
    return for_model(embedder, active.model, active.digest, active.dims)


def hosts_model(embedder, space: Space) -> bool:
    """engram runs the space's model."""
    return space_embedder(embedder, space) is not None


async def embed_documents(
    embedder,
    pool: WorkerPool,
    space: Space,
    texts: Sequence[str],
    tags: Sequence[Sequence[str]],
    *,
    parallel: int = 1,
    progress: Callable[[int], None] | None = None,
) -> list[Embedding]:
    """Embed with the space's documentPrefix and the reference agents' text rule (24000-byte cut, Tags line).
    `progress(n)` after each round of worker calls, with the texts it embedded (a long document's bar).

    The space config's prefix is applied here; an `onnx:<dir>` manifest that also declares a prefix adds
    its own on top, so operators should declare a model's prefix in one place only (README)."""
    assert space.config is not None
    embedder = space_embedder(embedder, space) or embedder
    prefix = space.config.document_prefix
    # The shims' bookkeeping tags never reach the model: they file a memory, they do not describe it.
    prepared = [document_text(t, content_tags(tg), prefix) for t, tg in zip(texts, tags, strict=True)]
    # `parallel` worker calls at a time: 1 for writes that share the pool with searches (a search waits
    # behind at most one chunk); bulk imports pass the pool's size to use every worker.
    chunks = [prepared[start : start + DOCUMENT_BATCH] for start in range(0, len(prepared), DOCUMENT_BATCH)]
    vectors: list[np.ndarray] = []
    for start in range(0, len(chunks), max(1, parallel)):
        window = chunks[start : start + max(1, parallel)]
        # Each chunk joins the embeds other writes queued meanwhile (engram/service/embed_batches.py).
        if len(window) == 1:  # a single write's text: no gather around one call (a visible share of it)
            vectors.append(await embed_batched(pool, embedder, window[0]))
        else:
            vectors += await asyncio.gather(*(embed_batched(pool, embedder, c) for c in window))
        if progress:
            progress(sum(len(c) for c in window))
    rows = np.concatenate(vectors) if vectors else np.zeros((0, embedder.dims), np.float32)
    active = space.config.active
    return [Embedding(active.model, active.digest, active.dims, row.astype(np.float16)) for row in rows]


async def embed_missing(
    embedder,
    pool: WorkerPool,
    space: Space,
    writes: Sequence[MemoryWrite],
    *,
    parallel: int = 1,
    progress: Callable[[int], None] | None = None,
) -> list[MemoryWrite]:
    """`writes` with a vector of the space's model for each one that lacks it, when engram runs that model
    (`hosts_model`); otherwise unchanged (the store then keeps them unindexed, as sync does for foreign
    vectors). Each text is embedded with its own tags (`embed_documents`)."""
    out = list(writes)
    missing = [i for i, write in enumerate(out) if write.embedding is None]
    if not missing or not hosts_model(embedder, space):
        return out
    embeddings = await embed_documents(
        embedder,
        pool,
        space,
        [out[i].text for i in missing],
        [out[i].tags for i in missing],
        parallel=parallel,
        progress=progress,
    )
    for i, embedding in zip(missing, embeddings, strict=True):
        out[i] = replace(out[i], embedding=embedding)
    return out
