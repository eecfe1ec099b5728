"""Embedding a caller's `q` for text search, with every gate DESIGN §5 "Text input" puts in front of it.

Order of checks: text search on at all → q short enough → the space has a model → engram runs that model
→ the authority is allowed → the authority's token bucket → a free embedding slot (no queue: excess is
turned away with 503 EmbedderBusy so a burst can never pile up ONNX work behind the search path).
The caller has already verified the reader's credential, so none of this runs for an anonymous request.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

import numpy as np

from ..embed.text import query_text, round_through_f16
from ..search.limits import ConcurrencyCaps, TokenBuckets
from ..store import Space
from ..xrpc.errors import ForbiddenError, InvalidRequestError, RateLimitExceededError, UnavailableError
from .embedding import hosts_model

if TYPE_CHECKING:
    from ..context import AppContext

MAX_QUERY_CHARS = 1000
EMBED_TIMEOUT_S = 10.0
_NODE = "node"  # the concurrency cap is per service, not per space


class TextQueries:
    def __init__(self, ctx: AppContext):
        self.ctx = ctx
        s = ctx.settings
        self.enabled = s.text_search and ctx.embedder is not None
        self.allowed = s.text_search_authorities
        self.buckets = TokenBuckets(s.text_search_rate, s.text_search_burst)
        self.slots = ConcurrencyCaps(s.embed_concurrency)

    async def embed(self, space: Space, q: str) -> np.ndarray:
        if not self.enabled:
            raise InvalidRequestError(
                "this service does not embed queries: send vector, model and modelDigest"
            )
        if len(q) > MAX_QUERY_CHARS:
            raise InvalidRequestError(
                f"q is {len(q)} characters; text search embeds at most {MAX_QUERY_CHARS}"
            )
        if space.config is None:
            raise InvalidRequestError("the space's authority has not declared an embedding model", "NoModel")
        if not hosts_model(self.ctx.embedder, space):
            active = space.config.active
            raise InvalidRequestError(
                f"this service does not run the space's model {active.model} ({active.digest}); "
                "embed the query yourself and send the vector",
                "ModelNotHosted",
            )
        if self.allowed and space.authority not in self.allowed:
            raise ForbiddenError(
                f"this service does not embed queries for spaces of {space.authority}", "TextSearchNotAllowed"
            )
        decision = self.buckets.take(space.authority)
        if not decision.allowed:
            raise RateLimitExceededError(
                "too many text searches for this space's authority; retry later", headers=decision.headers()
            )
        if not self.slots.try_enter(_NODE):
            raise UnavailableError(
                "too many queries are being embedded; retry shortly",
                "EmbedderBusy",
                headers={"Retry-After": "1"},
            )
        try:
            text = query_text(q, space.config.query_prefix)
            embed = self.ctx.pool.run(self.ctx.embedder.embed, [text], "query")
            vectors = await asyncio.wait_for(embed, EMBED_TIMEOUT_S)
        finally:
            self.slots.leave(_NODE)
        # Round through float16 and re-normalise exactly as a caller's vector is decoded, so a text search
        # and a vector search of the same query answer identically (similarities included).
        rounded = round_through_f16(vectors[0])
        return rounded / np.float32(np.linalg.norm(rounded))
