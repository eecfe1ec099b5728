"""garden.engram.recallMemories: engram's own ranking of one space for XRPC callers, with the filters,
supersession and explanations searchMemories' lexicon (shipped verbatim, engram/lexicons/) has no room for
(docs/protocol.md#recallmemories). The ranking is the one MCP recall, GPTBots and the console use
(engram/service/ranking.py); the auth is searchMemories' own (auth_modes.space_reader)."""

from __future__ import annotations

import math

from ....context import AppContext
from ....errors import InvalidInput
from ....search.vectors import similarity_permille
from ....service.filter_spec import parse_where
from ....service.hybrid import Scope, TextSearch
from ....service.ranking import RankedMemory
from ....views import memory_view
from ....xrpc.server import XrpcRequest, XrpcServer
from ...auth_modes import space_reader

NSID = "garden.engram.recallMemories"


def parse_min_confidence(raw: str | None) -> float | None:
    if raw is None:
        return None
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not 0.0 <= value <= 1.0:
        raise InvalidInput(f'Invalid parameter "minConfidence": {raw!r} is not a number in [0, 1]')
    return value


def hit_view(hit: RankedMemory) -> dict:
    """A hit in the lexicon's `#hit` shape: scores on searchMemories' 0-1000 scale (docs/protocol.md#similarity)."""
    view: dict = {
        "memory": memory_view(hit.memory),
        "score": similarity_permille(hit.score),
        "supersedes": [{"uri": r.uri, "basis": r.basis} for r in hit.supersedes],
    }
    if hit.replaced_by is not None:
        view["supersededBy"] = {"uri": hit.replaced_by.uri, "basis": hit.replaced_by.basis}
    why = hit.why
    assert why is not None  # EngramRanking.run explains every hit it returns (explain.finish)
    explained: dict = {
        "terms": [{"term": t, "score": similarity_permille(s)} for t, s in why.terms.items()],
        "confidence": similarity_permille(why.confidence),
    }
    if why.similarity is not None:
        explained["similarity"] = similarity_permille(why.similarity)
    if why.keyword is not None:
        explained["keyword"] = similarity_permille(why.keyword)
    if why.rule is not None:
        explained["rule"] = why.rule
    view["why"] = explained
    return view


def register(xrpc: XrpcServer, ctx: AppContext) -> None:
    async def handle(call: XrpcRequest) -> dict:
        b = call.input  # validated against the lexicon; input bodies get no defaults filled in
        search = TextSearch(
            b["q"], limit=b.get("limit", 10), author=b.get("author"), tags=tuple(b.get("tags", ())),
            since=b.get("since"), until=b.get("until"), tags_any=tuple(b.get("anyTags", ())),
            tags_none=tuple(b.get("excludeTags", ())), attrs=parse_where(b.get("where")),
            current=b.get("current", False), min_confidence=parse_min_confidence(b.get("minConfidence")),
        )  # fmt: skip
        ranking = await ctx.services.ranking.run([Scope(call.auth.space)], search, b.get("mode", "hybrid"))
        facts = ranking.facts
        out: dict = {
            "hits": [hit_view(h) for h in ranking.hits],
            "memories": facts.live,
            "allowed": facts.allowed,
            "droppedSuperseded": facts.dropped_superseded,
            "droppedBelowThreshold": facts.dropped_below_threshold,
        }
        if facts.empty is not None:
            out["empty"] = facts.empty
        return out

    xrpc.add(NSID, handle, auth=space_reader(ctx), space_scoped=True)
