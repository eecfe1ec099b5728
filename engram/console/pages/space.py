"""One space: text search with the hosted model (tags/author/since filters) and the newest-first list."""

from __future__ import annotations

from aiohttp import web

from ...errors import EngramError
from ...service.hybrid import Scope, TextSearch
from ...service.overview import space_overview
from ..access import require_space, viewer_key
from ..render import render
from ..state import console_state_key
from . import forms

PAGE_SIZE = 25
SEARCH_LIMITS = (10, 25, 50)


async def space_page(request: web.Request) -> web.StreamResponse:
    ctx = request.app[console_state_key].ctx
    params = request.query
    space = await require_space(ctx, request[viewer_key], params.get("space"))
    q = forms.text(params, "q")
    filters = {
        "author": forms.text(params, "author", 200) or None,
        "tags": forms.tags(params),
        "since": forms.since(params),
    }
    limit = forms.integer(params, "limit", SEARCH_LIMITS[0], 1, max(SEARCH_LIMITS))
    narrow = {
        "until": forms.until(params),
        "tags_any": forms.tags(params, "any_tags"),
        "tags_none": forms.tags(params, "exclude_tags"),
        "current": params.get("current") == "1",
    }
    hits, search_error, empty = None, None, None
    if q:
        try:
            # engram's one ranking pipeline, as MCP recall and GPTBots get it (engram/service/ranking.py);
            # the bar shows the fused score on the 0-1000 scale searchMemories uses for similarity
            search = TextSearch(q, limit=limit, author=filters["author"], tags=filters["tags"],
                                since=filters["since"], **narrow)  # fmt: skip
            ranking = await ctx.services.ranking.run([Scope(space)], search, "hybrid")
            # each hit with its supersession and "why" line (engram/service/explain.py)
            hits = [(h.memory, round(h.score * 1000), h) for h in ranking.hits]
            empty = ranking.facts.empty
        except EngramError as err:  # shown next to the search box; the rest of the page still renders
            if err.kind not in ("invalid", "forbidden", "rate_limited", "unavailable"):
                raise
            search_error = err
    listing, cursor = await ctx.services.memories.list(
        space.uri, limit=PAGE_SIZE, cursor=forms.text(params, "cursor", 200) or None, **filters
    )
    return render(request, "space.html", {
        "overview": await space_overview(ctx.services.spaces, ctx.index, space),
        "q": q, "limit": limit, "limits": SEARCH_LIMITS,
        "author": filters["author"] or "", "tags": forms.split_for_links(filters["tags"])[0],
        "exact_tags": forms.split_for_links(filters["tags"])[1],
        "since": forms.text(params, "since", 64),
        "hits": hits, "search_error": search_error, "empty": empty,
        "until": forms.text(params, "until", 64), "any_tags": ", ".join(narrow["tags_any"]),
        "exclude_tags": ", ".join(narrow["tags_none"]), "current": narrow["current"],
        "listing": listing, "next_cursor": cursor, "paged": bool(params.get("cursor")),
    })  # fmt: skip
