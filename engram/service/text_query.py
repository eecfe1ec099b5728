"""Embedding a caller's `q` for text search, with every gate in front of it
(docs/internals.md#search, "Text input").

Order of checks: text search on at all → q short enough → the space has a model → engram runs that model
→ the authority is allowed → an embedding slot (`ENGRAM_EMBED_CONCURRENCY`; beyond it a query waits its
turn, round-robin over callers, at most `ENGRAM_EMBED_QUEUE` waiting and each `ENGRAM_EMBED_WAIT_MS`,
then 503 EmbedderBusy, so a burst never piles unbounded ONNX work behind the search path and one caller's
flood cannot hold back another's query) → the token bucket of whoever pays (`budget.py`: the API key of an
MCP call, else the space's authority, or the space itself for spaces hosted under engram's own DID). The
slot comes first so that a query turned away busy spends no token.
The caller has already verified the reader's credential, so none of this runs for an anonymous request.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

import numpy as np

from ..embed.text import query_text, round_through_f16
from ..errors import InvalidInput, NotAllowed, RateLimited, Unavailable
from ..search.limits import FairSlots, QueueFull, TokenBuckets
from ..store import Space
from .budget import payer
from .embedding import hosts_model, space_embedder

if TYPE_CHECKING:
    from ..config import Settings
    from ..embed.base import Embedder
    from ..workers import WorkerPool

MAX_QUERY_CHARS = 1000
KEY_REFUSAL = "too many text searches for this API key; retry later"
EMBED_TIMEOUT_S = 10.0


class TextQueries:
    def __init__(self, settings: Settings, embedder: Embedder | None, pool: WorkerPool):
        self.embedder = embedder
        self.pool = pool
        s = settings
        self.enabled = s.text_search and embedder is not None
        self.allowed = s.text_search_authorities
        self.buckets = TokenBuckets(s.text_search_rate, s.text_search_burst)
        self.key_buckets = TokenBuckets(s.key_text_search_rate, s.key_text_search_burst)
        self.slots = FairSlots(s.embed_concurrency, s.embed_queue, s.embed_wait_ms / 1000)
        self.service_did = s.service_did

    def bucket_key(self, space: Space) -> str:
        """Whose text budget a query spends: the space's authority, except for spaces engram hosts under
        its own DID, which all share that authority but belong to different owners: each has its own."""
        return space.uri if space.authority == self.service_did else space.authority

    def key_refusal(self, key: str) -> RateLimited | None:
        """The refusal a text search paid by `key` (an API key's `key:<id>`) would get now, when its
        budget is spent; None when it has a token left. Spends nothing (engram/mcp/refusal.py)."""
        decision = self.key_buckets.peek(key) if self.enabled else None
        return None if decision is None else decision.refusal(KEY_REFUSAL)

    async def embed(self, space: Space, q: str) -> np.ndarray:
        if not self.enabled:
            raise InvalidInput("this service does not embed queries: send vector, model and modelDigest")
        if len(q) > MAX_QUERY_CHARS:
            raise InvalidInput(f"q is {len(q)} characters; text search embeds at most {MAX_QUERY_CHARS}")
        if space.config is None:
            raise InvalidInput("the space's authority has not declared an embedding model", "NoModel")
        if not hosts_model(self.embedder, space):
            active = space.config.active
            raise InvalidInput(
                f"this service does not run the space's model {active.model} ({active.digest}); "
                "embed the query yourself and send the vector",
                "ModelNotHosted",
            )
        if self.allowed and space.authority not in self.allowed:
            raise NotAllowed(
                f"this service does not embed queries for spaces of {space.authority}", "TextSearchNotAllowed"
            )
        # The slot before the token: a query turned away as EmbedderBusy must not spend its budget.
        key = payer.get()
        try:
            await self.slots.enter(key or self.bucket_key(space))
        except QueueFull:
            raise Unavailable(
                "too many queries are being embedded; retry shortly", "EmbedderBusy", retry_after=1
            ) from None
        try:
            if key is None:
                decision = self.buckets.take(self.bucket_key(space))
                if not decision.allowed:
                    raise decision.refusal("too many text searches for this space's authority; retry later")
            else:
                decision = self.key_buckets.take(key)
                if not decision.allowed:
                    raise decision.refusal(KEY_REFUSAL)
            return (await embed_query_vectors(self.pool, self.embedder, space, [q], EMBED_TIMEOUT_S))[0]
        finally:
            self.slots.leave()


async def embed_query_vectors(
    pool: WorkerPool, embedder: Embedder, space: Space, texts: list[str], timeout_s: float
) -> np.ndarray:
    """Query vectors for `texts` with the space's query prefix, off the loop, within `timeout_s` (503
    EmbedderBusy past it). Each is rounded through float16 and re-normalised exactly as a caller's vector is
    decoded, so a text search and a vector search of the same query answer identically."""
    assert space.config is not None
    embedder = space_embedder(embedder, space) or embedder
    prepared = [query_text(text, space.config.query_prefix) for text in texts]
    try:
        vectors = await asyncio.wait_for(pool.run(embedder.embed, prepared, "query"), timeout_s)
    except TimeoutError:
        raise Unavailable(
            "embedding the query took too long; retry shortly", "EmbedderBusy", retry_after=1
        ) from None
    rounded = np.stack([round_through_f16(v) for v in vectors])
    return rounded / np.linalg.norm(rounded, axis=1, keepdims=True).astype(np.float32)
